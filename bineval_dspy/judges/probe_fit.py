"""The probe's head: which features it reads, how it is chosen, and where its threshold sits.

Features (``FeatureSpec``) are the states of one or more layers, each pooled one or more ways (the last token, the
mean over the output's tokens, the mean over the question's), with or without the yes/no logit gap. A head
(``PooledHead``) is one class-balanced logistic regression over the concatenated features, or the average of several
single-layer ones' P(yes) (an ensemble of layers recovers signal a single layer misses).

Everything is chosen on grouped out-of-fold predictions over the training rows (a task's questions never on both
sides of a fold): first single layers by each pooling, then the best pooling's top layers concatenated or averaged,
then the best without the gap; the out-of-fold P(yes) of the chosen candidate are calibrated (Platt) and the threshold
placed on the calibrated ones (``expected_kappa_threshold``), per dimension where the folds hold enough of both
answers.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.settings import optional
from bineval_dspy.lm.hidden import Reading
from bineval_dspy.stats.classification import auroc_statistic, point

Pooling = Literal["last", "output", "question"]
POOLINGS: tuple[Pooling, ...] = ("last", "output", "question")
MIN_PER_ANSWER = 20  # out-of-fold rows of each answer a dimension needs for a threshold of its own


class FeatureSpec(BaseModel):
    """What a head reads of a reading: ``layers`` x ``pooling`` states concatenated, then the gap if ``gap``."""

    model_config = ConfigDict(extra="forbid")

    layers: list[int] = Field(min_length=1)
    pooling: list[Pooling] = Field(default=["last"], min_length=1)
    gap: bool = True

    def matrix(self, readings: Sequence[Reading]) -> np.ndarray:
        """One row of features per reading (a reading without a span this spec pools is an error, never zeros)."""
        rows = []
        for r in readings:
            parts = [r.states(p)[layer] for p in self.pooling for layer in self.layers]
            rows.append(np.concatenate([*parts, [r.gap] if self.gap else []]))
        return np.array(rows, dtype=np.float64)

    def name(self) -> str:
        return f"layer{'s' if len(self.layers) > 1 else ''} {'+'.join(map(str, self.layers))} {'+'.join(self.pooling)}{' +gap' if self.gap else ''}"


class Linear(BaseModel):
    """One logistic regression on standardized features."""

    model_config = ConfigDict(extra="forbid")

    features: FeatureSpec
    mean: list[float]
    scale: list[float]
    weights: list[float]
    bias: float

    def p_yes(self, readings: Sequence[Reading]) -> np.ndarray:
        x = (self.features.matrix(readings) - np.array(self.mean)) / np.array(self.scale)
        return sigmoid(x @ np.array(self.weights) + self.bias)


class Platt(BaseModel):
    """P(yes) recalibrated as sigmoid(a * logit(p) + b), fitted on out-of-fold predictions at the natural base rate
    (the head's class-balanced loss leaves its P(yes) centred on 0.5, not on the rate of yes)."""

    a: float
    b: float

    def __call__(self, p: np.ndarray) -> np.ndarray:
        return sigmoid(self.a * _logit(p) + self.b)


class PooledHead(BaseModel):
    """A head over pooled features: its members' mean P(yes) (one member: its own), calibrated, and yes exactly when
    the calibrated P(yes) reaches the threshold of the question's dimension (``thresholds``) or else ``threshold``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["pooled"] = "pooled"
    strength: float  # C: inverse L2 strength every member was fitted with
    members: list[Linear] = Field(min_length=1)
    calibration: Platt | None = None
    threshold: float
    thresholds: dict[str, float] = Field(default_factory=dict, description="per dimension, where its folds held enough of both answers")

    def p_yes(self, readings: Sequence[Reading]) -> np.ndarray:
        p = np.mean([m.p_yes(readings) for m in self.members], axis=0)
        return self.calibration(p) if self.calibration is not None else p

    def threshold_for(self, dimension: str | None) -> float:
        return self.thresholds.get(dimension or "", self.threshold)

    def describe(self) -> str:
        spec = self.members[0].features
        if len(self.members) == 1:
            return spec.name()
        layers = "+".join(str(m.features.layers[0]) for m in self.members)
        return f"average of layers {layers} {'+'.join(spec.pooling)}{' +gap' if spec.gap else ''}"


class Candidate(BaseModel):
    """One candidate head on the training rows' out-of-fold predictions (``layer``: its first layer; ``features``:
    what it reads, for heads other than one layer's last token with the gap)."""

    layer: int
    strength: float
    auroc: float | None
    features: str | None = optional()


def default_layers(depth: int) -> list[int]:
    """Four layers spread over 40-75% of the depth, and the last: probes read best in the middle, which one is found."""
    low, high = round(0.4 * depth), round(0.75 * depth)
    return sorted({*(round(v) for v in np.linspace(low, high, 4)), depth})


def search(
    readings: Sequence[Reading],
    y: np.ndarray,
    groups: Sequence[str],
    *,
    layers: Sequence[int],
    poolings: Sequence[Pooling],
    strengths: Sequence[float],
    folds: int,
    seed: int,
    combine: bool = True,
) -> tuple[tuple[list[FeatureSpec], float, np.ndarray], list[Candidate]]:
    """The best candidate by out-of-fold AUROC ((its members' specs, C, out-of-fold P(yes))) and every candidate
    tried: single layers by each pooling at every strength, then at the best single's strength (``combine``) the best
    pooling's top 2-4 layers concatenated and averaged, then the best candidate without the gap (the later stages
    at one strength keep the search a few hundred fits on two cores)."""
    fold_of = grouped_folds(groups, folds, seed)
    refs = ["yes" if v else "no" for v in y]
    tried: list[tuple[float, list[FeatureSpec], float, np.ndarray]] = []
    candidates: list[Candidate] = []

    def attempt(specs: list[FeatureSpec], strengths: Sequence[float] = strengths) -> None:
        matrices = [s.matrix(readings) for s in specs]
        for strength in strengths:
            oof = np.mean([out_of_fold(x, y, fold_of, strength) for x in matrices], axis=0)
            auc = point(auroc_statistic(list(oof), refs), len(y))
            plain = len(specs) == 1 and specs[0] == FeatureSpec(layers=specs[0].layers[:1])
            name = None if plain else (specs[0].name() if len(specs) == 1 else f"average of {len(specs)}: " + ", ".join(s.name() for s in specs))
            candidates.append(Candidate(layer=specs[0].layers[0], strength=strength, auroc=auc, features=name))
            if auc is not None:
                tried.append((auc, specs, strength, oof))

    singles = [[p] for p in poolings]
    for pooling in singles:
        for layer in layers:
            attempt([FeatureSpec(layers=[layer], pooling=pooling)])  # type: ignore[list-item]
    if not tried:
        raise InputError("probe training data: no fold held both answers; give more tasks")
    chosen = [max(tried, key=lambda t: t[0])[2]]
    if combine and len(layers) > 1:
        best_pooling = max(tried, key=lambda t: t[0])[1][0].pooling
        by_layer: dict[int, float] = {}
        for auc, specs, _, _ in tried:
            if len(specs) == 1 and specs[0].pooling == best_pooling:
                by_layer[specs[0].layers[0]] = max(auc, by_layer.get(specs[0].layers[0], -1.0))
        ranked = sorted(by_layer, key=lambda layer: -by_layer[layer])
        for k in range(2, min(4, len(ranked)) + 1):
            top = sorted(ranked[:k])
            attempt([FeatureSpec(layers=top, pooling=best_pooling)], chosen)
            attempt([FeatureSpec(layers=[layer], pooling=best_pooling) for layer in top], chosen)
    best = max(tried, key=lambda t: t[0])
    attempt([s.model_copy(update={"gap": False}) for s in best[1]], [best[2]])
    _, specs, strength, oof = max(tried, key=lambda t: t[0])
    return (specs, strength, oof), candidates


def out_of_fold(x: np.ndarray, y: np.ndarray, fold_of: np.ndarray, strength: float) -> np.ndarray:
    """Every row's P(yes) from the head fitted on the other folds."""
    oof = np.zeros(len(y))
    for k in sorted(set(fold_of.tolist())):
        held = fold_of == k
        if len(set(y[~held].tolist())) < 2:
            oof[held] = y[~held].mean()
            continue
        oof[held] = fit_linear(x[~held], y[~held], strength).predict(x[held])
    return oof


def grouped_folds(groups: Sequence[str], folds: int, seed: int) -> np.ndarray:
    """A fold per row, whole groups together, groups dealt round-robin after a seeded shuffle."""
    names = sorted(set(groups))
    random.Random(seed).shuffle(names)
    fold = {name: k % folds for k, name in enumerate(names)}
    return np.array([fold[g] for g in groups])


def fit_platt(p: np.ndarray, y: np.ndarray) -> Platt:
    """Platt scaling of ``p`` against ``y`` by Newton's method on the two parameters (a tiny ridge keeps it finite
    when ``p`` separates ``y``)."""
    z = np.column_stack([_logit(p), np.ones(len(p))])
    theta = np.array([1.0, 0.0])
    for _ in range(50):
        q = sigmoid(z @ theta)
        grad = z.T @ (q - y) + 1e-3 * theta
        hess = (z.T * (q * (1 - q))) @ z + 1e-3 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        theta = theta - step
        if np.abs(step).max() < 1e-8:
            break
    return Platt(a=float(theta[0]), b=float(theta[1]))


def expected_kappa(q: np.ndarray, answers: np.ndarray) -> float:
    """Cohen's kappa of ``answers`` (booleans) expected when each row is yes with its calibrated probability ``q``."""
    n = len(q)
    tp, fp = float(q[answers].sum()), float((1 - q[answers]).sum())
    fn, tn = float(q[~answers].sum()), float((1 - q[~answers]).sum())
    observed = (tp + tn) / n
    chance = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / n**2
    return (observed - chance) / (1 - chance) if chance < 1 else 0.0


def expected_kappa_threshold(q: np.ndarray) -> float:
    """The rule: the cut on calibrated P(yes) ``q`` that maximizes the kappa expected under ``q`` itself. The labels
    enter only through the calibration (and so through the base rate it carries), so the cut follows the shape of the
    calibrated scores rather than the few rows near it that a kappa over labels chases (ties: the cut nearest the
    median)."""
    cuts = np.unique(np.round(q, 4))
    scored = [(expected_kappa(q, q >= t), -abs(float(t) - float(np.median(q))), float(t)) for t in cuts]
    return max(scored)[2] if scored else 0.5


def place_thresholds(q: np.ndarray, y: np.ndarray, dimensions: Sequence[str | None]) -> tuple[float, dict[str, float]]:
    """The global threshold by ``expected_kappa_threshold``, and one per dimension whose rows hold at least
    ``MIN_PER_ANSWER`` of each answer (the others use the global one)."""
    overall = expected_kappa_threshold(q)
    own: dict[str, float] = {}
    dims = np.array([d or "" for d in dimensions])
    for d in sorted(set(dims.tolist()) - {""}):
        rows = dims == d
        if min(int(y[rows].sum()), int((1 - y[rows]).sum())) >= MIN_PER_ANSWER:
            own[d] = expected_kappa_threshold(q[rows])
    return overall, own


def best_threshold(p: np.ndarray, y: np.ndarray) -> float:
    """The P(yes) cut with the highest Cohen's kappa against labels (ties: the one nearest 0.5): a diagnostic of the
    best possible, never the rule a head is saved with."""
    from bineval_dspy.stats.classification import kappa_statistic

    refs = ["yes" if v else "no" for v in y]
    scored = []
    for t in np.unique(np.round(p, 4)):
        answers = ["yes" if v >= t else "no" for v in p]
        k = point(kappa_statistic(list(zip(answers, refs))), len(y))
        scored.append((k if k is not None else -1.0, -abs(t - 0.5), float(t)))
    return max(scored)[2] if scored else 0.5


class Fitted:
    """A fitted logistic regression before it is saved as a ``Linear``."""

    def __init__(self, mean: np.ndarray, scale: np.ndarray, w: np.ndarray, b: float) -> None:
        self.mean, self.scale, self.w, self.b = mean, scale, w, b

    def predict(self, x: np.ndarray) -> np.ndarray:
        return sigmoid(((x - self.mean) / self.scale) @ self.w + self.b)

    def linear(self, features: FeatureSpec) -> Linear:
        return Linear(features=features, mean=self.mean.tolist(), scale=self.scale.tolist(), weights=self.w.tolist(), bias=self.b)


def fit_linear(x: np.ndarray, y: np.ndarray, strength: float) -> Fitted:
    """Class-balanced L2 logistic regression (each class weighs half of the loss, the penalty |w|^2 / 2C on
    standardized features, the bias not penalized), minimized by L-BFGS: its steps cost one pass over the rows, so a
    head over several layers' concatenated states (thousands of features) fits as fast as one layer's."""
    from scipy.optimize import minimize

    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    n, d = z.shape
    positives = y.sum()
    sw = np.where(y > 0, n / (2 * max(positives, 1)), n / (2 * max(n - positives, 1))) / n
    reg = np.full(d, 1.0 / (strength * n))
    reg[-1] = 0.0

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        margin = z @ theta
        value = float(sw @ (np.logaddexp(0.0, margin) - y * margin) + (reg * theta) @ theta / 2)
        return value, z.T @ (sw * (sigmoid(margin) - y)) + reg * theta

    theta = minimize(loss, np.zeros(d), jac=True, method="L-BFGS-B", options={"maxiter": 500, "gtol": 1e-6}).x
    return Fitted(mean, scale, theta[:-1], float(theta[-1]))


def sigmoid(z: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -40, 40))))


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(np.asarray(p, dtype=float), 1e-6, 1 - 1e-6)
    return np.asarray(np.log(q / (1 - q)))
