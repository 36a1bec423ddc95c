"""Redundancy pruning: which question goes, which stays, weights merged, and the LM calls saved."""

from __future__ import annotations

import pytest

from bineval_dspy.analysis.phi import phi_report
from bineval_dspy.analysis.pruning import prune
from bineval_dspy.core.schema import Checklist
from bineval_dspy.core.scoring import score
from tests.analysis.builders import make_checklist, make_set, needs_negative_weights

EVEN = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]  # yes on half: the most informative split


def pruned(columns, dims, code=(), threshold=0.8, min_pairs=2, weights=None):
    checklist = make_checklist(dims, code, weights)
    judged = make_set(checklist, columns)
    result, report = prune(checklist, phi_report(judged), threshold, min_pairs)
    return judged, result, report


def test_of_two_identical_questions_the_earlier_stays_and_takes_over_the_weight():
    other = [1, 0, 1, 0, 1, 0, 1, 0, 1, 0]
    judged, checklist, report = pruned({"c-1": EVEN, "c-2": EVEN, "c-3": other}, {"c": 3})
    assert [c.id for c in report.dropped] == ["c-2"]
    cut = report.dropped[0]
    assert cut.duplicate_of == "c-1" and cut.phi == pytest.approx(1.0) and cut.pairs == 10 and cut.weight_moved == 1.0
    assert [(q.id, q.weight) for q in checklist.questions] == [("c-1", 2.0), ("c-3", 1.0)]
    Checklist.model_validate(checklist.model_dump())  # a valid checklist
    for output in judged.outputs:  # where the two agree (always, here) the score is unchanged
        verdicts = [v for v in output.card.verdicts if v.question_id != "c-2"]
        assert score(checklist, verdicts).dimension_scores == output.card.dimension_scores
    assert (report.questions_before, report.questions_after) == (3, 2)
    assert (report.lm_calls_per_output_before, report.lm_calls_per_output_after, report.lm_calls_saved_per_output) == (3, 2, 1)


def test_the_question_with_more_information_stays_even_when_later():
    # q1 says yes on 6 of 10, q2 (a subset) on 5: phi = (5*4 - 1*0) / sqrt(6*4*5*5) = 0.816; var 0.24 < 0.25
    q1 = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    _, checklist, report = pruned({"c-1": q1, "c-2": EVEN}, {"c": 2})
    assert report.dropped[0].id == "c-1" and report.dropped[0].duplicate_of == "c-2"
    assert report.dropped[0].phi == pytest.approx(20 / 600**0.5)
    assert [q.id for q in checklist.questions] == ["c-2"]


def test_a_code_verified_question_stays_and_only_dropped_lm_questions_save_calls():
    _, checklist, report = pruned({"c-1": EVEN, "c-2": EVEN, "c-3": EVEN}, {"c": 3}, code=["c-3"])
    assert [q.id for q in checklist.questions] == ["c-3"]  # code first, although last and equally informative
    assert {c.id: c.duplicate_of for c in report.dropped} == {"c-1": "c-3", "c-2": "c-3"}
    assert all(c.lm_question for c in report.dropped)
    assert (report.lm_calls_per_output_before, report.lm_calls_per_output_after) == (2, 0)
    assert checklist.questions[0].weight == 3.0

    _, _, both_code = pruned({"c-1": EVEN, "c-2": EVEN}, {"c": 2}, code=["c-1", "c-2"])
    assert [c.lm_question for c in both_code.dropped] == [False]
    assert both_code.lm_calls_saved_per_output == 0  # a code check costs no LM call to begin with


def test_a_near_opposite_is_dropped_without_moving_its_weight():
    opposite = [1 - v for v in EVEN]
    _, checklist, report = pruned({"c-1": EVEN, "c-2": opposite}, {"c": 2})
    assert report.dropped[0].phi == pytest.approx(-1.0) and report.dropped[0].weight_moved == 0.0
    assert [(q.id, q.weight) for q in checklist.questions] == [("c-1", 1.0)]


def test_a_penalized_criterion_answering_opposite_to_a_requirement_merges_into_it():
    needs_negative_weights()
    opposite = [1 - v for v in EVEN]  # "does it contain errors?" says yes exactly where "is it correct?" says no
    judged, checklist, report = pruned({"c-1": EVEN, "c-2": opposite}, {"c": 2}, weights={"c-2": -1.0})
    assert report.dropped[0].phi == pytest.approx(-1.0) and report.dropped[0].weight_moved == 1.0
    assert [(q.id, q.weight) for q in checklist.questions] == [("c-1", 2.0)]
    for output in judged.outputs:
        verdicts = [v for v in output.card.verdicts if v.question_id != "c-2"]
        assert score(checklist, verdicts).dimension_scores == output.card.dimension_scores
    _, same_sign, _ = pruned({"c-1": EVEN, "c-2": EVEN}, {"c": 2}, weights={"c-1": -1.0, "c-2": -2.0})
    assert [(q.id, q.weight) for q in same_sign.questions] == [("c-1", -3.0)]  # two penalties that agree: still one


def test_only_redundancy_with_a_kept_question_counts():
    # phi(1,2) = phi(2,3) = 0.6 but phi(1,3) = 0.2: once 2 is dropped, 3 repeats nothing that is kept
    q1 = [1, 1, 1, 1, 0, 1, 0, 0, 0, 0]
    q3 = [1, 1, 1, 0, 1, 0, 1, 0, 0, 0]
    judged, checklist, report = pruned({"c-1": q1, "c-2": EVEN, "c-3": q3}, {"c": 3}, threshold=0.5)
    matrix = phi_report(judged).dimensions[0].matrix
    assert (matrix[0][1], matrix[1][2], matrix[0][2]) == pytest.approx((0.6, 0.6, 0.2))
    assert [c.id for c in report.dropped] == ["c-2"] and report.dropped[0].duplicate_of == "c-1"
    assert [q.id for q in checklist.questions] == ["c-1", "c-3"]


def test_the_threshold_is_strict_and_few_pairs_never_prune():
    _, _, at_one = pruned({"c-1": EVEN, "c-2": EVEN}, {"c": 2}, threshold=1.0)
    assert at_one.dropped == []  # |phi| = 1 is not above 1
    few = {"c-1": [1, 0, 1, None, None], "c-2": [1, 0, 1, 1, 0]}
    _, _, sparse = pruned(few, {"c": 2}, min_pairs=4)
    assert sparse.dropped == []  # phi 1 over three outputs: not enough to call them redundant
    _, _, enough = pruned(few, {"c": 2}, min_pairs=3)
    assert [c.id for c in enough.dropped] == ["c-1"]  # variance 2/9 against c-2's 0.24


def test_constant_questions_are_never_pruned_and_dimensions_are_separate():
    columns = {"c-1": EVEN, "c-2": [1] * 10, "d-1": EVEN, "d-2": EVEN}
    _, checklist, report = pruned(columns, {"c": 2, "d": 2})
    assert report.undefined == ["c-2"]
    assert [c.id for c in report.dropped] == ["d-2"]  # c-1 and d-1 are identical, but in different dimensions
    assert [q.id for q in checklist.questions] == ["c-1", "c-2", "d-1"]
    assert checklist.dimensions == ["c", "d"]


def test_a_threshold_outside_zero_to_one_is_refused():
    checklist = make_checklist({"c": 1})
    with pytest.raises(ValueError, match="threshold"):
        prune(checklist, phi_report(make_set(checklist, {"c-1": [1, 0]})), 1.5)
