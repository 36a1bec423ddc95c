"""Agreement and Cohen's kappa against values computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from bineval_dspy.meta.agreement import agreement, cohen_kappa


def test_kappa_by_hand():
    target = ["yes", "yes", "no", "no", "yes", "no"]
    reference = ["yes", "no", "no", "no", "yes", "yes"]
    # p_o = 4/6; p_e = (3/6 * 3/6) + (3/6 * 3/6) = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3
    assert cohen_kappa(target, reference) == pytest.approx(1 / 3)
    assert agreement(target, reference) == pytest.approx(4 / 6)


def test_kappa_edge_cases():
    assert cohen_kappa(["yes"] * 4, ["yes"] * 4) is None  # chance agreement 1: undefined
    assert cohen_kappa(["yes"] * 4, ["yes", "no", "yes", "no"]) == pytest.approx(0.0)
    assert cohen_kappa(["yes", "no"], ["no", "yes"]) == pytest.approx(-1.0)
    assert cohen_kappa([], []) is None and agreement([], []) is None
    assert agreement(["unanswered", "yes"], ["yes", "yes"]) == 0.5
    with pytest.raises(ValueError, match="yes/no"):
        cohen_kappa(["unanswered"], ["yes"])
    with pytest.raises(ValueError, match="target answers"):
        agreement(["yes"], [])


def test_kappa_statistic_equals_kappa_on_the_repeated_pairs():
    from bineval_dspy.meta.agreement import kappa_statistic

    pairs = [("yes", "yes"), ("no", "no"), ("yes", "no"), ("no", "yes"), ("yes", "yes")]
    weights = np.array([[1, 1, 1, 1, 1], [3, 0, 2, 1, 0], [0, 2, 0, 0, 1]], dtype=float)
    values = kappa_statistic(pairs)(weights)
    for row, value in zip(weights, values):
        repeated = [p for p, w in zip(pairs, row) for _ in range(int(w))]
        assert value == pytest.approx(cohen_kappa([a for a, _ in repeated], [b for _, b in repeated]))
    only_agreeing = kappa_statistic([("yes", "yes")])(np.ones((1, 1)))
    assert np.isnan(only_agreeing[0])  # chance agreement 1: undefined, not 0 or 1


def test_kappa_interval_resamples_whole_groups():
    from bineval_dspy.meta.agreement import kappa_interval

    groups = {"a": [("yes", "yes"), ("no", "no")], "b": [("yes", "no")], "c": [("yes", "yes"), ("yes", "yes")]}
    interval = kappa_interval(groups, resamples=400, seed=3)
    everything = [p for k in sorted(groups) for p in groups[k]]
    assert interval.estimate == cohen_kappa([a for a, _ in everything], [b for _, b in everything])
    assert interval.low is not None and interval.high is not None
    assert -1.0 <= interval.low < interval.estimate < interval.high <= 1.0
    assert kappa_interval(groups, resamples=400, seed=3) == interval  # seeded
    # whole groups move together: with one group there is nothing to resample
    single = kappa_interval({"a": groups["a"]}, resamples=50)
    assert single.low == single.high == single.estimate == 1.0
    assert kappa_interval({"c": [("yes", "yes")]}, resamples=10).estimate is None
