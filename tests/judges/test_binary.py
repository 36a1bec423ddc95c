"""BinaryJudge logic with scripted LMs: independence, parsing, failures, voting, probabilities, routing."""

from __future__ import annotations

import json
import math

import dspy
import pytest
from dspy.lm15 import Request

from bineval_dspy.core.schema import Checklist, Question, Verdict
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.logprobs import p_yes_from_logprobs
from tests.conftest import prompt_fields, question_of, scripted_lm, verdict_json

CHECKLIST = Checklist(
    task="summarize",
    dimensions=["consistency", "fluency"],
    questions=[
        Question(id="q1", text="Is the date correct?", dimension="consistency"),
        Question(id="q2", text="Is the name correct?", dimension="consistency"),
        Question(id="q3", text="Is it grammatical?", dimension="fluency"),
    ],
)
ANSWERS = {"Is the date correct?": "yes", "Is the name correct?": "no", "Is it grammatical?": "yes"}


def answer_by_question(request: Request) -> str:
    return verdict_json(ANSWERS[question_of(request)], f"checked: {question_of(request)}")


def test_one_call_per_question_with_shared_context_before_the_question():
    lm = scripted_lm(answer_by_question)
    dspy.configure(lm=lm)
    card = BinaryJudge()(input="ARTICLE", output="SUMMARY", checklist=CHECKLIST)
    requests = lm.engine.requests
    assert len(requests) == 3
    prompts = [r.messages[-1].text for r in requests]
    for prompt, question in zip(prompts, ANSWERS):
        assert prompt.index("ARTICLE") < prompt.index("SUMMARY") < prompt.index(question)
        others = [q for q in ANSWERS if q != question]
        assert all(o not in prompt for o in others)  # answered independently
    prefix = prompts[0][: prompts[0].index("Is the date")]
    assert all(p.startswith(prefix) for p in prompts)  # identical shared prefix, reusable by a KV cache
    assert [v.answer for v in card.verdicts] == ["yes", "no", "yes"]
    assert card.dimension_scores == {"consistency": 0.5, "fluency": 1.0}
    assert card.verdicts[1].explanation == "checked: Is the name correct?"
    assert card.verdicts[0].judge == "custom/scripted"


@pytest.mark.parametrize(
    "reply",
    ["yes", "", "{}", '{"verdict": {"answer": "maybe", "explanation": "x"}}', "I think the answer is Yes!", '{"verdict": "yes"}'],
)
def test_garbage_is_unanswered_never_yes(reply):
    dspy.configure(lm=scripted_lm(lambda r: reply))
    card = BinaryJudge()(input="i", output="o", checklist=CHECKLIST)
    assert {v.answer for v in card.verdicts} == {"unanswered"}
    assert card.overall is None
    assert card.unanswered == 3


@pytest.mark.parametrize("error", [RuntimeError("boom"), TimeoutError("took too long")])
def test_lm_exception_or_timeout_is_unanswered(error):
    def fail(request):
        raise error

    dspy.configure(lm=scripted_lm(fail))
    verdict = BinaryJudge().judge_question("i", "o", CHECKLIST.questions[0])
    assert verdict.answer == "unanswered"
    assert type(error).__name__ in verdict.explanation or str(error) in verdict.explanation


def test_majority_vote_over_k_samples():
    replies = iter(["yes", "no", "yes", "no", "no"])
    lm = scripted_lm(lambda r: verdict_json(next(replies)))
    dspy.configure(lm=lm)
    verdict = BinaryJudge(samples=5).judge_question("i", "o", CHECKLIST.questions[0])
    assert verdict.answer == "no"
    assert verdict.p_yes == pytest.approx(2 / 5)
    assert "2 yes / 3 no of 5 samples" in verdict.explanation
    assert len(lm.engine.requests) == 5
    assert {r.config.temperature for r in lm.engine.requests} == {0.7}


