"""Every correlation and bootstrap formula against scipy or values computed by hand, ties included."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bineval_dspy.meta.correlation import (
    average,
    correlate,
    draws,
    kendall_tau_b,
    pearson,
    resample_counts,
    spearman,
    summarize,
    weighted_statistics,
)

# Fixed data with ties on both sides (Likert-like human scores, 0/1-heavy metric scores).
HUMAN = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0, 5.0, 1.0, 2.0, 4.0]
METRIC = [0.0, 0.5, 0.0, 0.5, 1.0, 0.5, 1.0, 1.0, 0.75, 0.25, 0.5, 0.5]
SCIPY = {
    "spearman": lambda x, y: stats.spearmanr(x, y).statistic,
    "kendall": lambda x, y: stats.kendalltau(x, y).statistic,  # tau-b, scipy's default
    "pearson": lambda x, y: stats.pearsonr(x, y).statistic,
}
OURS = {"spearman": spearman, "kendall": kendall_tau_b, "pearson": pearson}


@pytest.mark.parametrize("name", OURS)
@pytest.mark.parametrize(
    "x, y",
    [
        (HUMAN, METRIC),
        ([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]),
        ([1, 1, 2, 2], [1, 2, 1, 2]),  # tied into independence
        ([3, 1, 2], [1, 3, 2]),
        ([1, 2, 3, 4], [8, 8, 1, 1]),
    ],
)
def test_statistics_match_scipy(name, x, y):
    assert OURS[name](x, y) == pytest.approx(SCIPY[name](x, y), abs=1e-12)


def test_by_hand():
    # x = 1 2 3, y = 1 3 2: ranks equal the values, so rho = r = 1 - 6 * (0 + 1 + 1) / (3 * 8) = 0.5;
    # pairs (1,2) and (1,3) concordant, (2,3) discordant: tau = (2 - 1) / 3.
    assert spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert pearson([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert kendall_tau_b([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    # ties: x = 1 1 2, y = 1 2 3. Pairs: (1,2) tied in x, (1,3) and (2,3) concordant:
    # tau-b = 2 / sqrt((3 - 1) * (3 - 0)) = 2 / sqrt(6); average ranks of x = 1.5 1.5 3, so rho = r(ranks) = sqrt(3)/2.
    assert kendall_tau_b([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / np.sqrt(6))
    assert spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(np.sqrt(3) / 2)


@pytest.mark.parametrize("name", OURS)
def test_a_constant_side_or_too_few_outputs_is_undefined(name):
    assert OURS[name]([1, 2, 3], [2, 2, 2]) is None
    assert OURS[name]([4, 4], [1, 2]) is None
    assert OURS[name]([1], [1]) is None and OURS[name]([], []) is None


def test_weights_equal_repeating_the_outputs():
    rng = np.random.default_rng(3)
    weights = rng.integers(0, 4, size=(20, len(HUMAN)))
    ours = weighted_statistics(HUMAN, METRIC, weights)
    for name in OURS:
        for w, value in zip(weights, ours[name]):
            x, y = np.repeat(HUMAN, w), np.repeat(METRIC, w)
            defined = len(set(x)) > 1 and len(set(y)) > 1
            assert (np.isnan(value) and not defined) or value == pytest.approx(SCIPY[name](x, y), abs=1e-12)


# -- summary and dataset levels ------------------------------------------------------------------------------------
DOCS = ["a", "a", "a", "b", "b", "b", "b", "c", "c", "d"]
H = [1, 2, 3, 1, 2, 3, 4, 3, 3, 5]  # c: the humans gave one score (constant); d: one output
M = [1, 3, 2, 4, 3, 2, 1, 1, 2, 0]


def test_summary_level_averages_per_document_and_counts_skipped_ones():
    result = correlate(H, M, DOCS, resamples=0)
    assert result.pairs == 10 and result.documents == 4 and result.skipped_documents == 2
    # a: rho = 0.5, tau = 1/3, r = 0.5 (by hand above); b: reversed, -1 for all three
    assert result.summary.spearman.value == pytest.approx((0.5 - 1) / 2)
    assert result.summary.kendall.value == pytest.approx((1 / 3 - 1) / 2)
    assert result.summary.pearson.value == pytest.approx((0.5 - 1) / 2)
    assert result.summary.spearman.low is None  # no resamples, no interval
    for name in OURS:
        assert getattr(result.dataset, name).value == pytest.approx(SCIPY[name](H, M), abs=1e-12)


def test_missing_scores_are_left_out():
    metric = [None, *M[1:]]
    result = correlate(H, metric, DOCS, resamples=0)
    assert result.pairs == 9
    assert result.summary.spearman.value == pytest.approx((spearman([2, 3], [3, 2]) - 1) / 2)  # a keeps 2 outputs: -1
    assert result.dataset.pearson.value == pytest.approx(stats.pearsonr(H[1:], M[1:]).statistic)


def test_every_document_constant_leaves_the_summary_level_undefined():
    result = correlate([1, 2, 3, 4], [1, 2, 3, 5], ["a", "b", "c", "d"], resamples=50)  # one output per document
    assert result.skipped_documents == 4 and result.summary.kendall.value is None
    assert result.dataset.kendall.value == pytest.approx(1.0)


# -- the bootstrap -------------------------------------------------------------------------------------------------
def test_resample_counts_draw_documents_with_replacement_seeded():
    counts = resample_counts(5, 300, seed=11)
    assert counts.shape == (300, 5) and (counts.sum(axis=1) == 5).all() and (counts >= 0).all()
    assert (counts == resample_counts(5, 300, seed=11)).all()
    assert (counts != resample_counts(5, 300, seed=12)).any()
    assert (counts == 0).any() and (counts > 1).any()  # with replacement
    drawn = np.random.default_rng(11).integers(0, 5, size=(300, 5))
    assert (counts == np.stack([np.bincount(row, minlength=5) for row in drawn])).all()


def expanded(counts_row: np.ndarray, order: list[str]) -> tuple[list[list[int]], list[list[int]], list[float], list[float]]:
    """The resampled data itself: every document's outputs, as often as it was drawn."""
    per_doc_h, per_doc_m, pooled_h, pooled_m = [], [], [], []
    for doc, times in zip(order, counts_row):
        h = [x for d, x in zip(DOCS, H) if d == doc]
        m = [x for d, x in zip(DOCS, M) if d == doc]
        for _ in range(times):
            per_doc_h.append(h)
            per_doc_m.append(m)
            pooled_h += h
            pooled_m += m
    return per_doc_h, per_doc_m, pooled_h, pooled_m


