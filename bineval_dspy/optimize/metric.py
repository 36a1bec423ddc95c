"""The one BinEval score of a generated output, as a DSPy metric: ``dspy.GEPA`` and ``BinEvalOptimizer`` read it alike.

``metric(gold, pred, trace=None, pred_name=None, pred_trace=None) -> dspy.Prediction`` with
- ``score``: the checklist's overall score, 0 when a question is unanswered (an incomplete card proves nothing);
- ``feedback``: each failed and each unanswered question with the judge's explanation (GEPA's reflection input);
- ``objective_scores``: one objective per dimension;
- ``failures``: the failed questions as structured ``Failure`` records (what the NoteTaker turns into lessons),
  and ``passed``/``unanswered``/``scorecard`` beside them;
- ``rules``: the rule sentences of the checklist's code questions, passed or not (how many rows ask for a rule).
Called with a ``trace`` and no ``pred_name`` (``dspy.BootstrapFewShot``, MIPROv2's bootstrap: "should this run become
a demonstration?") it answers a bool instead, DSPy's contract there: the score reached ``pass_threshold``. A
Prediction is always truthy, so returning one there kept failing outputs as demonstrations.
Verdicts are deterministic (temperature 0, cached LM, code verifiers), so GEPA's per-predictor calls see the same
score as the module-level call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dspy

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.core.scoring import join, outcomes
from bineval_dspy.judges.base import Judge
from bineval_dspy.optimize.lessons import Failure
from bineval_dspy.verifiers import VerifierError, describe


def default_example_id(example: dspy.Example) -> str:
    """An example's id for failures and reports: its ``key``, else its ``id``, else empty."""
    return str(example.get("key", example.get("id", "")))


class BinEvalMetric:
    """A checklist-judged metric for a program mapping ``input_field`` to ``output_field`` (see the module)."""

    def __init__(
        self,
        judge: Judge,
        checklist_for: Callable[[dspy.Example], Checklist],
        *,
        input_field: str = "prompt",
        output_field: str = "response",
        judge_lm: dspy.LM | None = None,
        example_id: Callable[[dspy.Example], str] = default_example_id,
        pass_threshold: float = 1.0,
    ) -> None:
        if not 0 <= pass_threshold <= 1:
            raise ValueError(f"pass_threshold is a score from 0 to 1, got {pass_threshold}")
        self.judge = judge
        self.pass_threshold = pass_threshold
        self.checklist_for = checklist_for
        self.input_field = input_field
        self.output_field = output_field
        self.judge_lm = judge_lm
        self.example_id = example_id

    def check_examples(self, examples: Sequence[dspy.Example], split: str) -> None:
        """Every example carries the input field: else one error naming the split, the example and the field."""
        for number, example in enumerate(examples):
            if self.input_field not in example:
                fields = ", ".join(sorted(example.keys())) or "none"
                raise InputError(
                    f"{split} example {number} ({self.example_id(example) or 'no id'}): no field '{self.input_field}' "
                    f"(the metric's input_field; the example has {fields})"
                )

    def check_program(self, program: dspy.Module) -> None:
        """The program's predictors produce the output field: else one error naming it and what they produce."""
        produced = {name for _, pred in program.named_predictors() for name in pred.signature.output_fields}
        if produced and self.output_field not in produced:
            raise InputError(
                f"the program produces no field '{self.output_field}' (the metric's output_field; its predictors "
                f"produce {', '.join(sorted(produced))}): pass output_field= to bineval_metric"
            )

    def output_of(self, pred: Any) -> str:
        """The judged text of a prediction; a prediction without the field is a located error, not an empty text."""
        if isinstance(pred, dspy.Prediction) and self.output_field not in pred:
            fields = ", ".join(sorted(pred.keys())) or "none"
            raise InputError(f"the prediction has no field '{self.output_field}' (the metric's output_field; it has {fields})")
        return str(getattr(pred, self.output_field, "") or "")

    def __call__(
        self, gold: dspy.Example, pred: Any, trace: Any = None, pred_name: str | None = None, pred_trace: Any = None
    ) -> dspy.Prediction | bool:
        result = self.judged(gold, pred)
        if trace is not None and pred_name is None:  # bootstrapping a demonstration: pass or fail
            return bool(result.score >= self.pass_threshold)
        return result

    def judged(self, gold: dspy.Example, pred: Any) -> dspy.Prediction:
        """The score, feedback and failures of one prediction (see the module)."""
        self.check_examples([gold], "the")
        checklist = self.checklist_for(gold)
        output = self.output_of(pred)
        task_input = str(gold[self.input_field])
        with dspy.context(lm=self.judge_lm or dspy.settings.lm, trace=None):
            card = self.judge(input=task_input, output=output, checklist=checklist)
        split = outcomes(join(checklist, card.verdicts))
        parts = [
            f"{title}:\n" + "\n".join(f"- [{q.dimension}] {q.text} -> {v.answer}: {v.explanation}" for q, v in split[kind])
            for kind, title in (("failed", "Failed checklist questions"), ("unanswered", "Unanswered (scored 0)"))
            if split[kind]
        ]
        example_id = self.example_id(gold)
        failures = [
            Failure(
                id=f"{example_id}:{question.id}",
                example_id=example_id,
                question=question.text,
                dimension=question.dimension,
                input=task_input,
                output=output,
                explanation=verdict.explanation,
                got="yes" if verdict.answer == "yes" else "no",  # "yes" to a criterion that penalizes
                rule=_rule(question, task_input),
            )
            for question, verdict in split["failed"]
        ]
        return dspy.Prediction(
            score=card.overall if card.overall is not None and not split["unanswered"] else 0.0,
            feedback="\n".join(parts) or "All checklist questions passed.",
            objective_scores={dim: (value or 0.0) for dim, value in card.dimension_scores.items()},
            failures=failures,
            passed=len(split["passed"]),
            unanswered=len(split["unanswered"]),
            scorecard=card,
            rules=sorted({rule for rule in (_rule(q, task_input) for q in checklist.questions) if rule is not None}),
        )


def bineval_metric(
    judge: Judge,
    checklist_for: Callable[[dspy.Example], Checklist],
    *,
    input_field: str = "prompt",
    output_field: str = "response",
    judge_lm: dspy.LM | None = None,
    example_id: Callable[[dspy.Example], str] = default_example_id,
    pass_threshold: float = 1.0,
) -> BinEvalMetric:
    """The metric for ``BinEvalOptimizer(metric)``, ``dspy.GEPA(metric)`` and ``dspy.BootstrapFewShot(metric)``:
    ``judge`` answers ``checklist_for(example)`` about the program's ``output_field``, given the example's
    ``input_field``; a bootstrapped run passes at ``pass_threshold`` (default: every question met)."""
    return BinEvalMetric(
        judge, checklist_for, input_field=input_field, output_field=output_field, judge_lm=judge_lm, example_id=example_id,
        pass_threshold=pass_threshold,
    )


def _rule(question: Question, task_input: str) -> str | None:
    """The rule sentence of the question's code verifier, if it has one that accepts its kwargs."""
    if question.verifier is None:
        return None
    try:
        return describe(question.verifier, question.verifier_kwargs, prompt=task_input)
    except VerifierError:
        return None
