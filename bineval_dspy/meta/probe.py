"""A learned metric for data rated by people per dimension (SummEval, QAGS, Topical-Chat): a probe judge
(``judges.probe``) cross-fitted over inputs.

People rated each output on a dimension, not on questions, so the labels are weak: every question of a dimension
inherits the output's human score on it, as yes when the score reaches the training rows' median for that dimension
(computed on the training fold only), else no. What this assumes: that a question about a dimension is answered yes
about the outputs people rated high on it and no about those rated low, with the median as the line between them. A
question that asks about only part of a dimension is trained toward the whole dimension's rating.

Inputs (articles, dialogues) are dealt into folds: an output's scores come from the head trained on the other folds'
inputs, so no input is ever on both sides. Each fold's head picks its layer, strength and threshold by grouped folds
inside its own training rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from bineval_dspy.judges.probe import fit_head, grouped_folds
from bineval_dspy.lm.hidden import Reading


def cross_fitted(
    readings: Sequence[Reading],
    human: Sequence[float],
    dimension: Sequence[str],
    groups: Sequence[str],
    *,
    folds: int,
    inner_folds: int,
    layers: Sequence[int] | None,
    strengths: Sequence[float],
    seed: int,
) -> tuple[np.ndarray, list[dict[str, object]]]:
    """Every reading's P(yes) from the head that never saw its group, and each fold's head (what it reads, its
    strength, threshold, the medians it cut at). ``human[i]`` is the output's score on ``dimension[i]`` (the question's)."""
    fold_of = grouped_folds(groups, folds, seed)
    human_a = np.asarray(human, dtype=float)
    dims = np.asarray(dimension)
    p = np.full(len(readings), np.nan)
    heads: list[dict[str, object]] = []
    for k in range(folds):
        held = fold_of == k
        if not held.any():
            continue
        train = [int(i) for i in np.flatnonzero(~held)]
        cuts: Mapping[str, float] = {d: float(np.median(human_a[train][dims[train] == d])) for d in sorted(set(dims[train].tolist()))}
        y = np.array([float(human_a[i] >= cuts[dims[i]]) for i in train])
        head, _, _ = fit_head(
            [readings[i] for i in train], y, [groups[i] for i in train], layers=layers, strengths=strengths, folds=inner_folds, seed=seed
        )
        p[held] = head.p_yes([readings[int(i)] for i in np.flatnonzero(held)])
        heads.append({"fold": k, "features": head.describe(), "strength": head.strength, "threshold": head.threshold, "medians": dict(cuts)})
    return p, heads