def test_bootstrap_intervals_are_percentiles_of_the_statistic_on_resampled_documents():
    order = sorted(set(DOCS))
    counts = resample_counts(len(order), 200, seed=5)
    result = summarize(draws(H, M, DOCS, order, counts, min_documents=1), confidence=0.9)
    for name in OURS:
        summary, dataset = [], []
        for row in counts:
            per_doc_h, per_doc_m, pooled_h, pooled_m = expanded(row, order)
            defined = [SCIPY[name](h, m) for h, m in zip(per_doc_h, per_doc_m) if len(set(h)) > 1 and len(set(m)) > 1]
            if defined:
                summary.append(np.mean(defined))
            if len(set(pooled_h)) > 1 and len(set(pooled_m)) > 1:
                dataset.append(SCIPY[name](pooled_h, pooled_m))
        for level, values in (("summary", summary), ("dataset", dataset)):
            estimate = getattr(getattr(result, level), name)
            assert [estimate.low, estimate.high] == pytest.approx(list(np.percentile(values, [5, 95])), abs=1e-12)
    assert result == correlate(H, M, DOCS, resamples=200, confidence=0.9, seed=5, min_documents=1)


def test_the_average_over_dimensions_uses_the_same_draws():
    order = sorted(set(DOCS))
    counts = resample_counts(len(order), 100, seed=2)
    first = draws(H, M, DOCS, order, counts, min_documents=1)
    second = draws(H, list(reversed(M)), DOCS, order, counts, min_documents=1)
    mean = average([first, second], confidence=0.95)
    for level in ("summary", "dataset"):
        for name in OURS:
            got = getattr(mean[level], name)
            assert got.value == pytest.approx((first.point[level, name] + second.point[level, name]) / 2)
            paired = (first.resampled[level, name] + second.resampled[level, name]) / 2
            paired = paired[~np.isnan(paired)]
            assert [got.low, got.high] == pytest.approx(list(np.percentile(paired, [2.5, 97.5])))
