"""What an arm's steered decoding did on test, as ``bineval generate`` reports it (``programs.records.EnforcementSummary``):
rows steered, rows with no constraint found, constraints enforced and held, conflicts and unenforceable ones. An
enforce arm that enforced nothing decoded as its program would without steering, so its difference from the
baseline is no measure of steering: the table and stderr say so in one line."""

from __future__ import annotations

import dspy

from bineval_dspy.optimize.feedback import Evaluation
from bineval_dspy.programs.generator import Generator, enforcement_of
from bineval_dspy.programs.records import EnforcementSummary
from bineval_dspy.suites.rows import SuiteRow


def steering_generator(program: dspy.Module) -> Generator | None:
    """The generator of ``program`` that decodes under constraints (itself, or the one a STICK arm samples), if any."""
    inner = program if isinstance(program, Generator) else getattr(program, "program", None)
    return inner if isinstance(inner, Generator) and inner.enforce is not None else None


def enforcement_on_test(program: dspy.Module, evaluation: Evaluation, rows: dict[str, SuiteRow] | None) -> EnforcementSummary | None:
    """The enforcement summary of ``program``'s test outputs (a failed output counts nowhere, as in ``verify``), each
    enforced constraint checked by code on the output; None for a program that does not steer."""
    generator = steering_generator(program)
    if generator is None or rows is None:
        return None
    records = [enforcement_of(generator.plan(rows[item.id].prompt), rows[item.id].prompt, item.output) for item in evaluation.items if item.output is not None]
    return EnforcementSummary.of([record for record in records if record is not None])


def nothing_enforced(name: str, summary: EnforcementSummary) -> str:
    """The one line for an enforce arm that enforced no constraint on any test prompt."""
    return (
        f"arm {name}: enforced nothing on its {summary.rows} test output(s) ({summary.no_constraint} with no constraint found, "
        f"{summary.conflicts + summary.unenforceable + summary.invalid} not enforceable): its figures are those of plain decoding"
    )


def enforcement_lines(arms: list[tuple[str, EnforcementSummary | None]]) -> list[str]:
    """The results table's lines on steered decoding: one per enforce arm."""
    steered = [(name, summary) for name, summary in arms if summary is not None]
    if not steered:
        return []
    lines = ["", "Steered decoding on test (constraints held: checked by code on each output):"]
    for name, summary in steered:
        lines.append(f"- {nothing_enforced(name, summary)}" if summary.nothing else f"- {name}: {summary.text()}")
    return lines
