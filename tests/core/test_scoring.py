"""Aggregation formulas and the data model's validation and JSON round-trip."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bineval_dspy.core.schema import Checklist, Question, Scorecard, Verdict
from bineval_dspy.core.scoring import rescale, score, weighted_yes_fraction


def make_checklist() -> Checklist:
    return Checklist(
        task="summarize",
        dimensions=["consistency", "fluency"],
        questions=[
            Question(id="a", text="Are all facts supported?", dimension="consistency", weight=3),
            Question(id="b", text="Are names right?", dimension="consistency", weight=1),
            Question(id="c", text="Is it grammatical?", dimension="fluency"),
        ],
    )


def v(qid: str, answer: str, p_yes: float | None = None) -> Verdict:
    return Verdict(question_id=qid, answer=answer, p_yes=p_yes, judge="test")


def test_weighted_fraction_per_dimension_and_overall():
    card = score(make_checklist(), [v("a", "yes"), v("b", "no"), v("c", "no")])
    assert card.dimension_scores == {"consistency": 0.75, "fluency": 0.0}
    assert card.overall == pytest.approx(3 / 5)
    assert card.rescaled["consistency"] == pytest.approx(0.75 * 4 + 1)
    assert card.rescaled["overall"] == pytest.approx(3 / 5 * 4 + 1)


def test_an_unanswered_question_leaves_its_dimension_unscored():
    card = score(make_checklist(), [v("a", "unanswered"), v("b", "no"), v("c", "unanswered")])
    assert card.dimension_scores == {"consistency": None, "fluency": None}
    assert card.overall is None and not card.complete
    assert card.unanswered == 2 and card.unanswered_by_dimension == {"consistency": 1, "fluency": 1}
    assert card.rescaled["fluency"] is None


def test_one_yes_and_two_unanswered_is_not_a_perfect_score():
    card = score(make_checklist(), [v("a", "yes"), v("b", "unanswered"), v("c", "unanswered")])
    assert card.overall is None and card.rescaled["overall"] is None  # used to be 1.0 (5/5)


def test_partial_scores_over_answered_questions_and_says_so():
    card = score(make_checklist(), [v("a", "unanswered"), v("b", "no"), v("c", "unanswered")], partial=True)
    assert card.dimension_scores == {"consistency": 0.0, "fluency": None}
    assert card.overall == 0.0 and card.partial and card.unanswered == 2
    assert card.rescaled["fluency"] is None


def test_scored_verdicts_carry_their_question():
    card = score(make_checklist(), [v("a", "yes"), v("b", "no"), v("c", "no")])
    assert [(x.question_id, x.dimension) for x in card.verdicts] == [("a", "consistency"), ("b", "consistency"), ("c", "fluency")]
    assert all(x.question for x in card.verdicts)


def test_all_unanswered_gives_no_score():
    card = score(make_checklist(), [v("a", "unanswered"), v("b", "unanswered"), v("c", "unanswered")])
    assert card.overall is None


def test_probability_mode_uses_p_yes_when_known():
    verdicts = [v("a", "yes", 0.8), v("b", "no", 0.2), v("c", "no")]
    card = score(make_checklist(), verdicts, use_probability=True)
    assert card.dimension_scores["consistency"] == pytest.approx((3 * 0.8 + 0.2) / 4)
    assert card.dimension_scores["fluency"] == 0.0  # no p_yes: the discrete answer counts


def test_missing_verdict_is_an_error():
    with pytest.raises(ValueError, match="no verdict for question"):
        score(make_checklist(), [v("a", "yes")])


def test_rescale_affine_and_custom_scale():
    assert rescale(0.0) == 1.0
    assert rescale(1.0) == 5.0
    assert rescale(0.5, 0, 10) == 5.0
    assert rescale(None) is None
    assert weighted_yes_fraction([]) is None


def test_scorecard_json_round_trip():
    card = score(make_checklist(), [v("a", "yes", 0.9), v("b", "no"), v("c", "yes")])
    again = Scorecard.model_validate_json(card.model_dump_json())
    assert again == card


def test_question_ids_are_stable_and_content_derived():
    q1 = Question(text="Is it short?", dimension="style")
    q2 = Question(text="Is it short?", dimension="style")
    q3 = Question(text="Is it long?", dimension="style")
    assert q1.id == q2.id != q3.id
    checklist = Checklist(task="t", dimensions=["style"], questions=[q1, q3])
    assert Checklist.model_validate_json(checklist.model_dump_json()) == checklist


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"task": "t", "dimensions": [], "questions": []}, "at least one question"),
        ({"task": " ", "dimensions": [], "questions": [{"text": "Is it?", "dimension": "d"}]}, "must not be empty"),
        ({"task": "t", "dimensions": [], "questions": [{"text": " ", "dimension": "d"}]}, "must not be empty"),
        ({"task": "t", "dimensions": [], "questions": [{"id": "x", "text": "A?", "dimension": "d"}, {"id": "x", "text": "B?", "dimension": "d"}]}, "duplicate ids x"),
        ({"task": "t", "dimensions": [], "questions": [{"text": "A?", "dimension": "d", "weight": 0}]}, "greater than 0"),
    ],
)
def test_checklist_validation(kwargs, message):
    with pytest.raises(ValidationError, match=message):
        Checklist.model_validate(kwargs)


def test_a_writers_dimensions_of_questions_are_added_in_order_and_a_files_are_an_error():
    questions = [Question(text="X?", dimension="b"), Question(text="Y?", dimension="a")]
    checklist = Checklist.of("t", ["a"], questions)
    assert checklist.dimensions == ["a", "b"]
    assert list(checklist.by_dimension()) == ["a", "b"]
    with pytest.raises(ValidationError, match="'b' is not one of the dimensions"):  # issue 47: a misspelt dimension
        Checklist(task="t", dimensions=["a"], questions=questions)


@pytest.mark.parametrize("weight", [1e308, -1e308, 1e6 + 1])
def test_a_weight_too_large_to_sum_is_refused(weight):
    """Weights of 1e308 summed to infinity: a complete row with no score (issue 32, item 14)."""
    with pytest.raises(ValidationError, match="from -1e\\+06 to 1e\\+06"):
        Question(text="Is it short?", dimension="d", weight=weight)
    assert Question(text="Is it short?", dimension="d", weight=1e6).weight == 1e6
