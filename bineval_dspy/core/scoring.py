"""Aggregation: weighted yes-fraction per dimension and overall, the affine rescale, and the one definition of
passed / failed / unanswered that the judge, the optimizer's feedback and the GEPA metric share."""

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


def weighted_yes_fraction(
    pairs: Iterable[tuple[Question, Verdict]], use_probability: bool = False, partial: bool = True
) -> float | None:
    """S = sum(w_i * f_i) / sum(w_i); None if nothing was answered, or (``partial=False``) if anything was not."""
    total = weight = 0.0
    for question, verdict in pairs:
        value = verdict_value(verdict, use_probability)
        if value is None:
            if not partial:
                return None
            continue
        total += question.weight * value
        weight += question.weight
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
    """Questions split into ``passed`` (yes), ``failed`` (no) and ``unanswered``: the one definition of each."""
    split: dict[str, list[tuple[Question, Verdict]]] = {"passed": [], "failed": [], "unanswered": []}
    names = {"yes": "passed", "no": "failed", "unanswered": "unanswered"}
    for question, verdict in pairs:
        split[names[verdict.answer]].append((question, verdict))
    return split


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
