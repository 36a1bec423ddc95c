"""Question-level feedback for the optimizer: what failed (self-update) or where two judges disagree (cross-model).

Both sources evaluate a program on examples and return an ``Evaluation``: one score (the mean the bloat guard
compares), per-dimension scores, and the failures in context that the NoteTaker turns into lessons.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import dspy

from bineval_dspy.core.console import progress_map
from bineval_dspy.core.errors import one_line
from bineval_dspy.core.schema import Checklist, Question, Scorecard, Verdict
from bineval_dspy.core.scoring import join, outcomes
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.optimize.audit import EvalSummary
from bineval_dspy.optimize.lessons import Failure
from bineval_dspy.verifiers import VerifierError, describe


@dataclass
class Evaluation:
    """A program's results on a set of examples."""

    score: float
    dimension_scores: dict[str, float]
    failures: list[Failure]
    reference_dimension_scores: dict[str, float] = field(default_factory=dict)
    errors: int = 0
    answered: int = 0
    unanswered: int = 0
    first_problem: str = ""
    # what demonstration candidates are made of: outputs that passed every check (self-update), or reference
    # answers to questions the target got wrong (cross-model); each a demo's field values
    demo_pool: list[dict[str, Any]] = field(default_factory=list)
    # cross-model: (dimension, the target's P(yes), the reference's answer) per answered question, for thresholds
    probabilities: list[tuple[str, float, str]] = field(default_factory=list)

    @property
    def unanswered_share(self) -> float:
        """Share of verdicts that were unanswered (a program error leaves all of its output's questions so)."""
        total = self.answered + self.unanswered
        return self.unanswered / total if total else 0.0

    def dimension_gaps(self) -> dict[str, float]:
        """|S_d(target) - S_d(reference)| per dimension (cross-model); empty without a reference."""
        return {
            d: abs(self.dimension_scores.get(d, 0.0) - ref) for d, ref in self.reference_dimension_scores.items()
        }

    def summary(self) -> EvalSummary:
        """The part kept in the audit trail."""
        return EvalSummary(
            score=self.score,
            dimension_scores=self.dimension_scores,
            reference_dimension_scores=self.reference_dimension_scores,
            dimension_gaps=self.dimension_gaps(),
            failures=len(self.failures),
            errors=self.errors,
            answered=self.answered,
            unanswered=self.unanswered,
        )


class FeedbackSource(Protocol):
    mode: Literal["self", "cross"]

    def evaluate(self, program: dspy.Module, examples: Sequence[dspy.Example], label: str = "evaluating") -> Evaluation:
        """Run ``program`` on ``examples`` and judge it; ``label`` names the progress bar."""
        ...


def _means(values: dict[str, list[float]]) -> dict[str, float]:
    return {d: sum(v) / len(v) for d, v in values.items() if v}


class SelfUpdateFeedback:
    """Runs a generator on each example and judges the output with that example's checklist.

    Score = mean overall checklist score; an output with an unanswered question, or a program error, scores 0
    (the same definition the GEPA metric uses) and is counted in ``unanswered``. Failures = every question
    answered "no", with the judge's explanation: an unanswered question carries nothing to learn from.
    """

    mode: Literal["self", "cross"] = "self"

    def __init__(
        self,
        judge: BinaryJudge,
        checklist_for: Callable[[dspy.Example], Checklist],
        *,
        input_field: str = "prompt",
        output_field: str = "response",
        example_id: Callable[[dspy.Example], str] = lambda ex: str(ex.get("key", ex.get("id", ""))),
        threads: int = 1,
    ) -> None:
        self.judge = judge
        self.threads = threads  # examples run at once (an in-process model batches concurrent generations)
        self.checklist_for = checklist_for
        self.input_field = input_field
        self.output_field = output_field
        self.example_id = example_id

    def evaluate(self, program: dspy.Module, examples: Sequence[dspy.Example], label: str = "evaluating") -> Evaluation:
        scores: list[float] = []
        dims: dict[str, list[float]] = defaultdict(list)
        failures: list[Failure] = []
        demo_pool: list[dict[str, Any]] = []
        errors = answered = unanswered = 0
        problem = ""
        for example, (checklist, output, card) in zip(examples, progress_map(lambda ex: self._run(program, ex), examples, label, self.threads)):
            if card is None:  # a program failure scores 0 and is counted; it is not a lesson
                errors += 1
                unanswered += len(checklist.questions)
                problem = problem or f"the program failed: {output}"
                scores.append(0.0)
                continue
            task_input = str(example[self.input_field])
            scores.append(card.overall or 0.0)
            for dim, value in card.dimension_scores.items():
                if value is not None:
                    dims[dim].append(value)
            split = outcomes(join(checklist, card.verdicts))
            answered += len(split["passed"]) + len(split["failed"])
            unanswered += len(split["unanswered"])
            if split["unanswered"] and not problem:
                problem = f"unanswered: {split['unanswered'][0][1].explanation}"
            if not split["failed"] and not split["unanswered"]:
                demo_pool.append({**example.inputs().toDict(), self.output_field: output})
            for question, verdict in split["failed"]:
                failures.append(
                    Failure(
                        id=f"{self.example_id(example)}:{question.id}",
                        example_id=self.example_id(example),
                        question=question.text,
                        dimension=question.dimension,
                        input=task_input,
                        output=output,
                        explanation=verdict.explanation,
                        got="yes" if verdict.answer == "yes" else "no",  # "yes" to a criterion that penalizes
                        rule=_rule(question, task_input),
                    )
                )
        return Evaluation(
            score=sum(scores) / len(scores) if scores else 0.0,
            dimension_scores=_means(dims),
            failures=failures,
            errors=errors,
            answered=answered,
            unanswered=unanswered,
            first_problem=problem,
            demo_pool=demo_pool,
        )

    def _run(self, program: dspy.Module, example: dspy.Example) -> tuple[Checklist, str, Scorecard | None]:
        """The example's checklist, the program's output and its scorecard; a program error gives (checklist, its
        message, None)."""
        checklist = self.checklist_for(example)
        try:
            output = str(getattr(program(**example.inputs()), self.output_field))
        except Exception as exc:
            return checklist, one_line(exc), None
        return checklist, output, self.judge(input=str(example[self.input_field]), output=output, checklist=checklist)


