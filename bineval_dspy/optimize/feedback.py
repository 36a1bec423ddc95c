"""Question-level feedback for the optimizer: what failed (self-update) or where two judges disagree (cross-model).

Both sources evaluate a program on examples and return an ``Evaluation``: one score (the mean the bloat guard
compares), per-dimension scores, and the failures in context that the NoteTaker turns into lessons.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import dspy

from bineval_dspy.core.errors import InputError, one_line
from bineval_dspy.core.schema import Question, Verdict
from bineval_dspy.judges.base import Judge
from bineval_dspy.lm.budget import metered_map
from bineval_dspy.optimize.audit import Asked, EvalSummary, ItemResult
from bineval_dspy.optimize.lessons import Failure
from bineval_dspy.optimize.metric import default_example_id

JUDGE_EXAMPLE_FIELDS = ("input", "output", "question", "dimension", "question_id", "example_id")


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
    # one score per item (an output, or a judged question), for paired intervals between two programs
    items: list[ItemResult] = field(default_factory=list)

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
            items={item.id: item.score for item in self.items},
            groups={item.id: item.group for item in self.items if item.group != item.id},
        )


class FeedbackSource(Protocol):
    """What the optimizer evaluates programs with: a mode, a check before any LM call, and the evaluation."""

    mode: Literal["self", "cross"]
    progress: bool

    def check(self, program: dspy.Module, examples: Sequence[dspy.Example], split: str) -> None:
        """Raise a located ``InputError`` when ``program`` cannot be evaluated on ``examples`` (a missing field)."""
        ...

    def evaluate(self, program: dspy.Module, examples: Sequence[dspy.Example], label: str = "evaluating") -> Evaluation:
        """Run ``program`` on ``examples`` and judge it; ``label`` names the progress bar."""
        ...


def _means(values: dict[str, list[float]]) -> dict[str, float]:
    return {d: sum(v) / len(v) for d, v in values.items() if v}


class SelfUpdateFeedback:
    """Runs a program on each example and scores its output with a metric (``bineval_metric``: the example's
    checklist, judged).

    Score = the metric's mean (``BinEvalMetric``: the overall checklist score, 0 with an unanswered question); a
    program error scores 0 and counts its checklist as unanswered. Failures = the metric's structured failures
    (every question answered "no", with the judge's explanation); a metric without them (any DSPy metric
    returning a float or a ``Prediction(score, feedback)``) gives one failure per imperfect output, its feedback.
    A metric that names each row's verifier rules (``rules``) lets each failure say how many of the judged rows ask
    for its rule (``Failure.rule_rows`` of ``rows``).
    """

    mode: Literal["self", "cross"] = "self"

    def __init__(self, metric: Callable[..., Any], *, threads: int = 1, progress: bool = False) -> None:
        self.metric = metric
        self.threads = threads  # examples run at once (an in-process model batches concurrent generations)
        self.progress = progress
        self.input_field: str = getattr(metric, "input_field", "prompt")
        self.output_field: str = getattr(metric, "output_field", "response")
        self.example_id: Callable[[dspy.Example], str] = getattr(metric, "example_id", default_example_id)

    def check(self, program: dspy.Module, examples: Sequence[dspy.Example], split: str) -> None:
        """Located errors for a missing input or output field, before any LM call (when the metric can tell)."""
        if hasattr(self.metric, "check_examples"):
            self.metric.check_examples(examples, split)
        if hasattr(self.metric, "check_program"):
            self.metric.check_program(program)

    def evaluate(self, program: dspy.Module, examples: Sequence[dspy.Example], label: str = "evaluating") -> Evaluation:
        scores: list[float] = []
        items: list[ItemResult] = []
        dims: dict[str, list[float]] = defaultdict(list)
        failures: list[Failure] = []
        demo_pool: list[dict[str, Any]] = []
        rule_rows: Counter[str] = Counter()
        judged = 0
        errors = answered = unanswered = 0
        problem = ""
        runs = metered_map(lambda ex: (ex, self._run(program, ex)), examples, label, threads=self.threads, kind="example", what="example(s)", show=self.progress)
        for (example, (output, result)), _ in runs:
            example_id = self.example_id(example)
            if result is None:  # a program failure scores 0 and is counted; it is not a lesson
                errors += 1
                unanswered += _question_count(self.metric, example)
                problem = problem or f"the program failed: {output}"
                scores.append(0.0)
                items.append(ItemResult(id=example_id, group=example_id, score=0.0, output=None, error=output))
                continue
            score, feedback, found = _read(result)
            if isinstance(result, dspy.Prediction) and result.get("rules") is not None:
                judged += 1
                rule_rows.update(set(result["rules"]))
            scores.append(score)
            items.append(ItemResult(id=example_id, group=example_id, score=score, output=output, asked=_asked(result)))
            objectives = result.get("objective_scores") if isinstance(result, dspy.Prediction) else None
            for dim, value in (objectives or {}).items():
                dims[dim].append(value)
            missing = int(result.get("unanswered", 0)) if isinstance(result, dspy.Prediction) else 0
            if found is None:  # a plain metric: its feedback is the one failure of an imperfect output
                found = [] if score >= 1.0 else [_feedback_failure(example_id, str(example.get(self.input_field, "")), output, feedback)]
                answered += 1
            else:
                answered += int(result.get("passed", 0)) + len(found)
            unanswered += missing
            if missing and not problem:
                card = result.get("scorecard")
                first = next((v.explanation for v in card.verdicts if v.answer == "unanswered"), "") if card else ""
                problem = f"unanswered: {first}"
            if not found and not missing:
                demo_pool.append({**example.inputs().toDict(), self.output_field: output})
            failures.extend(found)
        if judged:
            failures = [f.model_copy(update={"rule_rows": rule_rows[f.rule], "rows": judged}) if f.rule else f for f in failures]
        return Evaluation(
            score=sum(scores) / len(scores) if scores else 0.0,
            dimension_scores=_means(dims),
            failures=failures,
            errors=errors,
            answered=answered,
            unanswered=unanswered,
            first_problem=problem,
            demo_pool=demo_pool,
            items=items,
        )

    def _run(self, program: dspy.Module, example: dspy.Example) -> tuple[str, Any]:
        """The program's output and the metric's result; a program error gives (its message, None)."""
        try:
            pred = program(**example.inputs())
            output = str(getattr(pred, self.output_field))
        except Exception as exc:
            return one_line(exc), None
        return output, self.metric(example, pred)


def _read(result: Any) -> tuple[float, str, list[Failure] | None]:
    """A metric's score, feedback and structured failures (None when it gives none)."""
    if isinstance(result, dspy.Prediction):
        found = result.get("failures")
        return float(result.score), str(result.get("feedback", "")), list(found) if found is not None else None
    return float(result), "", None


