"""Per-question weights fitted to reference scores (human or a strong judge), cross-validated by source document.

A dimension's score is the weighted fraction of met criteria, ``S = sum(|w_j| x_j) / sum(|w_j|)``, where ``x_j``
is the answer (flipped for a negative-weight question, a criterion to penalize). The fit is a non-negative ridge
regression of the reference score on these values, ``y ~ a + sum(c_j x_j)`` with every ``c_j >= 0`` (meeting a
criterion never lowers the score; fitted weights are never negative) and a free intercept: since S is then an
affine, increasing function of the fitted prediction, the weights ``c_j`` scaled to a mean of 1 rank and
correlate exactly as the regression does. A question keeps its sign in the weighted checklist. A question the fit gives no weight keeps a floor of ``MIN_WEIGHT`` (a weight
must stay positive; such a question is a candidate for pruning), and a dimension where no answer predicts the
reference keeps equal weights.

Cross-validation is by source document (group k-fold): every output of a document lies in one fold, so a fold
is never scored with weights fitted on other outputs of its own documents. The weighted score of each output is
computed with the weights fitted on the other folds only, and these held-out scores, pooled, are correlated
with the reference (summary level: per document, averaged; dataset level: pooled) next to the unweighted score
of the same outputs, with paired bootstrap intervals over documents.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel
from scipy.optimize import nnls

from bineval_dspy.analysis.judged import JudgedSet, References, Values
from bineval_dspy.core.schema import Checklist
from bineval_dspy.meta.correlation import DimensionCorrelation, correlate
from bineval_dspy.runs.kinds import RUN_KINDS

DEFAULT_ALPHA = 1.0
DEFAULT_FOLDS = 5
MIN_WEIGHT = 0.01  # relative to a dimension's mean weight of 1
MIN_OUTPUTS = 3  # fewer cannot fit an intercept and a slope and leave anything to check


def fit_nonnegative(x: np.ndarray, y: np.ndarray, alpha: float = DEFAULT_ALPHA) -> tuple[np.ndarray, float]:
    """Coefficients ``c >= 0`` and a free intercept ``a`` minimizing ``|y - a - x c|^2 + alpha |c|^2``.

    Centering takes the intercept out exactly; the ridge term is rows of ``sqrt(alpha) I`` under the data.
    """
    mean_x, mean_y = x.mean(axis=0), float(y.mean())
    size = x.shape[1]
    design = np.vstack([x - mean_x, np.sqrt(alpha) * np.eye(size)])
    target = np.concatenate([y - mean_y, np.zeros(size)])
    coefficients, _ = nnls(design, target)
    return coefficients, mean_y - float(mean_x @ coefficients)


def checklist_weights(coefficients: np.ndarray) -> np.ndarray:
    """Coefficients as checklist weights: mean 1 (only ratios matter in a fraction), at least ``MIN_WEIGHT``;
    all ones when every coefficient is 0 (no signal)."""
    total = float(coefficients.sum())
    if total <= 0:
        return np.ones_like(coefficients)
    return np.maximum(coefficients * coefficients.size / total, MIN_WEIGHT)


def weighted_scores(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The weighted yes-fraction of every output (rows of ``x``)."""
    return (x @ weights) / weights.sum()


def group_folds(groups: Sequence[str], folds: int, seed: int = 0) -> np.ndarray:
    """The fold of every output: whole documents per fold, ``min(folds, documents)`` folds of balanced size.

    Documents are shuffled (seeded, from their sorted ids), then, largest first, each goes to the fold with the
    fewest outputs so far (the lowest-numbered on ties).
    """
    if folds < 2:
        raise ValueError(f"need at least 2 folds, got {folds}")
    documents = sorted(set(groups))
    order = [documents[k] for k in np.random.default_rng(seed).permutation(len(documents))]
    size = {doc: 0 for doc in documents}
    for group in groups:
        size[group] += 1
    order.sort(key=lambda doc: -size[doc])  # stable: the shuffle breaks ties
    load = [0] * min(folds, len(documents))
    fold_of = {}
    for doc in order:
        fold = load.index(min(load))
        fold_of[doc] = fold
        load[fold] += size[doc]
    return np.array([fold_of[g] for g in groups], dtype=np.int64)


def held_out_scores(x: np.ndarray, y: np.ndarray, fold: np.ndarray, alpha: float = DEFAULT_ALPHA) -> np.ndarray:
    """The weighted score of every output, with weights fitted on the outputs of the other folds only."""
    out = np.empty(len(y))
    for k in np.unique(fold):
        test = fold == k
        coefficients, _ = fit_nonnegative(x[~test], y[~test], alpha)
        out[test] = weighted_scores(x[test], checklist_weights(coefficients))
    return out


