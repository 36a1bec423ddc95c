"""One seeded, grouped, paired bootstrap for every interval the library reports.

Items (test prompts, judged questions, summaries) belong to groups (a prompt, an instruction, a source document);
a resample draws whole groups with replacement, so items that share a group move together. One ``Bootstrap``
holds one set of draws, and every statistic computed through it sees the same resampled groups: two methods'
intervals, and the interval of their difference, are paired. A statistic is a function of item weights (how often
each item's group was drawn), so means, ratios of sums and correlations all run through one code path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel

Statistic = Callable[[np.ndarray], np.ndarray]  # item weights (draws x items) -> one value per draw (NaN: undefined)
DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95


class Interval(BaseModel):
    """A point estimate and its percentile bootstrap interval; ``None`` where undefined."""

    estimate: float | None
    low: float | None = None
    high: float | None = None

    @property
    def excludes_zero(self) -> bool:
        """Whether the whole interval lies on one side of zero (the estimate is distinguishable from noise)."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)

    def text(self, digits: int = 3, signed: bool = False) -> str:
        """``0.153 [0.107, 0.220]`` (``+0.153 ...`` when ``signed``: a difference), or ``n/a`` when undefined."""
        if self.estimate is None:
            return "n/a"
        point = f"{self.estimate:+.{digits}f}" if signed else f"{self.estimate:.{digits}f}"
        if self.low is None or self.high is None:
            return point
        return f"{point} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def resample_counts(groups: int, resamples: int, seed: int) -> np.ndarray:
    """How often each group is drawn in each resample (resamples x groups), seeded."""
    if resamples == 0 or groups == 0:
        return np.zeros((resamples, groups), dtype=np.int64)
    drawn = np.random.default_rng(seed).integers(0, groups, size=(resamples, groups))
    offsets = np.arange(resamples)[:, None] * groups
    return np.bincount((drawn + offsets).ravel(), minlength=resamples * groups).reshape(resamples, groups)


def percentile_interval(point: float, values: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """``point`` with the percentile interval of the defined (non-NaN) resampled ``values``."""
    if point is None or np.isnan(point):
        return Interval(estimate=None)
    valid = values[~np.isnan(values)]
    if not valid.size:
        return Interval(estimate=float(point))
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(valid, [tail, 100.0 - tail])
    return Interval(estimate=float(point), low=float(low), high=float(high))


@dataclass
class Bootstrap:
    """Resampled groups for a fixed list of items; ``groups[i]`` names item i's group (items may share one)."""

    groups: Sequence[str]
    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0
    confidence: float = DEFAULT_CONFIDENCE
    _weights: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        order = sorted(set(self.groups))
        column = {g: k for k, g in enumerate(order)}
        index = np.array([column[g] for g in self.groups], dtype=np.int64)
        counts = resample_counts(len(order), self.resamples, self.seed)
        self._weights = counts[:, index].astype(float) if index.size else np.zeros((self.resamples, 0))

    @property
    def items(self) -> int:
        return len(self.groups)

    def interval(self, statistic: Statistic) -> Interval:
        """The statistic on the data (every weight 1) with its interval over the shared draws."""
        point = float(statistic(np.ones((1, self.items)))[0])
        with np.errstate(invalid="ignore", divide="ignore"):
            values = statistic(self._weights) if self.resamples else np.zeros(0)
        return percentile_interval(point, np.asarray(values, dtype=float), self.confidence)

    def mean(self, values: Sequence[float]) -> Interval:
        """The mean of per-item values."""
        return self.interval(mean_of(values))

    def difference(self, a: Sequence[float], b: Sequence[float]) -> Interval:
        """mean(a) - mean(b) over the same items: the paired difference."""
        return self.interval(difference_of(mean_of(a), mean_of(b)))


def mean_of(values: Sequence[float] | np.ndarray) -> Statistic:
    """The weighted mean of per-item values."""
    x = np.asarray(values, dtype=float)
    return ratio_of(x, np.ones_like(x))


def ratio_of(numerator: Sequence[float] | np.ndarray, denominator: Sequence[float] | np.ndarray) -> Statistic:
    """sum(w * numerator) / sum(w * denominator): e.g. instructions followed over instructions given."""
    num, den = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)

    def statistic(weights: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            total = weights @ den
            return np.where(total > 0, (weights @ num) / np.where(total > 0, total, 1.0), np.nan)

    return statistic


def difference_of(a: Statistic, b: Statistic) -> Statistic:
    """a - b on the same draws."""
    return lambda weights: a(weights) - b(weights)
