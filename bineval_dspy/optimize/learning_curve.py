"""How many labels: the probe judge trained on 100, 250, 500, 1,000 and all of its labels, each head measured on the
same held-out rows, so a user with 200 labels learns what to expect before labelling more.

Every size runs calibration as a user with that many labels would (the candidate search included), on whole tasks:
a size's rows are the first tasks of a seeded shuffle, the last one cut to land on the size, and no task is ever on
both the training and the held-out side. Held out is the config's test file when it gives one, else grouped folds
of the training rows (each row predicted by heads that never saw its task). Figures get intervals over the held-out
tasks; with ``repeats``, a size's figures are the mean over heads trained on different draws of its tasks.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from bineval_dspy.core.errors import InputError
from bineval_dspy.judges.probe import LabeledExample, grouped_folds
from bineval_dspy.stats.bootstrap import Bootstrap, Interval, Statistic, mean_of
from bineval_dspy.stats.classification import auroc_statistic, balanced_accuracy_statistic, kappa_statistic

SIZES = (100, 250, 500, 1000)
Scorer = Callable[[Sequence[LabeledExample]], tuple[np.ndarray, list[str]]]  # P(yes) and the answer of each example
Fit = Callable[[Sequence[LabeledExample], int], Scorer]  # a head trained on the rows with a seed, as its scorer


class CurveSettings(BaseModel):
    """The learning curve's label budgets (all labels is always a point) and how its held-out rows are found."""

    model_config = ConfigDict(extra="forbid")

    sizes: list[int] = Field(default=list(SIZES), description="label budgets below all (empty: no learning curve)")
    repeats: int = Field(default=1, ge=1, description="heads per size below all, each on another draw of tasks")
    folds: int = Field(default=3, ge=2, description="without a test file: grouped held-out folds of the training rows")

    @model_validator(mode="after")
    def _sizes(self) -> CurveSettings:
        if any(s < 2 for s in self.sizes):
            raise ValueError("sizes: each size is a number of labels, 2 or more")
        return self


class CurvePoint(BaseModel):
    """The heads trained on ``labels`` rows, on the held-out rows."""

    labels: int  # training rows per head (with folds: the mean over folds at "all")
    all: bool = False  # every training row (of the fold's training side)
    heads: int = 0  # heads trained and measured
    skipped: list[str] = Field(default_factory=list)  # heads that could not be trained, and why
    kappa: Interval = Field(default_factory=lambda: Interval(estimate=None))
    auroc: Interval = Field(default_factory=lambda: Interval(estimate=None))
    balanced_accuracy: Interval = Field(default_factory=lambda: Interval(estimate=None))
    agreement: Interval = Field(default_factory=lambda: Interval(estimate=None))

    def text(self) -> str:
        name = f"all {self.labels}" if self.all else str(self.labels)
        if not self.heads:
            return f"{name:>9} labels: not measured ({'; '.join(self.skipped)})"
        repeats = f" (mean of {self.heads} heads)" if self.heads > 1 and not self.all else ""
        return (
            f"{name:>9} labels: kappa {self.kappa.text()}, AUROC {self.auroc.text()}, balanced accuracy {self.balanced_accuracy.text()}{repeats}"
        )


class ReliabilityBin(BaseModel):
    """Held-out rows whose P(yes) falls in [low, high): their mean P(yes) against their observed yes rate."""

    low: float
    high: float
    rows: int
    mean_p: float
    yes_rate: float


class LearningCurve(BaseModel):
    """``results.json``'s ``curve``: one point per size, and the all-labels head's reliability and confusion."""

    held_out: Literal["test file", "grouped folds"]
    held_out_rows: int
    held_out_tasks: int
    folds: int | None = None  # with grouped folds
    dropped: list[int] = Field(default_factory=list)  # sizes at or above the labels available, not run
    points: list[CurvePoint] = Field(default_factory=list)
    reliability: list[ReliabilityBin] = Field(default_factory=list)  # the all-labels head on the held-out rows
    confusion: dict[str, int] = Field(default_factory=dict)  # "yes/no": the head answered yes, the reference no

    def lines(self) -> list[str]:
        where = "the test file" if self.held_out == "test file" else f"{self.folds} grouped held-out folds of the training rows"
        head = f"learning curve on {self.held_out_rows} held-out rows of {self.held_out_tasks} task(s) ({where})"
        dropped = f"; sizes {', '.join(map(str, self.dropped))} dropped (not that many labels)" if self.dropped else ""
        return [head + dropped + ":", *("  " + p.text() for p in self.points)]


def subsample(examples: Sequence[LabeledExample], size: int, seed: int) -> list[LabeledExample]:
    """``size`` rows of whole tasks (the last one cut to fit), the tasks drawn in a seeded shuffle."""
    by_task: dict[str, list[LabeledExample]] = {}
    for e in examples:
        by_task.setdefault(e.group, []).append(e)
    names = sorted(by_task)
    random.Random(seed).shuffle(names)
    out: list[LabeledExample] = []
    for name in names:
        if len(out) >= size:
            break
        out.extend(by_task[name][: size - len(out)])
    return out


