"""The shared bootstrap: whole groups resampled, one set of draws for paired statistics, seeded."""

from __future__ import annotations

import numpy as np
import pytest

from bineval_dspy.stats.bootstrap import Bootstrap, Interval, difference_of, mean_of, ratio_of, resample_counts


def test_a_resample_draws_whole_groups_with_replacement():
    counts = resample_counts(4, 500, seed=1)
    assert counts.shape == (500, 4) and (counts.sum(axis=1) == 4).all()
    assert (counts == resample_counts(4, 500, seed=1)).all() and (counts != resample_counts(4, 500, seed=2)).any()
    boot = Bootstrap(["a", "a", "b", "c"], resamples=300, seed=0)
    weights = boot._weights
    assert (weights[:, 0] == weights[:, 1]).all()  # the two items of group "a" always move together


def test_statistics_are_the_plain_ones_on_the_repeated_items():
    values = [0.0, 1.0, 1.0, 0.5]
    weights = np.array([[2, 0, 1, 1], [1, 1, 1, 1]], dtype=float)
    repeated = [[v for v, w in zip(values, row) for _ in range(int(w))] for row in weights]
    assert mean_of(values)(weights) == pytest.approx([np.mean(r) for r in repeated])
    followed, given = [1, 2, 0, 3], [1, 3, 2, 3]
    assert ratio_of(followed, given)(weights)[0] == pytest.approx((2 * 1 + 0 + 3) / (2 * 1 + 2 + 3))
    assert np.isnan(ratio_of([1.0], [0.0])(np.ones((1, 1))))[0]  # nothing given: undefined, not 0


def test_a_paired_difference_is_narrower_than_its_parts():
    rng = np.random.default_rng(0)
    base = rng.random(60)
    better = base + 0.05  # the same items, a constant gain: a paired interval sees no noise at all
    boot = Bootstrap([str(i) for i in range(60)], resamples=500, seed=3)
    gain = boot.difference(list(better), list(base))
    assert gain.estimate == pytest.approx(0.05) and gain.low == pytest.approx(0.05) and gain.high == pytest.approx(0.05)
    assert gain.excludes_zero
    alone = boot.mean(list(base))
    assert alone.low is not None and alone.high is not None and alone.high - alone.low > 0.05
    assert boot.interval(difference_of(mean_of(base), mean_of(base))).text(signed=True) == "+0.000 [0.000, 0.000]"


def test_interval_text_and_undefined_values():
    assert Interval(estimate=None).text() == "n/a"
    assert Interval(estimate=0.1534, low=0.1, high=0.2).text() == "0.153 [0.100, 0.200]"
    assert not Interval(estimate=0.1, low=-0.1, high=0.3).excludes_zero
    empty = Bootstrap([], resamples=10).mean([])
    assert empty.estimate is None
