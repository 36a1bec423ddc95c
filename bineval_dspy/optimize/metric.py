"""A BinEval metric in the five-argument GEPA protocol, so ``dspy.GEPA`` optimizes on the same signal.

Score = the checklist's overall score, 0 when a question is unanswered (as in ``SelfUpdateFeedback``);
feedback = each failed and each unanswered question with the judge's explanation;
objective_scores = one objective per dimension. Verdicts are deterministic (temperature 0, cached LM, code
verifiers), so GEPA's per-predictor calls see the same score as the module-level call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dspy

from bineval_dspy.core.schema import Checklist
from bineval_dspy.core.scoring import join, outcomes
from bineval_dspy.judges.binary import BinaryJudge

Metric = Callable[..., dspy.Prediction]


def bineval_metric(
    judge: BinaryJudge,
    checklist_for: Callable[[dspy.Example], Checklist],
    *,
    input_field: str = "prompt",
    output_field: str = "response",
    judge_lm: dspy.LM | None = None,
) -> Metric:
    """Build ``metric(gold, pred, trace=None, pred_name=None, pred_trace=None) -> Prediction``."""

    def metric(gold: dspy.Example, pred: Any, trace: Any = None, pred_name: str | None = None, pred_trace: Any = None) -> dspy.Prediction:
        checklist = checklist_for(gold)
        output = str(getattr(pred, output_field, "") or "")
        with dspy.context(lm=judge_lm or dspy.settings.lm, trace=None):
            card = judge(input=str(gold[input_field]), output=output, checklist=checklist)
        split = outcomes(join(checklist, card.verdicts))
        parts = [
            f"{title}:\n" + "\n".join(f"- [{q.dimension}] {q.text} -> {v.answer}: {v.explanation}" for q, v in split[kind])
            for kind, title in (("failed", "Failed checklist questions"), ("unanswered", "Unanswered (scored 0)"))
            if split[kind]
        ]
        feedback = "\n".join(parts) or "All checklist questions passed."
        objectives = {dim: (score or 0.0) for dim, score in card.dimension_scores.items()}
        return dspy.Prediction(score=card.overall or 0.0, feedback=feedback, objective_scores=objectives)

    return metric
