"""Correlation of a metric with human scores, as the BinEval and G-Eval papers report it, with bootstrap intervals.

Summary level: per source document, the correlation across its outputs, then the mean over documents; a document
with fewer than two scored outputs, or where either side is constant, has no correlation and is skipped (and
counted); a cell resting on fewer than ``MIN_SUMMARY_DOCUMENTS`` documents keeps its value but gets no interval
and no place in the average over dimensions. System level: each system's mean score against its mean human score
over the same outputs, correlated across systems (how a metric ranks systems). Dataset level: one correlation over
all outputs pooled. All three come with a percentile bootstrap interval over documents: documents are drawn with
replacement (seeded, ``stats.bootstrap``) and the statistic recomputed on each draw.

Ties: Spearman on average ranks and Kendall tau-b, as scipy's ``spearmanr`` and ``kendalltau`` (which the G-Eval
and UniEval evaluations call) handle them.

Every statistic is computed on integer weights (how often each output is in a draw), so the point estimate (all
weights 1) and every bootstrap draw share one code path: a weighted Spearman, Kendall tau-b or Pearson equals the
plain one on the data with each output repeated ``weight`` times. Kendall builds n x n pair matrices over the
pooled outputs (a few MB at SummEval's 1,280; it is meant for meta-evaluation sets of that size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

from bineval_dspy.stats.bootstrap import percentile_interval, resample_counts

STATISTICS = ("spearman", "kendall", "pearson")
LEVELS = ("summary", "system", "dataset")
MIN_SUMMARY_DOCUMENTS = 5  # fewer: a summary-level mean too thin for an interval or the average
Values = Sequence[float] | np.ndarray
_DIGITS = 10  # system means are compared at this precision (floating-point noise must not break a tie)
_CHUNK = 256  # bootstrap draws evaluated together: bounds the (draws x outputs) work arrays


class Estimate(BaseModel):
    """A point value and its bootstrap percentile interval; None where undefined (constant scores, no draws)."""

    value: float | None
    low: float | None = None
    high: float | None = None


class LevelCorrelation(BaseModel):
    """Spearman, Kendall (tau-b) and Pearson at one level (summary, system or dataset)."""

    spearman: Estimate
    kendall: Estimate
    pearson: Estimate


class DimensionCorrelation(BaseModel):
    """How one method's scores for one dimension agree with the human scores."""

    pairs: int  # outputs with both a human and a method score
    documents: int  # documents with at least one such output
    skipped_documents: int  # summary level: fewer than two outputs, or a constant side
    systems: int = 0  # systems with at least one such output
    min_documents: int = MIN_SUMMARY_DOCUMENTS  # the summary level needs this many documents for an interval
    summary: LevelCorrelation
    system: LevelCorrelation | None = None  # None in results written before system level existed
    dataset: LevelCorrelation

    @property
    def summary_documents(self) -> int:
        """The documents the summary level rests on (those with a defined correlation)."""
        return self.documents - self.skipped_documents

    @property
    def too_few_documents(self) -> bool:
        """Whether the summary level rests on too few documents for an interval or the average."""
        return self.summary_documents < self.min_documents


# -- the statistics on weighted data ---------------------------------------------------------------------------------
def _as_weights(weights: np.ndarray | None, n: int) -> np.ndarray:
    w = np.ones((1, n)) if weights is None else np.asarray(weights, dtype=float)
    return w.reshape(1, n) if w.ndim == 1 else w