def sides(train: Sequence[LabeledExample], test: Sequence[LabeledExample], folds: int, seed: int) -> list[tuple[list[LabeledExample], list[int]]]:
    """Each training side with the indices of its held-out rows (into ``test``, else into ``train``)."""
    if test:
        return [(list(train), list(range(len(test))))]
    fold_of = grouped_folds([e.group for e in train], folds, seed)
    return [([e for e, f in zip(train, fold_of) if f != k], [i for i, f in enumerate(fold_of) if f == k]) for k in range(folds) if (fold_of == k).any()]


def learning_curve(
    train: Sequence[LabeledExample], test: Sequence[LabeledExample], fit: Fit, settings: CurveSettings, *, seed: int = 0,
    full: Scorer | None = None, advance: Callable[[], None] = lambda: None,
) -> LearningCurve:
    """The curve: a point per size below the labels available, and all of them. ``full``: the head already trained on
    every training row, reused as the all-labels point when held out is a test file. ``advance`` is called after each
    head is trained."""
    held = list(test) if test else list(train)
    parts = sides(train, test, settings.folds, seed)
    available = min(len(rows) for rows, _ in parts)
    curve = LearningCurve(
        held_out="test file" if test else "grouped folds", held_out_rows=len(held), held_out_tasks=len({e.group for e in held}),
        folds=None if test else len(parts), dropped=sorted(s for s in set(settings.sizes) if s >= available),
    )
    refs = [e.reference for e in held]
    boot = Bootstrap([e.group for e in held], 1000, seed)
    for size in [*sorted(s for s in set(settings.sizes) if s < available), None]:
        point = CurvePoint(labels=size or round(sum(len(rows) for rows, _ in parts) / len(parts)), all=size is None)
        runs: list[tuple[np.ndarray, list[str]]] = []
        for r in range(1 if size is None else settings.repeats):
            p, answers = np.zeros(len(held)), [""] * len(held)
            try:
                for rows, indices in parts:
                    reused = size is None and bool(test) and full is not None  # the run's own head: none trained here
                    scorer = full if reused and full is not None else fit(rows if size is None else subsample(rows, size, seed + r), seed + r)
                    got_p, got = scorer([held[i] for i in indices])
                    for i, value, answer in zip(indices, got_p, got):
                        p[i], answers[i] = value, answer
                    if not reused:
                        advance()
            except InputError as exc:  # too few tasks or one answer only in this draw: said, never a figure
                point.skipped.append(f"draw {r + 1}: {exc}")
                continue
            runs.append((p, answers))
        point.heads = len(runs)
        if runs:
            point.kappa = boot.interval(_averaged([kappa_statistic(list(zip(a, refs))) for _, a in runs]))
            point.auroc = boot.interval(_averaged([auroc_statistic(list(p), refs) for p, _ in runs]))
            point.balanced_accuracy = boot.interval(_averaged([balanced_accuracy_statistic(a, refs) for _, a in runs]))
            point.agreement = boot.interval(_averaged([mean_of([float(x == y) for x, y in zip(a, refs)]) for _, a in runs]))
            if size is None:
                curve.reliability, curve.confusion = reliability(runs[0][0], refs), confusion(runs[0][1], refs)
        curve.points.append(point)
    return curve


def fits_needed(train: Sequence[LabeledExample], test: Sequence[LabeledExample], settings: CurveSettings, seed: int, full: bool) -> int:
    """How many heads ``learning_curve`` trains (its progress bar's total)."""
    parts = sides(train, test, settings.folds, seed)
    available = min(len(rows) for rows, _ in parts)
    below = len({s for s in settings.sizes if s < available})
    return (below * settings.repeats + (0 if test and full else 1)) * len(parts)


def _averaged(statistics: list[Statistic]) -> Statistic:
    """The mean of several heads' statistics on the same draws."""
    if len(statistics) == 1:
        return statistics[0]

    def statistic(weights: np.ndarray) -> np.ndarray:
        stacked = np.stack([s(weights) for s in statistics])
        counts = (~np.isnan(stacked)).sum(axis=0)
        return np.where(counts > 0, np.nansum(stacked, axis=0) / np.maximum(counts, 1), np.nan)

    return statistic


def reliability(p: np.ndarray, references: Sequence[str], bins: int = 10) -> list[ReliabilityBin]:
    """The reliability diagram's bins: P(yes) in tenths, each non-empty bin's mean P(yes) and observed yes rate."""
    y = np.array([r == "yes" for r in references], dtype=float)
    index = np.minimum((p * bins).astype(int), bins - 1)
    return [
        ReliabilityBin(low=k / bins, high=(k + 1) / bins, rows=int((index == k).sum()), mean_p=float(p[index == k].mean()), yes_rate=float(y[index == k].mean()))
        for k in range(bins) if (index == k).any()
    ]


def confusion(answers: Sequence[str], references: Sequence[str]) -> dict[str, int]:
    """Counts of "answer/reference" pairs: "yes/no" is a yes where the reference said no."""
    return {f"{a}/{r}": sum(x == a and y == r for x, y in zip(answers, references)) for a in ("yes", "no") for r in ("yes", "no")}
