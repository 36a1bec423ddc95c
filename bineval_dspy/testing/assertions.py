"""``assert_passes``: judge one output in a test and fail with what it missed, like any other assertion.

A test names what the output must satisfy: a checklist (judged by the LM in the DSPy context, questions naming a
verifier answered by code) or a suite row (its instructions checked by their code verifiers, no LM). The
failure message lists each failed or unanswered question with its explanation, so a red test says why; an
unanswered question fails the test (never a pass by default).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from bineval_dspy.core.errors import BinevalError, InputError
from bineval_dspy.core.schema import Checklist, Question, Scorecard, Verdict

if TYPE_CHECKING:
    import dspy

    from bineval_dspy.verifiers import Mode


class BinevalAssertionError(BinevalError, AssertionError):
    """An output failed questions of its checklist; ``scorecard`` holds every verdict."""

    def __init__(self, message: str, scorecard: Scorecard) -> None:
        super().__init__(message)
        self.scorecard = scorecard


def _missed(question: Question, verdict: Verdict) -> bool:
    """Failed or unanswered: 'no' to a requirement, 'yes' to a penalized flaw, or no answer at all."""
    return verdict.answer == "unanswered" or verdict.answer == ("yes" if question.weight < 0 else "no")


def _checklist_of(checklist: Checklist | str | Path | None, row: Any) -> tuple[Checklist, str | None]:
    """The checklist to judge with, and the row's prompt (the input) when a suite row gave it."""
    from bineval_dspy.core.jsonio import load_model

    if (checklist is None) == (row is None):
        raise ValueError("assert_passes: give checklist= or row=, exactly one")
    if checklist is not None:
        return (checklist if isinstance(checklist, Checklist) else load_model(Path(checklist), Checklist)), None
    from bineval_dspy.checklists.hybrid import hybrid_checklist
    from bineval_dspy.suites.rows import SuiteRow

    suite_row = row if isinstance(row, SuiteRow) else SuiteRow.model_validate(row)
    return hybrid_checklist(suite_row, n_llm_questions=(0, 0)), suite_row.prompt


def failure_message(checklist: Checklist, card: Scorecard) -> str:
    """One line per missed question: dimension, question, answer and the judge's explanation."""
    from bineval_dspy.core.scoring import join

    missed = [(q, v) for q, v in join(checklist, card.verdicts) if _missed(q, v)]
    lines = [f"output missed {len(missed)} of {len(checklist.questions)} question(s) (score {card.overall if card.overall is not None else 'n/a'}):"]
    for q, v in missed:
        why = f" - {v.explanation}" if v.explanation else ""
        lines.append(f"  [{q.dimension}] {q.text} -> {v.answer} (by {v.judge}){why}")
    return "\n".join(lines)


def assert_passes(
    output: str,
    *,
    checklist: Checklist | str | Path | None = None,
    row: Any = None,
    input: str = "",
    lm: dspy.LM | None = None,
    mode: Mode = "strict",
    min_score: float | None = None,
    judge: Any = None,
) -> Scorecard:
    """Judge ``output`` against ``checklist`` (a ``Checklist`` or its JSON file) or a suite ``row`` (its code
    verifiers; ``input`` defaults to its prompt) and return the scorecard; raise ``BinevalAssertionError`` naming
    every failed or unanswered question. ``lm`` (else the DSPy context's) answers questions code cannot.
    ``min_score``: pass at this overall (weighted) score instead of every question met; an unanswered question
    still fails the test, as it leaves no score. ``judge``: a ``BinaryJudge``, or a judge program (a run folder or
    program.json, e.g. ``bineval calibrate``'s probe judge) to answer with instead of the default judge."""
    __tracebackhide__ = True  # a red test shows the test's line, not the library's frames
    import dspy

    from bineval_dspy.judges.binary import BinaryJudge

    if min_score is not None and not 0 <= min_score <= 1:
        raise ValueError(f"assert_passes: min_score is a score from 0 to 1, got {min_score}")
    if not isinstance(output, str):
        raise TypeError(f"assert_passes: output must be a string, got {type(output).__name__}")
    judged, prompt = _checklist_of(checklist, row)
    needs_lm = any(q.verifier is None for q in judged.questions)
    if needs_lm and lm is None and dspy.settings.lm is None:
        raise InputError("assert_passes: the checklist has questions for an LM and none is configured (pass lm=, or use the bineval fixture)")
    if isinstance(judge, str | Path):
        from bineval_dspy.programs.state import load_program

        judge = load_program(Path(judge), "judge").build()
    judge = judge if judge is not None else BinaryJudge(verifier_mode=mode)
    with dspy.context(lm=lm) if lm is not None else dspy.context():
        card = judge(input=input or prompt or "", output=output, checklist=judged)
    missed = any(_missed(q, v) for q, v in zip(judged.questions, _ordered(judged, card)))
    if min_score is None and missed:
        raise BinevalAssertionError(failure_message(judged, card), card)
    if min_score is not None and (card.overall is None or card.overall < min_score):
        raise BinevalAssertionError(f"score below min_score {min_score:g}; " + failure_message(judged, card), card)
    return card


def _ordered(checklist: Checklist, card: Scorecard) -> list[Verdict]:
    from bineval_dspy.core.scoring import join

    return [v for _, v in join(checklist, card.verdicts)]
