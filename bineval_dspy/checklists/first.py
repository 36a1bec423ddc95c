"""A task's first checklist, as ``bineval checklist`` writes it: the writer's questions through the screen, with
the task's own checkable constraints attached as code questions and unrelated questions left out. An LM that gives
nothing usable is a ``RunError``, and the replies that led there are forgotten by the cache: a rerun asks again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bineval_dspy.checklists.base import ChecklistWriter
from bineval_dspy.checklists.screen import Screened
from bineval_dspy.core.errors import InputError, RunError, one_line
from bineval_dspy.core.schema import Checklist
from bineval_dspy.lm.usage import Cost


@dataclass
class Written:
    """The screened checklist, what writing it cost, and each failed attempt's reason (attempt number, error)."""

    screened: Screened
    cost: Cost
    failures: list[tuple[int, RunError]] = field(default_factory=list)


def write_checklist(writer: ChecklistWriter, task: str, dimensions: list[str]) -> Checklist:
    """The writer's checklist; an LM that gives nothing usable is one ``RunError``, its replies not replayed."""
    from bineval_dspy.lm.cache import reply_journal

    with reply_journal() as journal:
        try:
            return writer(task=task, dimensions=dimensions)
        except InputError:
            raise
        except RunError:
            journal.forget()
            raise
        except Exception as exc:
            journal.forget()
            raise RunError(f"checklist: the LM gave no usable checklist ({one_line(exc)})") from None


def write_attempt(
    writer: ChecklistWriter, task: str, dims: list[str], lm: Any, attempt: int, failures: list[tuple[int, RunError]]
) -> Checklist | None:
    """One writer attempt: the first as configured, a retry as a new sample (raised temperature, its own cache
    entry). An LM that gives nothing usable leaves that attempt empty (its reason kept in ``failures``), so the
    screen's bounded retries also cover an unparseable answer."""
    import dspy

    from bineval_dspy.checklists.screen import RETRY_TEMPERATURE

    temperature = max(float(lm.kwargs.get("temperature") or 0.0), RETRY_TEMPERATURE)
    try:
        if attempt == 0:
            return write_checklist(writer, task, dims)
        with dspy.context(lm=lm.copy(rollout_id=attempt, temperature=temperature)):
            return write_checklist(writer, task, dims)
    except RunError as exc:
        failures.append((attempt, exc))
        return None


def first_checklist(writer: ChecklistWriter, task: str, dimensions: list[str], lm: Any) -> Written:
    """The task's checklist on ``lm``: written, screened (retried while questions fail it), its stated constraints
    attached as code questions, unrelated questions left out (each said in ``screened.dropped``)."""
    from bineval_dspy.checklists.relevance import Relevance
    from bineval_dspy.checklists.screen import promised_minimum, with_constraints
    from bineval_dspy.checklists.stated import stated_constraints
    from bineval_dspy.lm.usage import measured

    minimum = promised_minimum(writer, dimensions)
    failures: list[tuple[int, RunError]] = []
    constraints = stated_constraints(task)  # what the task states that code checks exactly, whatever the LM writes
    relevance = Relevance(task)
    write = lambda attempt: write_attempt(writer, task, dimensions, lm, attempt, failures)  # noqa: E731
    screened, cost = measured(lambda: with_constraints(write, task, dimensions, minimum, relevance, constraints))
    return Written(screened, cost, failures)