def _asked(result: Any) -> list[Asked]:
    """The verdicts an LM gave in a metric's scorecard (none from a plain metric, or a code-only checklist)."""
    card = result.get("scorecard") if isinstance(result, dspy.Prediction) else None
    verdicts = card.verdicts if card is not None else []
    return [Asked(question_id=v.question_id, question=v.question or "", answer=v.answer) for v in verdicts if not v.judge.startswith("code:")]


def _question_count(metric: Any, example: dspy.Example) -> int:
    """How many verdicts a failed program run leaves unanswered: its checklist's questions (1 for a plain metric)."""
    checklist_for = getattr(metric, "checklist_for", None)
    return len(checklist_for(example).questions) if checklist_for is not None else 1


def _feedback_failure(example_id: str, task_input: str, output: str, feedback: str) -> Failure:
    return Failure(
        id=f"{example_id}:feedback", example_id=example_id, question=feedback or "(the metric scored it below 1)",
        dimension="metric", input=task_input, output=output, explanation=feedback or "scored below 1", got="no",
    )


class CrossModelFeedback:
    """The student is a judge (``BinaryJudge``) on the target LM; the reference is a stronger judge or
    recorded answers (human labels, code verifiers, a stronger model's saved verdicts).

    Examples carry ``input``, ``output``, ``question``, ``dimension``, ``question_id`` and, for recorded
    references, ``reference`` ("yes"/"no"). Score = agreement rate (an unanswered target verdict disagrees and
    is counted in ``unanswered``). Failures = the answered questions where target and reference disagree.
    """

    mode: Literal["self", "cross"] = "cross"

    def __init__(
        self, reference_judge: Judge | None = None, reference_lm: dspy.LM | None = None, *, progress: bool = False
    ) -> None:
        if (reference_judge is None) != (reference_lm is None):
            raise ValueError("give both reference_judge and reference_lm, or neither (recorded references)")
        self.reference_judge = reference_judge
        self.reference_lm = reference_lm
        self.progress = progress

    def check(self, program: dspy.Module, examples: Sequence[dspy.Example], split: str) -> None:
        """Every example carries the judge-example fields, and the student is a judge."""
        if not hasattr(program, "judge_question"):
            raise InputError(f"cross-model feedback judges with the student: {type(program).__name__} has no judge_question (use a BinaryJudge)")
        for number, example in enumerate(examples):
            missing = [name for name in JUDGE_EXAMPLE_FIELDS if name not in example]
            if missing:
                raise InputError(f"{split} example {number}: no field '{missing[0]}' (judge examples carry {', '.join(JUDGE_EXAMPLE_FIELDS)})")

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
        items: list[ItemResult] = []
        runs = metered_map(lambda ex: (ex, self._judge(program, ex)), examples, label, kind="example", what="example(s)", show=self.progress)
        for (example, (question, reference, verdict, error)), _ in runs:
            if reference is None:
                errors += 1
                continue
            group = str(example.get("example_id", ""))
            item_id = f"{group}:{question.id}"
            if verdict is None:  # judge_question already turns LM failures into "unanswered"; this is a crash
                errors += 1
            answer = verdict.answer if verdict else "unanswered"
            explanation = verdict.explanation if verdict else error
            reference_yes[question.dimension].append(1.0 if reference == "yes" else 0.0)
            p_yes = verdict.p_yes if verdict is not None and answer != "unanswered" else None
            items.append(ItemResult(id=item_id, group=group, score=float(answer == reference), answer=answer, reference=reference, p_yes=p_yes))
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
            items=items,
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
