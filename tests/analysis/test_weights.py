"""Weights fitted to reference scores: planted signals recovered, folds by document, held-out correlations."""

from __future__ import annotations

import numpy as np
import pytest

from bineval_dspy.analysis.weights import (
    MIN_WEIGHT,
    checklist_weights,
    fit_nonnegative,
    fit_weights,
    group_folds,
    held_out_scores,
    weighted_scores,
)
from bineval_dspy.core.schema import Checklist
from bineval_dspy.meta.correlation import correlate
from tests.analysis.builders import make_checklist, make_set, needs_negative_weights


def planted(n: int = 240, seed: int = 0, noise: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = (rng.random((n, 3)) < 0.5).astype(float)
    y = 1.0 + 2.0 * x[:, 0] + 0.0 * x[:, 1] + 1.0 * x[:, 2] + rng.normal(0, noise, n)
    return x, y


def test_a_planted_signal_is_recovered_and_matches_least_squares_when_all_positive():
    x, y = planted()
    coefficients, intercept = fit_nonnegative(x, y, alpha=0.0)
    assert coefficients == pytest.approx([2.0, 0.0, 1.0], abs=0.05)
    assert intercept == pytest.approx(1.0, abs=0.05)
    x2 = x[:, [0, 2]]
    ols = np.linalg.lstsq(np.column_stack([np.ones(len(y)), x2]), y, rcond=None)[0]
    constrained, b = fit_nonnegative(x2, y, alpha=0.0)
    assert constrained == pytest.approx(ols[1:]) and b == pytest.approx(ols[0])


def test_a_negative_effect_gets_no_weight_and_ridge_shrinks():
    rng = np.random.default_rng(1)
    x = (rng.random((200, 2)) < 0.5).astype(float)
    y = 3.0 + 2.0 * x[:, 0] - 1.0 * x[:, 1]
    coefficients, _ = fit_nonnegative(x, y, alpha=0.0)
    assert coefficients[1] == 0.0 and coefficients[0] == pytest.approx(2.0, abs=0.05)
    shrunk, _ = fit_nonnegative(x, y, alpha=100.0)
    assert 0 < shrunk[0] < coefficients[0]


def test_checklist_weights_have_mean_one_a_positive_floor_and_stay_equal_without_signal():
    assert checklist_weights(np.array([2.0, 0.0, 1.0])) == pytest.approx([2.0, MIN_WEIGHT, 1.0])
    assert checklist_weights(np.array([3.0, 1.0])).mean() == pytest.approx(1.0)
    assert checklist_weights(np.zeros(3)) == pytest.approx([1.0, 1.0, 1.0])
    assert weighted_scores(np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([3.0, 1.0])) == pytest.approx([0.75, 1.0])


def test_group_folds_never_split_a_document_and_are_balanced_and_seeded():
    groups = [f"doc-{k % 7}" for k in range(70)] + ["big"] * 15
    fold = group_folds(groups, 3, seed=4)
    for doc in set(groups):
        assert len({int(f) for f, g in zip(fold, groups) if g == doc}) == 1
    sizes = np.bincount(fold)
    assert len(sizes) == 3 and sizes.max() - sizes.min() <= 10  # one document of 10 more or less
    assert (group_folds(groups, 3, seed=4) == fold).all()
    assert len(np.unique(group_folds(["a", "a", "b"], 5))) == 2  # no more folds than documents
    with pytest.raises(ValueError):
        group_folds(groups, 1)


def test_held_out_scores_use_weights_fitted_on_the_other_folds_only():
    x, y = planted(n=60, seed=3, noise=0.5)
    groups = [f"doc-{k // 6}" for k in range(60)]  # ten documents of six outputs
    fold = group_folds(groups, 5)
    scores = held_out_scores(x, y, fold, alpha=1.0)
    for k in range(5):  # by hand: fit without fold k, score fold k
        test = fold == k
        coefficients, _ = fit_nonnegative(x[~test], y[~test], 1.0)
        assert scores[test] == pytest.approx(weighted_scores(x[test], checklist_weights(coefficients)))
    # changing the references of one document changes no held-out score of its own fold
    changed = y.copy()
    mine = fold == fold[0]
    changed[mine] = -changed[mine] * 10
    moved = held_out_scores(x, changed, fold, alpha=1.0)
    assert moved[mine] == pytest.approx(scores[mine])
    assert not np.allclose(moved[~mine], scores[~mine])


def judged_with_reference(n_docs: int = 12, per_doc: int = 5, seed: int = 0):
    """Relevance: q1 carries the reference, q2 a little, q3 is noise; fluency has no reference."""
    rng = np.random.default_rng(seed)
    n = n_docs * per_doc
    columns = {f"relevance-{k}": (rng.random(n) < 0.5).astype(int).tolist() for k in (1, 2, 3)}
    columns["fluency-1"] = (rng.random(n) < 0.5).astype(int).tolist()
    groups = [f"doc-{i // per_doc}" for i in range(n)]
    checklist = make_checklist({"relevance": 3, "fluency": 1})
    judged = make_set(checklist, columns, groups)
    reference = {
        o.id: {"relevance": 1.0 + 3.0 * columns["relevance-1"][i] + 0.5 * columns["relevance-2"][i] + rng.normal(0, 0.3), "overall": 3.0}
        for i, o in enumerate(judged.outputs)
    }
    return judged, reference, columns


def test_fit_weights_ranks_the_questions_and_beats_unweighted_on_held_out_documents():
    judged, reference, _ = judged_with_reference()
    weighted, report = fit_weights(judged, reference, folds=4, resamples=200)
    Checklist.model_validate(weighted.model_dump())  # every weight positive: a valid checklist
    relevance = report.dimensions[0]
    assert relevance.dimension == "relevance" and relevance.outputs == 60 and relevance.documents == 12
    w = {q.id: q.weight for q in relevance.questions}
    c = {q.id: q.coefficient for q in relevance.questions}
    assert c["relevance-1"] == pytest.approx(3.0, abs=0.4) and c["relevance-2"] == pytest.approx(0.5, abs=0.3)
    assert c["relevance-3"] == 0.0 and w["relevance-3"] == MIN_WEIGHT  # the noise question: floored, still positive
    assert w["relevance-1"] / w["relevance-2"] == pytest.approx(c["relevance-1"] / c["relevance-2"])
    assert w["relevance-1"] + w["relevance-2"] == pytest.approx(3.0)  # scaled to a mean of 1 before the floor
    assert relevance.intercept == pytest.approx(1.0, abs=0.3) and relevance.signal
    assert {q.id: q.weight for q in weighted.questions} == {**w, "fluency-1": 1.0}
    cv = relevance.cross_validation
    assert cv is not None and cv.folds == 4
    assert cv.weighted.dataset.spearman.value > cv.unweighted.dataset.spearman.value
    assert cv.weighted.summary.pearson.value > cv.unweighted.summary.pearson.value
    assert cv.weighted.dataset.spearman.low is not None  # paired bootstrap intervals
    assert report.skipped == {"fluency": "no reference scores for this dimension"}
    assert report.unused_references == ["overall"]


def test_the_cross_validated_correlation_is_over_held_out_scores_only():
    judged, reference, columns = judged_with_reference(seed=5)
    _, report = fit_weights(judged, reference, folds=3, resamples=0, seed=2, alpha=0.5)
    x = np.array([[columns[f"relevance-{k}"][i] for k in (1, 2, 3)] for i in range(len(judged.outputs))], dtype=float)
    y = np.array([reference[o.id]["relevance"] for o in judged.outputs])
    groups = [o.group for o in judged.outputs]
    expected = correlate(y.tolist(), held_out_scores(x, y, group_folds(groups, 3, 2), 0.5).tolist(), groups, resamples=0)
    cv = report.dimensions[0].cross_validation
    assert cv is not None and cv.weighted == expected
    in_sample = correlate(y.tolist(), weighted_scores(x, checklist_weights(fit_nonnegative(x, y, 0.5)[0])).tolist(), groups, resamples=0)
    assert cv.weighted != in_sample  # not the fit's own outputs


def test_unanswered_outputs_and_missing_references_are_left_out_and_counted():
    checklist = make_checklist({"relevance": 2})
    judged = make_set(checklist, {"relevance-1": [1, 0, 1, 0, None, 1], "relevance-2": [1, 1, 0, 0, 1, 0]}, groups=["a", "a", "b", "b", "c", "c"])
    reference = {"out-0": {"relevance": 5.0}, "out-1": {"relevance": 3.0}, "out-2": {"relevance": 4.0}, "out-3": {"relevance": 1.0}, "out-4": {"relevance": 2.0}}
    _, report = fit_weights(judged, reference, folds=2, resamples=0)
    dim = report.dimensions[0]
    assert (dim.outputs, dim.excluded, dim.documents) == (4, 2, 2)  # out-4 unanswered, out-5 has no reference


def test_too_few_outputs_or_one_document_are_reported_not_guessed():
    checklist = make_checklist({"relevance": 2})
    judged = make_set(checklist, {"relevance-1": [1, 0, 1], "relevance-2": [1, 1, 0]}, groups=["a", "a", "a"])
    _, report = fit_weights(judged, {f"out-{i}": {"relevance": float(i)} for i in range(3)}, resamples=0)
    assert report.dimensions[0].cross_validation is None and "one source document" in report.dimensions[0].note
    _, few = fit_weights(judged, {"out-0": {"relevance": 1.0}}, resamples=0)
    assert few.dimensions == [] and "1 output(s)" in few.skipped["relevance"]


def test_a_criterion_to_penalize_is_fitted_on_when_it_is_met_and_keeps_its_sign():
    needs_negative_weights()
    rng = np.random.default_rng(2)
    n = 60
    columns = {"relevance-1": (rng.random(n) < 0.5).astype(int).tolist(), "relevance-2": (rng.random(n) < 0.5).astype(int).tolist()}
    checklist = make_checklist({"relevance": 2}, weights={"relevance-2": -1.0})  # relevance-2 asks for a flaw
    judged = make_set(checklist, columns, groups=[f"doc-{i // 5}" for i in range(n)])
    # the reference drops when the flaw is present: meeting the criterion (answering "no") raises it
    reference = {o.id: {"relevance": 2.0 + columns["relevance-1"][i] + 2.0 * (1 - columns["relevance-2"][i])} for i, o in enumerate(judged.outputs)}
    weighted, report = fit_weights(judged, reference, alpha=0.0, resamples=0)
    c = {q.id: q.coefficient for q in report.dimensions[0].questions}
    assert c == pytest.approx({"relevance-1": 1.0, "relevance-2": 2.0})
    assert [q.weight for q in weighted.questions] == pytest.approx([2 / 3, -4 / 3])
    cv = report.dimensions[0].cross_validation
    assert cv is not None and cv.weighted.dataset.pearson.value == pytest.approx(1.0)
