"""A binary judge against reference labels beyond agreement: balanced accuracy and AUROC, as functions of item
weights (the shared bootstrap's form, ``Statistic``), so both get intervals and paired differences like kappa.

Agreement alone flatters a yes-sayer: on labels that are 87% "yes", always answering yes agrees 87% of the time.
Balanced accuracy (the mean of the yes and no recalls) gives it 0.5, and AUROC reads the P(yes) ranking itself,
whatever the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bineval_dspy.stats.bootstrap import Statistic


def kappa_statistic(pairs: Sequence[tuple[str, str]]) -> Statistic:
    """Cohen's kappa as a function of pair weights, for the shared bootstrap; NaN where it is undefined."""
    target = np.array([a for a, _ in pairs])
    reference = np.array([b for _, b in pairs])
    same = (target == reference).astype(float)
    shares = [((target == label).astype(float), (reference == label).astype(float)) for label in ("yes", "no")]

    def statistic(weights: np.ndarray) -> np.ndarray:
        total = weights.sum(axis=1)
        total = np.where(total > 0, total, np.nan)
        observed = (weights @ same) / total
        chance = sum(((weights @ t) / total) * ((weights @ r) / total) for t, r in shares)
        with np.errstate(invalid="ignore", divide="ignore"):  # chance 1: undefined, set to NaN below
            return np.where(chance >= 1.0 - 1e-12, np.nan, (observed - chance) / (1.0 - chance))

    return statistic


def balanced_accuracy_statistic(answers: Sequence[str], references: Sequence[str]) -> Statistic:
    """Mean of the recall on reference "yes" and on reference "no" (an unanswered answer is wrong); NaN for a draw
    missing either class."""
    target = np.array(answers)
    reference = np.array(references)
    hit = (target == reference).astype(float)
    yes = (reference == "yes").astype(float)
    no = (reference == "no").astype(float)

    def statistic(weights: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            recall_yes = (weights @ (hit * yes)) / (weights @ yes)
            recall_no = (weights @ (hit * no)) / (weights @ no)
        return np.asarray((recall_yes + recall_no) / 2)

    return statistic


def auroc_statistic(scores: Sequence[float], references: Sequence[str]) -> Statistic:
    """The probability that a reference-"yes" item scores above a reference-"no" one (ties count half); NaN for a
    draw missing either class."""
    s = np.asarray(scores, dtype=float)
    reference = np.array(references)
    pos, neg = np.flatnonzero(reference == "yes"), np.flatnonzero(reference == "no")
    wins = (s[pos][:, None] > s[neg][None, :]).astype(float) + 0.5 * (s[pos][:, None] == s[neg][None, :])

    def statistic(weights: np.ndarray) -> np.ndarray:
        wp, wn = weights[:, pos], weights[:, neg]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(np.einsum("dp,pn,dn->d", wp, wins, wn) / (wp.sum(axis=1) * wn.sum(axis=1)))

    return statistic


def point(statistic: Statistic, items: int) -> float | None:
    """A statistic on the data as it is (every item weight 1); None where it is undefined."""
    value = float(statistic(np.ones((1, items)))[0])
    return None if np.isnan(value) else value
