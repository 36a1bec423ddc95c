"""Verdict-first decoding and explanations on demand; the questions of one output asked concurrently."""

from __future__ import annotations

import json
import threading
import time

import dspy
import pytest
from dspy.lm15 import Request

from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.verdict import EXPLANATION_STOP
from tests.conftest import question_of, scripted_lm

CHECKLIST = Checklist(
    task="t",
    dimensions=["d"],
    questions=[Question(text="Is it short?", dimension="d"), Question(text="Is it kind?", dimension="d"), Question(text="Is it true?", dimension="d")],
)
ANSWERS = {"Is it short?": "yes", "Is it kind?": "no", "Is it true?": "no"}


def honest(request: Request) -> str:
    """Answers like the grammar-constrained engine: cut at the stop sequence when one is given."""
    answer = ANSWERS[question_of(request)]
    text = json.dumps({"verdict": {"answer": answer, "explanation": f"because {answer}"}})
    stop = request.config.stop
    if stop:
        text = text[: text.index(stop[0])]
    return text


def test_none_stops_after_the_answer_and_parses_the_cut_reply():
    lm = scripted_lm(honest)
    dspy.configure(lm=lm)
    card = BinaryJudge(explanations="none")(input="i", output="o", checklist=CHECKLIST)
    assert [v.answer for v in card.verdicts] == ["yes", "no", "no"]
    assert all(v.explanation == "" for v in card.verdicts)
    assert all(list(r.config.stop or []) == [EXPLANATION_STOP] for r in lm.engine.requests)
    assert card.judge is not None and card.judge.explanations == "none"


def test_failures_explains_only_the_no_verdicts_with_the_same_prompt():
    lm = scripted_lm(honest)
    dspy.configure(lm=lm)
    card = BinaryJudge(explanations="failures")(input="i", output="o", checklist=CHECKLIST)
    assert [(v.answer, v.explanation) for v in card.verdicts] == [("yes", ""), ("no", "because no"), ("no", "because no")]
    asked_again = [r for r in lm.engine.requests if not r.config.stop]
    assert sorted(question_of(r) for r in asked_again) == ["Is it kind?", "Is it true?"]
    cut = {question_of(r): r for r in lm.engine.requests if r.config.stop}
    assert all(cut[question_of(r)].messages == r.messages for r in asked_again)  # the prompt did not change


def test_all_explains_everything_and_sends_no_stop():
    lm = scripted_lm(honest)
    dspy.configure(lm=lm)
    card = BinaryJudge()(input="i", output="o", checklist=CHECKLIST)
    assert [v.explanation for v in card.verdicts] == ["because yes", "because no", "because no"]
    assert not any(r.config.stop for r in lm.engine.requests)


def test_a_cut_reply_without_an_answer_is_unanswered():
    dspy.configure(lm=scripted_lm(lambda r: '{"verdict": {"'))
    card = BinaryJudge(explanations="none")(input="i", output="o", checklist=CHECKLIST)
    assert {v.answer for v in card.verdicts} == {"unanswered"} and card.overall is None


def test_an_unknown_explanations_mode_is_refused():
    with pytest.raises(ValueError, match="explanations"):
        BinaryJudge(explanations="some")  # type: ignore[arg-type]


def test_remote_questions_of_one_output_run_concurrently():
    lock = threading.Lock()
    state = {"now": 0, "most": 0}

    def slow(request: Request) -> str:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.2)
        with lock:
            state["now"] -= 1
        return honest(request)

    dspy.configure(lm=scripted_lm(slow))
    card = BinaryJudge(threads=3)(input="i", output="o", checklist=CHECKLIST)
    assert state["most"] == 3
    assert [v.answer for v in card.verdicts] == ["yes", "no", "no"]  # in checklist order whatever finished first
