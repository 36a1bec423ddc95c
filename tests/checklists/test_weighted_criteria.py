"""Negative weights (criteria to penalize) in scoring, outcomes and the judge; scores per Qworld perspective and
scenario. Every expected value is computed by hand in the comment beside it."""

from __future__ import annotations

import json

import dspy
import pytest
from pydantic import ValidationError

from bineval_dspy.core.schema import Checklist, JudgeSpec, Question, Verdict
from bineval_dspy.core.scoring import join, lineage_scores, met, outcomes, score
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.programs.refine import check_lists
from tests.conftest import question_of, scripted_lm


def lineage(scenario: str, perspective: str) -> dict[str, str]:
    return {"scenario": scenario, "scenario_text": f"scenario {scenario}", "perspective": perspective, "perspective_text": f"axis {perspective}"}


CHECKLIST = Checklist(
    task="Explain ibuprofen dosing.",
    dimensions=["quality"],
    questions=[
        Question(id="a", text="Does the response give the adult dose?", dimension="quality", weight=3, lineage=lineage("s1", "p1")),
        Question(id="b", text="Does the response mention food?", dimension="quality", weight=1, lineage=lineage("s1", "p1")),
        Question(id="n", text="Does the response recommend exceeding the maximum dose?", dimension="quality", weight=-2, lineage=lineage("s1", "p2")),
        Question(id="c", text="Does the response suggest asking a doctor?", dimension="quality", weight=4, lineage=lineage("s2", "p3")),
    ],
)


def verdicts(**answers: str) -> list[Verdict]:
    return [Verdict(question_id=qid, answer=answer, judge="test") for qid, answer in answers.items()]  # type: ignore[arg-type]


def test_the_all_good_response_scores_one():
    card = score(CHECKLIST, verdicts(a="yes", b="yes", n="no", c="yes"))
    assert card.overall == 1.0 and card.rescaled["overall"] == 5.0


def test_a_triggered_negative_criterion_lowers_the_score():
    card = score(CHECKLIST, verdicts(a="yes", b="yes", n="yes", c="yes"))
    assert card.overall == pytest.approx((3 + 1 + 4) / 10)  # |w| sum is 3+1+2+4 = 10; n adds nothing
    card = score(CHECKLIST, verdicts(a="no", b="yes", n="yes", c="no"))
    assert card.overall == pytest.approx(1 / 10)
    card = score(CHECKLIST, verdicts(a="no", b="no", n="no", c="no"))
    assert card.overall == pytest.approx(2 / 10)  # avoiding the flaw is worth its |w|


def test_probability_mode_reads_a_negative_criterion_as_one_minus_p_yes():
    ps = {"a": 0.9, "b": 0.5, "n": 0.2, "c": 1.0}
    answers = [Verdict(question_id=q, answer="yes" if p >= 0.5 else "no", p_yes=p, judge="t") for q, p in ps.items()]
    card = score(CHECKLIST, answers, use_probability=True)
    assert card.overall == pytest.approx((3 * 0.9 + 1 * 0.5 + 2 * (1 - 0.2) + 4 * 1.0) / 10)


def test_unanswered_negative_criterion_is_never_a_pass():
    card = score(CHECKLIST, verdicts(a="yes", b="yes", n="unanswered", c="yes"))
    assert card.overall is None and card.unanswered == 1
    card = score(CHECKLIST, verdicts(a="yes", b="yes", n="unanswered", c="yes"), partial=True)
    assert card.overall == 1.0  # over the answered 8 of 10


def test_outcomes_fail_a_negative_criterion_answered_yes():
    pairs = join(CHECKLIST, verdicts(a="yes", b="no", n="yes", c="unanswered"))
    split = outcomes(pairs)
    assert [q.id for q, _ in split["passed"]] == ["a"]
    assert [q.id for q, _ in split["failed"]] == ["b", "n"]
    assert [q.id for q, _ in split["unanswered"]] == ["c"]
    assert [met(q, v) for q, v in join(CHECKLIST, verdicts(a="no", b="yes", n="no", c="unanswered"))] == [False, True, True, None]
    failed, passed = check_lists(CHECKLIST, score(CHECKLIST, verdicts(a="yes", b="yes", n="yes", c="yes")))
    assert [line.split(" Reason")[0] for line in failed] == ["- Does the response recommend exceeding the maximum dose?"]
    assert len(passed) == 3


def test_scores_per_perspective_and_per_scenario():
    card = score(CHECKLIST, verdicts(a="yes", b="no", n="yes", c="yes"))
    assert lineage_scores(CHECKLIST, card, "perspective") == {"p1": pytest.approx(3 / 4), "p2": 0.0, "p3": 1.0}
    assert lineage_scores(CHECKLIST, card, "scenario") == {"s1": pytest.approx(3 / 6), "s2": 1.0}  # s1: (3 + 0 + 0) / (3+1+2)
    assert lineage_scores(CHECKLIST, card, "requirement") == {}
    partial = score(CHECKLIST, verdicts(a="yes", b="unanswered", n="no", c="yes"))
    assert lineage_scores(CHECKLIST, partial, "perspective") == {"p1": None, "p2": 1.0, "p3": 1.0}
    partial = score(CHECKLIST, verdicts(a="yes", b="unanswered", n="no", c="yes"), partial=True)
    assert lineage_scores(CHECKLIST, partial, "perspective")["p1"] == 1.0


def test_lineage_scores_follow_the_cards_probability_mode():
    answers = [Verdict(question_id=q, answer="yes", p_yes=0.8, judge="t") for q in ("a", "b", "n", "c")]
    card = score(CHECKLIST, answers, use_probability=True).model_copy(update={"judge": JudgeSpec(model="m", probability=True)})
    assert lineage_scores(CHECKLIST, card, "perspective") == {"p1": pytest.approx(0.8), "p2": pytest.approx(0.2), "p3": pytest.approx(0.8)}


def test_weights_must_be_non_zero_and_code_checks_positive():
    assert Question(text="Is it bad?", dimension="d", weight=-10).weight == -10
    for bad in (0, float("nan"), float("inf")):
        with pytest.raises(ValidationError, match="a number from -1e\\+06 to 1e\\+06, not 0"):
            Question(text="Is it bad?", dimension="d", weight=bad)
    with pytest.raises(ValidationError, match="code-checked question needs a positive weight"):
        Question(text="Has commas?", dimension="d", weight=-1, verifier="punctuation:no_comma")


def test_the_judge_explains_failed_criteria_of_either_sign():
    """explanations="failures": a "yes" to a negative criterion is a failure to explain, its "no" is not."""
    answers = {q.text: "yes" for q in CHECKLIST.questions}

    def script(request):
        answer = answers[question_of(request)]
        text = json.dumps({"verdict": {"answer": answer, "explanation": f"because {answer}"}})
        stop = request.config.stop
        return text[: text.index(stop[0])] if stop else text

    lm = scripted_lm(script)
    dspy.configure(lm=lm)
    card = BinaryJudge(explanations="failures")(input="i", output="o", checklist=CHECKLIST)
    explained = [question_of(r) for r in lm.engine.requests if not r.config.stop]
    assert explained == ["Does the response recommend exceeding the maximum dose?"]
    assert card.overall == pytest.approx(8 / 10)