def _rule(question: Question, task_input: str) -> str | None:
    """The rule sentence of the question's code verifier, if it has one that accepts its kwargs."""
    if question.verifier is None:
        return None
    try:
        return describe(question.verifier, question.verifier_kwargs, prompt=task_input)
    except VerifierError:
        return None


class CrossModelFeedback:
    """The student is a judge (``BinaryJudge``) on the target LM; the reference is a stronger judge or
    recorded answers (human labels, code verifiers, a stronger model's saved verdicts).

    Examples carry ``input``, ``output``, ``question``, ``dimension``, ``question_id`` and, for recorded
    references, ``reference`` ("yes"/"no"). Score = agreement rate (an unanswered target verdict disagrees and
    is counted in ``unanswered``). Failures = the answered questions where target and reference disagree.
    """

    mode: Literal["self", "cross"] = "cross"

    def __init__(self, reference_judge: BinaryJudge | None = None, reference_lm: dspy.LM | None = None) -> None:
        if (reference_judge is None) != (reference_lm is None):
            raise ValueError("give both reference_judge and reference_lm, or neither (recorded references)")
        self.reference_judge = reference_judge
        self.reference_lm = reference_lm

    def _reference(self, example: dspy.Example, question: Question) -> str | None:
        recorded = example.get("reference")
        if recorded is not None:
            return recorded
        if self.reference_judge is None:
            raise ValueError(f"example {example.get('question_id')}: no recorded reference and no reference judge")
        with dspy.context(lm=self.reference_lm):
            answer = self.reference_judge.judge_question(example["input"], example["output"], question).answer
        return None if answer == "unanswered" else answer

    def evaluate(self, program: dspy.Module, examples: Sequence[dspy.Example], label: str = "evaluating") -> Evaluation:
        agree = 0
        target_yes: dict[str, list[float]] = defaultdict(list)
        reference_yes: dict[str, list[float]] = defaultdict(list)
        failures: list[Failure] = []
        demo_pool: list[dict[str, Any]] = []
        probabilities: list[tuple[str, float, str]] = []
        errors = answered = unanswered = 0
        problem = ""
        for example, (question, reference, verdict, error) in zip(examples, progress_map(lambda ex: self._judge(program, ex), examples, label)):
            if reference is None:
                errors += 1
                continue
            if verdict is None:  # judge_question already turns LM failures into "unanswered"; this is a crash
                errors += 1
            answer = verdict.answer if verdict else "unanswered"
            explanation = verdict.explanation if verdict else error
            reference_yes[question.dimension].append(1.0 if reference == "yes" else 0.0)
            if answer == "unanswered":
                unanswered += 1
                problem = problem or f"unanswered: {explanation}"
                continue
            answered += 1
            assert verdict is not None
            if verdict.p_yes is not None:
                probabilities.append((question.dimension, verdict.p_yes, reference))
            target_yes[question.dimension].append(1.0 if answer == "yes" else 0.0)
            if answer == reference:
                agree += 1
                continue
            expected: Literal["yes", "no"] = "yes" if reference == "yes" else "no"
            failures.append(
                Failure(
                    id=f"{example.get('example_id', '')}:{question.id}",
                    example_id=str(example.get("example_id", "")),
                    question=question.text,
                    dimension=question.dimension,
                    input=example["input"],
                    output=example["output"],
                    explanation=explanation,
                    got="yes" if answer == "yes" else "no",
                    expected=expected,
                )
            )
            verdict_demo = {"answer": expected, "explanation": "the reference evaluator's answer"}
            demo_pool.append({"input": example["input"], "output": example["output"], "question": question.text, "verdict": verdict_demo})
        judged = sum(len(v) for v in reference_yes.values())
        return Evaluation(
            score=agree / judged if judged else 0.0,
            dimension_scores=_means(target_yes),
            failures=failures,
            reference_dimension_scores=_means(reference_yes),
            errors=errors,
            answered=answered,
            unanswered=unanswered,
            first_problem=problem,
            demo_pool=demo_pool,
            probabilities=probabilities,
        )

    def _judge(self, program: dspy.Module, example: dspy.Example) -> tuple[Question, str | None, Verdict | None, str]:
        """The example's question, the reference's answer (None: none), the target's verdict (None: it crashed)."""
        question = Question(id=str(example["question_id"]), text=example["question"], dimension=example["dimension"])
        reference = self._reference(example, question)
        if reference is None:
            return question, None, None, ""
        try:
            return question, reference, program.judge_question(example["input"], example["output"], question), ""
        except Exception as exc:
            return question, reference, None, one_line(exc)
