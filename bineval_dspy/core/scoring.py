"""Aggregation: weighted yes-fraction per dimension and overall, the affine rescale, and the one definition of
passed / failed / unanswered that the judge, the optimizer's feedback and the GEPA metric share.

Negative weights are criteria to penalize (Qworld): their question asks whether the penalized thing is present, so
for them "no" is the good answer. Every function here reads a verdict through ``met_value`` so both kinds count alike.
"""

from __future__ import annotations

from collections.abc import Iterable

from bineval_dspy.core.schema import Checklist, Question, Scorecard, Verdict


def verdict_value(verdict: Verdict, use_probability: bool) -> float | None:
    """1/0 for yes/no, P(yes) in probability mode when known, None when unanswered."""
    if verdict.answer == "unanswered":
        return None
    if use_probability and verdict.p_yes is not None:
        return verdict.p_yes
    return 1.0 if verdict.answer == "yes" else 0.0


def met_value(question: Question, verdict: Verdict, use_probability: bool) -> float | None:
    """How far the question's criterion is met, in [0, 1]: the verdict's value, or 1 minus it for a negative weight
    (a "yes" there means the penalized thing is present); None when unanswered."""
    value = verdict_value(verdict, use_probability)
    if value is None:
        return None
    return value if question.weight > 0 else 1.0 - value


def met(question: Question, verdict: Verdict) -> bool | None:
    """Whether the verdict meets the question's criterion ("yes", or "no" for a negative weight); None if unanswered."""
    value = met_value(question, verdict, use_probability=False)
    return None if value is None else value == 1.0


def weighted_yes_fraction(
    pairs: Iterable[tuple[Question, Verdict]], use_probability: bool = False, partial: bool = True
) -> float | None:
    """S = sum(|w_i| * m_i) / sum(|w_i|), m_i the met value (``met_value``): with positive weights the weighted
    yes-fraction; a negative criterion adds |w| only when answered "no". So a response that meets every positive
    criterion and triggers no negative one scores 1. None if nothing was answered, or (``partial=False``) if
    anything was not."""
    total = weight = 0.0
    for question, verdict in pairs:
        value = met_value(question, verdict, use_probability)
        if value is None:
            if not partial:
                return None
            continue
        total += abs(question.weight) * value
        weight += abs(question.weight)
    return total / weight if weight else None


def join(checklist: Checklist, verdicts: Iterable[Verdict]) -> list[tuple[Question, Verdict]]:
    """Each checklist question with its verdict, in checklist order: the one question <-> verdict join.

    Raises ValueError when a question has no verdict.
    """
    by_id = {v.question_id: v for v in verdicts}
    missing = [q.id for q in checklist.questions if q.id not in by_id]
    if missing:
        raise ValueError(f"no verdict for question(s) {', '.join(missing)}")
    return [(q, by_id[q.id]) for q in checklist.questions]


def rescale(score: float | None, low: float = 1.0, high: float = 5.0) -> float | None:
    """S' = S * (b - a) + a, mapping [0, 1] onto a Likert scale [a, b]."""
    return None if score is None else score * (high - low) + low


def outcomes(pairs: Iterable[tuple[Question, Verdict]]) -> dict[str, list[tuple[Question, Verdict]]]:
    """Questions split into ``passed`` (criterion met), ``failed`` (not met: a "no", or a "yes" to a negative
    criterion) and ``unanswered``: the one definition of each."""
    split: dict[str, list[tuple[Question, Verdict]]] = {"passed": [], "failed": [], "unanswered": []}
    names = {True: "passed", False: "failed", None: "unanswered"}
    for question, verdict in pairs:
        split[names[met(question, verdict)]].append((question, verdict))
    return split


def lineage_scores(checklist: Checklist, card: Scorecard, key: str) -> dict[str, float | None]:
    """The card's score per value of ``lineage[key]`` (e.g. per Qworld perspective or scenario), in checklist order,
    scored as the card was (P(yes) if its judge read probabilities, ``partial`` as the card). Questions without
    that key are left out; ``{}`` when none has it."""
    use_probability = bool(card.judge and card.judge.probability)
    groups: dict[str, list[tuple[Question, Verdict]]] = {}
    for question, verdict in join(checklist, card.verdicts):
        if key in question.lineage:
            groups.setdefault(question.lineage[key], []).append((question, verdict))
    return {value: weighted_yes_fraction(pairs, use_probability, card.partial) for value, pairs in groups.items()}


def score(
    checklist: Checklist,
    verdicts: list[Verdict],
    *,
    use_probability: bool = False,
    partial: bool = False,
    scale: tuple[float, float] = (1.0, 5.0),
) -> Scorecard:
    """Build a Scorecard from one verdict per checklist question (see ``Scorecard`` for ``partial``)."""
    pairs = [(q, v.model_copy(update={"question": q.text, "dimension": q.dimension})) for q, v in join(checklist, verdicts)]
    dims = {
        dim: weighted_yes_fraction([(q, v) for q, v in pairs if q.dimension == dim], use_probability, partial)
        for dim in checklist.by_dimension()
    }
    overall = weighted_yes_fraction(pairs, use_probability, partial)
    missing = {dim: sum(1 for q, v in pairs if q.dimension == dim and v.answer == "unanswered") for dim in dims}
    rescaled = {dim: rescale(s, *scale) for dim, s in dims.items()}
    rescaled["overall"] = rescale(overall, *scale)
    return Scorecard(
        dimension_scores=dims,
        overall=overall,
        rescaled=rescaled,
        scale=scale,
        unanswered=sum(missing.values()),
        unanswered_by_dimension={dim: n for dim, n in missing.items() if n},
        partial=partial,
        verdicts=[v for _, v in pairs],
    )
