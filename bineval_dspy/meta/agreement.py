"""Agreement between a judge's yes/no answers and reference labels: the one definition experiments and reports use."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bineval_dspy.stats.bootstrap import Bootstrap, Interval
from bineval_dspy.stats.classification import kappa_statistic


def agreement(target: Sequence[str], reference: Sequence[str]) -> float | None:
    """Share of pairs with the same answer; an unanswered target answer disagrees. None for no pairs."""
    if len(target) != len(reference):
        raise ValueError(f"{len(target)} target answers for {len(reference)} references")
    return sum(a == b for a, b in zip(target, reference)) / len(target) if target else None


def cohen_kappa(target: Sequence[str], reference: Sequence[str]) -> float | None:
    """Cohen's kappa for yes/no labels: (p_o - p_e) / (1 - p_e). None without pairs, or when chance agreement is 1
    (both raters constant and equal), where kappa is undefined rather than 0 or 1."""
    if len(target) != len(reference):
        raise ValueError(f"{len(target)} target answers for {len(reference)} references")
    labels = ("yes", "no")
    unknown = sorted({x for x in (*target, *reference) if x not in labels})
    if unknown:
        raise ValueError(f"kappa takes yes/no answers only, got {unknown}")
    n = len(target)
    if not n:
        return None
    observed = sum(a == b for a, b in zip(target, reference)) / n
    chance = sum((list(target).count(label) / n) * (list(reference).count(label) / n) for label in labels)
    return None if chance >= 1.0 - 1e-12 else (observed - chance) / (1.0 - chance)


def kappa_interval(
    groups: Mapping[str, Sequence[tuple[str, str]]], resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> Interval:
    """Cohen's kappa over every (target, reference) pair with its percentile bootstrap interval, resampling whole
    groups (an instruction's questions together) through the shared bootstrap; draws where kappa is undefined are
    left out."""
    keys = sorted(groups)
    pairs = [pair for key in keys for pair in groups[key]]
    labels = [key for key in keys for _ in groups[key]]
    point = cohen_kappa([a for a, _ in pairs], [b for _, b in pairs])
    if point is None:
        return Interval(estimate=None)
    return Bootstrap(labels, resamples=resamples, seed=seed, confidence=confidence).interval(kappa_statistic(pairs))