def test_majority_tie_and_unanswered_votes():
    replies = iter(["yes", "garbage", "no"])
    dspy.configure(lm=scripted_lm(lambda r: (lambda a: verdict_json(a) if a != "garbage" else a)(next(replies))))
    verdict = BinaryJudge(samples=3).judge_question("i", "o", CHECKLIST.questions[0])
    assert verdict.answer == "unanswered"  # 1 yes, 1 no, 1 unparseable: a tie is not a yes


def test_samples_must_be_positive():
    with pytest.raises(ValueError):
        BinaryJudge(samples=0)


def logprob_entry(token: str, top: dict[str, float]) -> dict:
    return {"token": token, "logprob": max(top.values()) if top else 0.0, "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top.items()]}


def test_p_yes_reads_the_answer_token_after_the_answer_key():
    content = [
        logprob_entry("{", {"Yes": math.log(0.9)}),  # a "Yes" before the answer key must be ignored
        logprob_entry('"answer', {'"answer': 0.0}),
        logprob_entry('": "', {'": "': 0.0}),
        logprob_entry("no", {"no": math.log(0.5), "yes": math.log(0.2), "Yes": math.log(0.1), "The": math.log(0.1)}),
    ]
    assert p_yes_from_logprobs({"content": content}) == pytest.approx(0.3 / 0.8)
    assert p_yes_from_logprobs(None) is None
    assert p_yes_from_logprobs({"content": content[:3]}) is None


def test_code_router_answers_without_the_lm():
    lm = scripted_lm(answer_by_question)
    dspy.configure(lm=lm)

    def router(question, input, output):
        if question.id == "q2":
            return Verdict(question_id="q2", answer="yes", explanation="code says so", judge="code:test")
        return None

    card = BinaryJudge(code_router=router)(input="i", output="o", checklist=CHECKLIST)
    assert len(lm.engine.requests) == 2
    assert card.verdicts[1].judge == "code:test" and card.verdicts[1].answer == "yes"


def test_chain_of_thought_and_json_schema_is_sent():
    lm = scripted_lm(lambda r: json.dumps({"reasoning": "r", "verdict": {"answer": "yes", "explanation": "e"}}))
    dspy.configure(lm=lm)
    verdict = BinaryJudge(chain_of_thought=True).judge_question("i", "o", CHECKLIST.questions[0])
    assert verdict.answer == "yes"
    schema = lm.engine.requests[0].config.response_format["schema"]
    assert "verdict" in schema["properties"]


# -- contextual calibration --------------------------------------------------------------------------------------
def output_of(request: Request) -> str:
    return prompt_fields(request)["output"]


def test_calibrated_divides_out_the_content_free_prior():
    from bineval_dspy.judges.question import calibrated

    raw = Verdict(question_id="q", answer="yes", p_yes=0.8, judge="lm")
    prior = Verdict(question_id="q", answer="yes", p_yes=0.9, judge="lm")
    out = calibrated(raw, prior)
    # (0.8/0.9) / (0.8/0.9 + 0.2/0.1) = 0.8889 / 2.8889, computed by hand
    assert out.p_yes == pytest.approx(0.30769, abs=1e-5)
    assert out.answer == "no" and out.p_yes_content_free == 0.9
    assert "0.80 against 0.90" in out.explanation
    neutral = calibrated(raw, prior.model_copy(update={"p_yes": 0.5}))
    assert neutral.p_yes == pytest.approx(0.8) and neutral.answer == "yes"  # a 0.5 prior changes nothing
    for failed_prior in ({"p_yes": None, "answer": "unanswered", "explanation": "HTTP 500"}, {"p_yes": 1.0}):
        unread = calibrated(raw, prior.model_copy(update=failed_prior))  # calibration asked for, and impossible
        assert unread.answer == "unanswered" and unread.p_yes is None and "calibration failed" in unread.explanation
    assert calibrated(raw.model_copy(update={"p_yes": None}), prior).answer == "unanswered"
    missing = Verdict(question_id="q", answer="unanswered", judge="lm")
    assert calibrated(missing, prior) == missing  # never turned into an answer


def test_content_free_calibration_asks_each_question_about_an_empty_output():
    from bineval_dspy.judges.question import CONTENT_FREE_OUTPUT
    from bineval_dspy.testing.scripted import Reply

    # the LM's P(yes) per question: the content-free output shows q1 is biased toward yes
    real = {"Is the date correct?": 0.85, "Is the name correct?": 0.6, "Is it grammatical?": 0.7}
    prior = {"Is the date correct?": 0.95, "Is the name correct?": 0.4, "Is it grammatical?": 0.7}

    def script(request: Request) -> Reply:
        question = question_of(request)
        p = prior[question] if output_of(request) == CONTENT_FREE_OUTPUT else real[question]
        return Reply(verdict_json("yes" if p >= 0.5 else "no"), p)

    lm = scripted_lm(script)
    dspy.configure(lm=lm)
    card = BinaryJudge(probability=True, calibration="content_free", explanations="none")(input="A", output="S", checklist=CHECKLIST)
    outputs = [output_of(r) for r in lm.engine.requests]
    assert outputs.count(CONTENT_FREE_OUTPUT) == 3 and outputs.count("S") == 3
    by_id = {v.question_id: v for v in card.verdicts}
    assert by_id["q1"].answer == "no" and by_id["q1"].p_yes_content_free == pytest.approx(0.95)  # 0.85 < its 0.95 prior
    assert by_id["q2"].answer == "yes" and by_id["q2"].p_yes > 0.6  # 0.6 above its 0.4 prior
    assert by_id["q3"].p_yes == pytest.approx(0.5)  # equal to its prior: no evidence either way
    assert card.judge is not None and card.judge.calibration == "content_free"
    assert card.dimension_scores["consistency"] == pytest.approx((by_id["q1"].p_yes + by_id["q2"].p_yes) / 2)
    lm.engine.requests.clear()
    hard = BinaryJudge(calibration="content_free", explanations="none")(input="A", output="S", checklist=CHECKLIST)
    assert hard.dimension_scores == {"consistency": 0.5, "fluency": 1.0}  # calibrated answers, scored as 1/0


def test_a_verdict_whose_content_free_prior_failed_is_unanswered_never_an_uncalibrated_yes():
    from bineval_dspy.judges.question import CONTENT_FREE_OUTPUT
    from bineval_dspy.testing.scripted import Reply

    def script(request: Request) -> Reply:
        if output_of(request) == CONTENT_FREE_OUTPUT:
            raise RuntimeError("HTTP 500 from the server")
        return Reply(verdict_json("yes"), 0.9)

    dspy.configure(lm=scripted_lm(script))
    card = BinaryJudge(calibration="content_free", explanations="none")(input="A", output="S", checklist=CHECKLIST)
    assert [v.answer for v in card.verdicts] == ["unanswered"] * 3 and card.overall is None
    assert all("calibration failed" in v.explanation for v in card.verdicts)


def test_calibration_needs_one_sample():
    with pytest.raises(ValueError, match="samples"):
        BinaryJudge(probability=True, samples=3, calibration="content_free")


def test_an_explaining_call_that_answers_otherwise_leaves_the_question_unanswered():
    """Under --explanations failures the explanation comes from a second call; were it to say "yes" to a "no",
    the verdict would flip unseen (issue 32, item 14): the disagreement is unanswered instead."""
    replies = iter([verdict_json("no"), verdict_json("yes", "it is fine")])
    dspy.configure(lm=scripted_lm(lambda request: next(replies)))
    one = Checklist(task="t", dimensions=["d"], questions=[Question(text="Is it short?", dimension="d")])
    card = BinaryJudge(explanations="failures")(input="A", output="S", checklist=one)
    (verdict,) = card.verdicts
    assert verdict.answer == "unanswered" and "answered 'yes' where the verdict said 'no'" in verdict.explanation
