"""The G-Eval-style holistic judge: probability weighting over the score tokens, read at the score's token."""

from __future__ import annotations

import json
import math

import dspy
import pytest
from dspy.lm15 import Message, Request, Response, TokenLogprob, TopLogprob, Usage

from bineval_dspy.meta.holistic import TOP_LOGPROBS, HolisticJudge, weighted_score
from tests.conftest import scripted_lm


def entry(token: str, top: dict[str, float] | None = None, p: float = 1.0) -> dict:
    """One generated token as DSPy hands logprobs over: the token, its logprob, the top candidates."""
    return {"token": token, "logprob": math.log(p), "top_logprobs": [{"token": t, "logprob": math.log(q)} for t, q in (top or {}).items()]}


def test_the_expected_score_over_the_score_tokens():
    content = [entry('{"score": '), entry("3", {"3": 0.5, "4": 0.3, "5": 0.2}, p=0.5), entry("}")]
    assert weighted_score({"content": content}) == pytest.approx(3 * 0.5 + 4 * 0.3 + 5 * 0.2)


def test_mass_is_renormalized_over_score_tokens_and_variants_add_up():
    top = {"2": 0.2, " 2": 0.1, '"4': 0.1, "x": 0.5}  # " 2" and '"4' are score tokens too; "x" is not
    content = [entry('{"score":'), entry(" 2", top, p=0.1), entry("}")]
    assert weighted_score(content) == pytest.approx((2 * 0.3 + 4 * 0.1) / 0.4)


def test_the_chosen_token_counts_when_the_provider_left_it_out_of_the_candidates():
    content = [entry('{"score": '), entry("3", {"4": 0.25}, p=0.75), entry("}")]
    assert weighted_score(content) == pytest.approx((3 * 0.75 + 4 * 0.25) / 1.0)


def test_the_token_read_is_the_one_at_the_value_of_the_last_score_key():
    # the key split over tokens; a digit before the key (in the input echo) is not the score
    content = [entry("5", {"5": 1.0}), entry('{"sc'), entry('ore"'), entry(": "), entry("1", {"1": 0.6, "2": 0.4}, p=0.6), entry("}")]
    assert weighted_score(content) == pytest.approx(1 * 0.6 + 2 * 0.4)


@pytest.mark.parametrize(
    "content",
    [
        [entry('{"score": '), entry("x", {"x": 1.0})],  # the token there is not a score
        [entry('{"rating": '), entry("3", {"3": 1.0})],  # no score key
        [entry('{"score": '), entry("3", {"3": 1.0}, p=1.0)][:1],  # cut before the value
        [],
        None,
    ],
)
def test_unreadable_logprobs_give_no_weighted_score(content):
    assert weighted_score(content) is None


class WithLogprobs:
    """An engine that returns a score and logprobs at its token, like an OpenAI-compatible server."""

    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "response_format", "logprobs", "top_logprobs"})

    def __init__(self, reply: str = '{"score": 4}') -> None:
        self.reply = reply
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Response:
        self.requests.append(request)
        tokens = ['{"score": ', "4", "}"]
        tops = [(), (TopLogprob(token="4", logprob=math.log(0.6)), TopLogprob(token="5", logprob=math.log(0.3)), TopLogprob(token="1", logprob=math.log(0.1))), ()]
        logprobs = tuple(TokenLogprob(token=t, logprob=0.0, top=top) for t, top in zip(tokens, tops))
        return Response(
            id="x", model=request.model, message=Message.assistant(self.reply), finish_reason="stop", usage=Usage(input_tokens=1, output_tokens=1), logprobs=logprobs
        )

    def __deepcopy__(self, memo: dict) -> WithLogprobs:
        return self


def test_the_judge_weights_the_parsed_score_by_the_logprobs_it_asked_for():
    engine = WithLogprobs()
    dspy.configure(lm=dspy.LM("custom/lp", engine=engine, cache=False, num_retries=0))
    ratings = HolisticJudge({"fluency": "reads well", "coherence": "holds together"})(input="article", output="summary")
    assert set(ratings) == {"fluency", "coherence"}
    rating = ratings["fluency"]
    assert rating.parsed == 4 and rating.weighted == pytest.approx(4 * 0.6 + 5 * 0.3 + 1 * 0.1) and rating.value == rating.weighted
    assert all(r.config.logprobs == TOP_LOGPROBS for r in engine.requests)  # logprobs=True with top candidates
    assert "fluency: reads well" in engine.requests[0].messages[-1].text  # one call per dimension, its definition in it
    assert len(engine.requests) == 2


def test_without_probability_or_logprobs_the_parsed_integer_is_the_score():
    engine = WithLogprobs()
    dspy.configure(lm=dspy.LM("custom/lp", engine=engine, cache=False, num_retries=0))
    rating = HolisticJudge({"fluency": "reads well"}, probability=False)(input="a", output="b")["fluency"]
    assert (rating.parsed, rating.weighted, rating.value) == (4, None, 4.0)
    assert not engine.requests[0].config.logprobs
    dspy.configure(lm=scripted_lm(lambda r: json.dumps({"score": 2})))  # an LM that gives no logprobs
    rating = HolisticJudge({"fluency": "reads well"})(input="a", output="b")["fluency"]
    assert (rating.parsed, rating.weighted, rating.value) == (2, None, 2.0)


@pytest.mark.parametrize("reply", ['{"score": 9}', "no json here", '{"score": "good"}'])
def test_an_unparseable_or_out_of_range_score_is_missing_never_guessed(reply):
    dspy.configure(lm=scripted_lm(lambda r: reply))
    rating = HolisticJudge({"fluency": "reads well"})(input="a", output="b")["fluency"]
    assert rating.value is None and rating.parsed is None and rating.error


def test_an_lm_error_is_missing():
    def broken(request: Request) -> str:
        raise ConnectionError("endpoint unreachable")

    dspy.configure(lm=scripted_lm(broken))
    rating = HolisticJudge({"fluency": "reads well"})(input="a", output="b")["fluency"]
    assert rating.value is None and "endpoint unreachable" in rating.error
