"""The judge seam: what every judge answers, and the hook that lets code answer instead of an LM."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from bineval_dspy.core.schema import Checklist, JudgeSpec, Question, Scorecard, Verdict

CodeRouter = Callable[[Question, str, str], Verdict | None]
"""``route(question, input, output)``: a verdict when code can answer the question, else None (ask the LM)."""


@runtime_checkable
class Judge(Protocol):
    """Answers checklist questions about one output; ``BinaryJudge`` is the LM implementation (code routing in front
    of one kind: ``QuestionJudge``, ``BatchJudge`` or ``ProbeJudge``)."""

    def __call__(self, *, input: str, output: str, checklist: Checklist) -> Scorecard:
        """Every question answered, aggregated into a scorecard."""
        ...

    def judge_question(self, input: str, output: str, question: Question) -> Verdict:
        """One verdict for one question (never raises for an LM failure: that is an unanswered verdict)."""
        ...

    def spec(self) -> JudgeSpec:
        """Which model and options give this judge's verdicts, recorded beside them."""
        ...
