"""The numbers a report and ``show`` derive from runs: pass rates per question, mean scores per dimension, how
scores spread over their scale (the ceiling effect), the optimizer's trajectory. One definition for both views."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from bineval_dspy.core.schema import Scorecard
from bineval_dspy.optimize.audit import Audit

HUMAN = "human"  # the name of the human scores beside the methods in a meta-eval's distributions
SCALES = {"bineval": (0.0, 1.0), "unieval": (0.0, 1.0), "rouge_l": (0.0, 1.0), "holistic": (1.0, 5.0)}  # by method kind


@dataclass(frozen=True)
class QuestionRate:
    """How often one question was answered yes over a set of scorecards; ``rate`` over the answered ones."""

    id: str
    dimension: str
    text: str
    yes: int
    no: int
    unanswered: int
    mean_p_yes: float | None  # over the verdicts that carry a P(yes)

    @property
    def rate(self) -> float | None:
        answered = self.yes + self.no
        return self.yes / answered if answered else None


def question_rates(cards: Iterable[Scorecard]) -> list[QuestionRate]:
    """Per question (in first-seen order), its yes, no and unanswered counts and mean P(yes)."""
    counts: dict[str, dict[str, int]] = {}
    texts: dict[str, tuple[str, str]] = {}
    probabilities: dict[str, list[float]] = {}
    for card in cards:
        for v in card.verdicts:
            texts.setdefault(v.question_id, (v.dimension or "", v.question or v.question_id))
            tally = counts.setdefault(v.question_id, {"yes": 0, "no": 0, "unanswered": 0})
            tally[v.answer] += 1
            if v.p_yes is not None:
                probabilities.setdefault(v.question_id, []).append(v.p_yes)
    return [
        QuestionRate(
            id=qid,
            dimension=texts[qid][0],
            text=texts[qid][1],
            yes=tally["yes"],
            no=tally["no"],
            unanswered=tally["unanswered"],
            mean_p_yes=float(np.mean(probabilities[qid])) if qid in probabilities else None,
        )
        for qid, tally in counts.items()
    ]


@dataclass(frozen=True)
class DimensionMean:
    """A dimension's (or ``overall``'s) mean score over the cards that have one, and how many lack one."""

    dimension: str
    mean: float | None
    low: float | None
    high: float | None
    scored: int
    unscored: int


def dimension_means(cards: Sequence[Scorecard]) -> list[DimensionMean]:
    """Mean, lowest and highest score per dimension and overall; a card without a score there is counted apart."""
    dims = list(dict.fromkeys(d for card in cards for d in card.dimension_scores))
    out = []
    for dim in [*dims, "overall"]:
        values = [card.overall if dim == "overall" else card.dimension_scores.get(dim) for card in cards]
        known = [v for v in values if v is not None]
        out.append(
            DimensionMean(
                dimension=dim,
                mean=float(np.mean(known)) if known else None,
                low=min(known) if known else None,
                high=max(known) if known else None,
                scored=len(known),
                unscored=len(values) - len(known),
            )
        )
    return out


# -- meta-evaluation: where the scores lie on their scale -----------------------------------------------------------
@dataclass(frozen=True)
class Spread:
    """One source's scores of one dimension (a method's, or the humans'), on its scale; ``top``: the share at the
    top of the scale, the ceiling effect (a judge that gives nearly every output the best score cannot rank them)."""

    source: str
    values: list[float]
    low: float
    high: float

    @property
    def normalized(self) -> list[float]:
        """The values mapped to [0, 1] by the scale, so sources on different scales share one axis."""
        width = self.high - self.low
        return [(v - self.low) / width if width else 0.0 for v in self.values]

    @property
    def mean(self) -> float | None:
        return float(np.mean(self.values)) if self.values else None

    @property
    def top(self) -> float | None:
        return sum(v >= self.high - 1e-9 for v in self.values) / len(self.values) if self.values else None

    @property
    def distinct(self) -> int:
        return len(set(self.values))


# -- the optimizer ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrajectoryStep:
    """One point of the optimizer's trajectory (iteration 0: the start)."""

    iteration: int
    kind: str
    val: float | None
    prompt_chars: int | None
    outcome: str  # start, accepted, rolled back, stopped, in progress
    best: float  # the held-out score of the best program after this step


def trajectory(audit: Audit) -> list[TrajectoryStep]:
    """Held-out score, prompt length and decision per iteration, with the best held-out score so far."""
    best = audit.start.val.score
    steps = [TrajectoryStep(0, "-", best, audit.start.prompt_chars, "start", best)]
    best = audit.first_score  # the steering chosen before the iterations, if any
    for it in audit.iterations:
        score = it.val.score if it.val is not None else None
        if it.outcome == "accepted" and score is not None:
            best = score
        steps.append(TrajectoryStep(it.iteration, it.kind, score, it.prompt_chars, it.outcome, best))
    return steps


def audit_cost(audit: Audit) -> tuple[int, int]:
    """LM calls and tokens of the whole run (the start's evaluation, the steering candidates' and every iteration)."""
    return audit.usage.lm_calls, audit.usage.tokens