class QuestionWeight(BaseModel):
    """One question's fitted coefficient and the weight the weighted checklist gives it."""

    id: str
    text: str
    coefficient: float  # the reference score gained by a yes, the other answers equal (reference units)
    weight: float  # its size in the weighted checklist: scaled to a mean of 1 over the dimension, at least MIN_WEIGHT


class CrossValidation(BaseModel):
    """Held-out correlation with the reference: weighted (fitted on the other folds) against unweighted."""

    folds: int
    weighted: DimensionCorrelation
    unweighted: DimensionCorrelation


class DimensionWeights(BaseModel):
    """A dimension's fit: on how many outputs, the intercept, each question's weight, and its cross-validation."""

    dimension: str
    outputs: int  # every question answered and a reference score
    excluded: int  # left out: an unanswered question, or no reference score
    documents: int
    intercept: float
    signal: bool  # some coefficient is positive; otherwise the weights stay equal
    questions: list[QuestionWeight]
    cross_validation: CrossValidation | None
    note: str = ""  # why there is no cross-validation


@RUN_KINDS.writes("weights", legacy=({"alpha", "folds"},))
class WeightsReport(BaseModel):
    """``weights.json``: the fitted weights per dimension and how they do on held-out documents."""

    values: Values
    alpha: float
    folds: int
    seed: int
    resamples: int
    dimensions: list[DimensionWeights]
    skipped: dict[str, str]  # checklist dimensions not fitted, and why
    unused_references: list[str]  # reference dimensions the checklist has no question on


def fit_weights(
    judged: JudgedSet,
    references: References,
    *,
    values: Values = "answers",
    alpha: float = DEFAULT_ALPHA,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    resamples: int = 1000,
) -> tuple[Checklist, WeightsReport]:
    """The checklist with fitted weights on every dimension the references score, and the report."""
    if alpha < 0:
        raise ValueError(f"alpha must be non-negative, got {alpha}")
    weights = {q.id: q.weight for q in judged.checklist.questions}
    fitted: list[DimensionWeights] = []
    skipped: dict[str, str] = {}
    rated = {dim for scores in references.values() for dim in scores}
    for dim, questions in judged.checklist.by_dimension().items():
        if dim not in rated:
            skipped[dim] = "no reference scores for this dimension"
            continue
        table = judged.values(questions, values, met=True)
        reference = np.array([references.get(o.id, {}).get(dim, np.nan) for o in judged.outputs])
        usable = ~np.isnan(table).any(axis=1) & ~np.isnan(reference)
        if usable.sum() < MIN_OUTPUTS:
            skipped[dim] = f"{int(usable.sum())} output(s) with every question answered and a reference score; {MIN_OUTPUTS} needed"
            continue
        x, y = table[usable], reference[usable]
        groups = [o.group for o, keep in zip(judged.outputs, usable) if keep]
        coefficients, intercept = fit_nonnegative(x, y, alpha)
        dim_weights = checklist_weights(coefficients)
        weights.update({q.id: float(np.copysign(w, q.weight)) for q, w in zip(questions, dim_weights)})
        documents = len(set(groups))
        cross, note = None, ""
        if documents >= 2:
            fold = group_folds(groups, folds, seed)
            cross = CrossValidation(
                folds=int(fold.max()) + 1,
                weighted=correlate(y.tolist(), held_out_scores(x, y, fold, alpha).tolist(), groups, resamples=resamples, seed=seed),
                unweighted=correlate(y.tolist(), x.mean(axis=1).tolist(), groups, resamples=resamples, seed=seed),
            )
        else:
            note = "one source document: cross-validation by document needs two"
        fitted.append(
            DimensionWeights(
                dimension=dim,
                outputs=int(usable.sum()),
                excluded=int((~usable).sum()),
                documents=documents,
                intercept=intercept,
                signal=bool(coefficients.sum() > 0),
                questions=[QuestionWeight(id=q.id, text=q.text, coefficient=float(c), weight=float(w)) for q, c, w in zip(questions, coefficients, dim_weights)],
                cross_validation=cross,
                note=note,
            )
        )
    weighted = judged.checklist.model_copy(update={"questions": [q.model_copy(update={"weight": weights[q.id]}) for q in judged.checklist.questions]})
    report = WeightsReport(
        values=values,
        alpha=alpha,
        folds=folds,
        seed=seed,
        resamples=resamples,
        dimensions=fitted,
        skipped=skipped,
        unused_references=sorted(rated - set(judged.checklist.by_dimension())),
    )
    return weighted, report