def _distinct(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per draw: the weight of each distinct value of ``x`` (draws x values), its index per output, and whether
    at least two distinct values have weight (else every correlation with ``x`` is undefined)."""
    _, index = np.unique(x, return_inverse=True)
    group = np.zeros((x.size, index.max() + 1 if x.size else 0))
    group[np.arange(x.size), index] = 1.0
    mass = w @ group
    return mass, index, (mass > 0).sum(axis=1) >= 2


def _pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted Pearson r per draw; ``x`` and ``y`` are per-output values or per-draw (draws x outputs)."""
    total = w.sum(axis=1, keepdims=True)
    dx = x - (w * x).sum(axis=1, keepdims=True) / total
    dy = y - (w * y).sum(axis=1, keepdims=True) / total
    cov, vx, vy = (w * dx * dy).sum(axis=1), (w * dx * dx).sum(axis=1), (w * dy * dy).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(cov / np.sqrt(vx * vy), -1.0, 1.0)


def _ranks(mass: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean of their positions) of every output, per draw, from the value weights."""
    through = np.cumsum(mass, axis=1)  # the rank of the last copy of each distinct value
    return (through - (mass - 1.0) / 2.0)[:, index]


def _pair_sum(w: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """sum_ij w_i w_j M_ij per draw."""
    return ((w @ matrix) * w).sum(axis=1)


def _kendall(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Kendall tau-b per draw: (concordant - discordant) / sqrt((n0 - ties_x)(n0 - ties_y)) over the pairs of the
    repeated data; two copies of one output are a pair tied on both sides."""
    sx, sy = np.sign(x[:, None] - x[None, :]), np.sign(y[:, None] - y[None, :])
    total = w.sum(axis=1)
    n0 = total * (total - 1) / 2
    score = _pair_sum(w, sx * sy) / 2
    ties_x = (_pair_sum(w, (sx == 0).astype(float)) - total) / 2
    ties_y = (_pair_sum(w, (sy == 0).astype(float)) - total) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(score / np.sqrt((n0 - ties_x) * (n0 - ties_y)), -1.0, 1.0)


def weighted_statistics(x: Values, y: Values, weights: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Spearman, Kendall tau-b and Pearson of ``x`` with ``y`` per row of ``weights`` (draws x outputs; None: one
    draw, all weights 1); NaN where either side has fewer than two distinct weighted values."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xs.shape != ys.shape or xs.ndim != 1:
        raise ValueError(f"need two equally long 1-d score lists, got shapes {xs.shape} and {ys.shape}")
    w = _as_weights(weights, xs.size)
    if xs.size < 2:
        return {name: np.full(w.shape[0], np.nan) for name in STATISTICS}
    mass_x, index_x, varied_x = _distinct(xs, w)
    mass_y, index_y, varied_y = _distinct(ys, w)
    defined = varied_x & varied_y
    values = {
        "spearman": _pearson(_ranks(mass_x, index_x), _ranks(mass_y, index_y), w),
        "kendall": _kendall(xs, ys, w),
        "pearson": _pearson(xs, ys, w),
    }
    return {name: np.where(defined, value, np.nan) for name, value in values.items()}


def _one(name: str, x: Sequence[float], y: Sequence[float]) -> float | None:
    value = float(weighted_statistics(x, y)[name][0])
    return None if np.isnan(value) else value


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson on average ranks); None when either side is constant."""
    return _one("spearman", x, y)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b (ties counted on each side, as scipy's default); None when either side is constant."""
    return _one("kendall", x, y)


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; None when either side is constant."""
    return _one("pearson", x, y)


# -- documents, levels and the bootstrap -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Draws:
    """Point values and bootstrap values (NaN where undefined) per (level, statistic), before summarizing."""

    point: dict[tuple[str, str], float]
    resampled: dict[tuple[str, str], np.ndarray]
    pairs: int
    documents: int
    skipped_documents: int
    systems: int = 0
    min_documents: int = MIN_SUMMARY_DOCUMENTS

    @property
    def too_few_documents(self) -> bool:
        """Whether the summary level rests on fewer than ``min_documents`` documents."""
        return self.documents - self.skipped_documents < self.min_documents


def _system_level(xs: np.ndarray, ys: np.ndarray, system_of: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """Per draw (rows of ``weights``, draws x outputs): the statistics of the systems' mean human and mean metric
    scores, over the systems with weight in that draw (a system with none is left out of that draw)."""
    group = np.zeros((xs.size, int(system_of.max()) + 1 if xs.size else 0))
    group[np.arange(xs.size), system_of] = 1.0
    mass = weights @ group
    present = mass > 0
    with np.errstate(invalid="ignore", divide="ignore"):  # rounded: equal means summed in another order stay tied
        mean_x = np.where(present, np.round((weights * xs) @ group / mass, _DIGITS), 0.0)
        mean_y = np.where(present, np.round((weights * ys) @ group / mass, _DIGITS), 0.0)
    out = {name: np.full(weights.shape[0], np.nan) for name in STATISTICS}
    for d in range(weights.shape[0]):
        if present[d].sum() >= 2:
            one = weighted_statistics(mean_x[d], mean_y[d], present[d].astype(float))
            for name in STATISTICS:
                out[name][d] = one[name][0]
    return out


def draws(
    human: Sequence[float | None],
    metric: Sequence[float | None],
    documents: Sequence[str],
    order: Sequence[str],
    counts: np.ndarray,
    systems: Sequence[str] | None = None,
    min_documents: int = MIN_SUMMARY_DOCUMENTS,
) -> Draws:
    """Summary-, system- and dataset-level statistics of one (method, dimension), on the data and every resample.

    Outputs where either score is None are left out. ``order`` lists every document of the run (the columns of
    ``counts``, from ``resample_counts``); a document without scored outputs contributes nothing. ``systems``
    names each output's system (None: one system, so the system level is undefined); a summary level resting on
    fewer than ``min_documents`` documents is marked too thin.
    """
    column = {doc: k for k, doc in enumerate(order)}
    named = list(systems) if systems is not None else [""] * len(documents)
    kept = [
        (column[d], h, m, s) for d, h, m, s in zip(documents, human, metric, named, strict=True) if h is not None and m is not None
    ]
    doc_of = np.array([k for k, _, _, _ in kept], dtype=np.int64)
    xs = np.array([h for _, h, _, _ in kept], dtype=float)
    ys = np.array([m for _, _, m, _ in kept], dtype=float)
    system_names = sorted({s for _, _, _, s in kept})
    system_of = np.array([system_names.index(s) for _, _, _, s in kept], dtype=np.int64)
    point: dict[tuple[str, str], float] = {}
    resampled: dict[tuple[str, str], np.ndarray] = {}

    per_doc = np.full((len(order), len(STATISTICS)), np.nan)
    present = sorted(set(doc_of.tolist()))
    for k in present:
        mine = doc_of == k
        stats = weighted_statistics(xs[mine], ys[mine])
        per_doc[k] = [stats[name][0] for name in STATISTICS]
    defined = ~np.isnan(per_doc[:, 0])
    for j, name in enumerate(STATISTICS):
        values = per_doc[defined, j]
        point["summary", name] = float(values.mean()) if values.size else np.nan
        used = counts * defined  # a drawn document counts as often as it was drawn
        with np.errstate(invalid="ignore", divide="ignore"):
            resampled["summary", name] = (used @ np.nan_to_num(per_doc[:, j])) / used.sum(axis=1)

    pooled = weighted_statistics(xs, ys)
    boot: dict[str, list[np.ndarray]] = {name: [] for name in STATISTICS}
    for start in range(0, counts.shape[0], _CHUNK):
        weights = counts[start : start + _CHUNK][:, doc_of].astype(float)
        empty = weights.sum(axis=1) == 0
        weights[empty] = 1.0  # a draw without scored outputs: computed on dummy weights, then set undefined
        chunk = weighted_statistics(xs, ys, weights) if xs.size else {n: np.full(len(weights), np.nan) for n in STATISTICS}
        for name in STATISTICS:
            boot[name].append(np.where(empty, np.nan, chunk[name]))
    for name in STATISTICS:
        point["dataset", name] = float(pooled[name][0])
        resampled["dataset", name] = np.concatenate(boot[name]) if boot[name] else np.zeros(0)

    by_system = _system_level(xs, ys, system_of, np.ones((1, xs.size)))
    system_boot = _system_level(xs, ys, system_of, counts[:, doc_of].astype(float))
    for name in STATISTICS:
        point["system", name] = float(by_system[name][0])
        resampled["system", name] = system_boot[name]
    skipped = len(present) - int(defined.sum())
    return Draws(point, resampled, pairs=len(kept), documents=len(present), skipped_documents=skipped, systems=len(system_names), min_documents=min_documents)


def estimate(value: float, resampled: np.ndarray, confidence: float) -> Estimate:
    """The point value with the percentile interval of its defined bootstrap values (the shared bootstrap's rule)."""
    interval = percentile_interval(value, resampled, confidence)
    return Estimate(value=interval.estimate, low=interval.low, high=interval.high)


def summarize(result: Draws, confidence: float) -> DimensionCorrelation:
    """The typed result of one (method, dimension)."""

    def level(name: str) -> LevelCorrelation:
        thin = name == "summary" and result.too_few_documents  # a value, but no interval: too few documents
        return LevelCorrelation(
            **{s: estimate(result.point[name, s], np.zeros(0) if thin else result.resampled[name, s], confidence) for s in STATISTICS}
        )

    return DimensionCorrelation(
        pairs=result.pairs,
        documents=result.documents,
        skipped_documents=result.skipped_documents,
        systems=result.systems,
        min_documents=result.min_documents,
        summary=level("summary"),
        system=level("system"),
        dataset=level("dataset"),
    )


def average(results: Sequence[Draws], confidence: float) -> dict[str, LevelCorrelation]:
    """The mean over dimensions (the papers' "avg" column) per level, with an interval from the same paired draws;
    undefined when any dimension is, and at summary level when any dimension rests on too few documents."""
    out = {}
    for name in LEVELS:
        thin = name == "summary" and any(r.too_few_documents for r in results)
        out[name] = LevelCorrelation(
            **{
                s: estimate(
                    np.nan if thin else float(np.mean([r.point[name, s] for r in results])),
                    np.mean([r.resampled[name, s] for r in results], axis=0),
                    confidence,
                )
                for s in STATISTICS
            }
        )
    return out


def correlate(
    human: Sequence[float | None],
    metric: Sequence[float | None],
    documents: Sequence[str],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    systems: Sequence[str] | None = None,
    min_documents: int = MIN_SUMMARY_DOCUMENTS,
) -> DimensionCorrelation:
    """Summary-, system- and dataset-level correlations of one metric with human scores, with bootstrap intervals."""
    order = sorted(set(documents))
    counts = resample_counts(len(order), resamples, seed)
    return summarize(draws(human, metric, documents, order, counts, systems, min_documents), confidence)
