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


def test_kappa_interval_resamples_whole_groups():
    from bineval_dspy.meta.agreement import kappa_interval

    groups = {"a": [("yes", "yes"), ("no", "no")], "b": [("yes", "no")], "c": [("yes", "yes"), ("yes", "yes")]}
    point, interval = kappa_interval(groups, resamples=200, seed=3)
    everything = [p for k in sorted(groups) for p in groups[k]]
    assert point == cohen_kappa([a for a, _ in everything], [b for _, b in everything])
    # the same draws by hand: whole groups with replacement, undefined draws (e.g. only "c") left out
    keys = sorted(groups)
    values = []
    for draw in np.random.default_rng(3).integers(0, 3, size=(200, 3)):
        sample = [p for k in draw for p in groups[keys[k]]]
        kappa = cohen_kappa([a for a, _ in sample], [b for _, b in sample])
        if kappa is not None:
            values.append(kappa)
    assert len(values) < 200  # some draws were undefined
    assert interval == pytest.approx(list(np.percentile(values, [2.5, 97.5])))
    assert kappa_interval({"c": [("yes", "yes")]}, resamples=10) == (None, [])
