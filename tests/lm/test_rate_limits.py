"""Throttling servers on 127.0.0.1: 429/503 honoured with Retry-After inside the call's timeout budget, backoff
with jitter, client-side --rpm/--tpm, the throttled and retried calls counted in ``usage``; a call that still fails
is unanswered, never a yes. The real DSPy LM, our engine and DSPy's cache run; only the servers are fakes."""

from __future__ import annotations

import itertools
import json
import random
import time
from concurrent.futures import ThreadPoolExecutor

import dspy
import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import ExitCode, InputError
from bineval_dspy.core.schema import Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.lm import remote
from bineval_dspy.lm.retry import BACKOFF_BASE, MAX_ATTEMPTS, RateLimiter, backoff, wait_before_retry
from bineval_dspy.lm.specs import make_lm
from tests.cli.test_reliability import judge_args, write_inputs
from tests.fake_openai import scripted_server, verdict

SLOW_DOWN = {"error": {"message": "slow down", "type": "rate_limit"}}
REFUSAL = (500, {"error": {"message": "body.response_format.type: Input should be 'text' or 'json_object'", "type": "internal_server_error"}})


@pytest.fixture(autouse=True)
def fresh_format_memory(monkeypatch):
    monkeypatch.setattr(remote, "_server_forms", {})


def usage_of(tmp_path) -> dict:
    (row,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    return row["bineval"]["usage"]


def failing_then(status: int, times: int, headers: dict[str, str] | None = None):
    """A reply failing ``times`` times with ``status``, then answering yes."""
    count = itertools.count()

    def reply(body: dict):
        return (status, SLOW_DOWN) if next(count) < times else verdict("yes")

    return reply, {status: headers or {}}


@pytest.mark.parametrize("status, headers", [(429, {"Retry-After": "0.3"}), (503, {})])
def test_a_throttling_server_is_waited_for_and_counted_in_usage(tmp_path, status, headers):
    write_inputs(tmp_path)
    reply, sent = failing_then(status, 2, headers)
    with scripted_server(reply) as server:
        server.headers = sent
        started = time.monotonic()
        assert cli.main(judge_args(tmp_path, *server.lm_args(), "--timeout", "20")) == ExitCode.OK
        took = time.monotonic() - started
    assert len(server.bodies) == 3
    usage = usage_of(tmp_path)
    assert (usage["lm_calls"], usage["throttled_calls"], usage["retried_calls"]) == (1, 1, 1)
    if headers:  # Retry-After honoured: two waits of 0.3 s
        assert took >= 0.6
    else:  # backoff: BACKOFF_BASE then twice it, each with jitter in [half, all] of the step
        assert took >= 0.75 * BACKOFF_BASE


def test_a_server_that_keeps_throttling_costs_one_timeout_and_leaves_the_question_unanswered(tmp_path):
    write_inputs(tmp_path)
    with scripted_server(lambda body: (429, SLOW_DOWN)) as server:
        started = time.monotonic()
        assert cli.main(judge_args(tmp_path, *server.lm_args(), "--timeout", "1.5")) == ExitCode.LM_FAILURE  # every call alike
        took = time.monotonic() - started
    row = json.loads((tmp_path / "out.jsonl").read_text())
    (verdict_,) = row["bineval"]["scorecard"]["verdicts"]
    assert verdict_["answer"] == "unanswered"
    assert 2 <= len(server.bodies) <= MAX_ATTEMPTS and took < 1.5 + 10  # retried inside the budget, then given up
    assert row["bineval"]["usage"]["throttled_calls"] == 1


def test_a_request_the_server_refuses_is_not_retried(tmp_path):
    write_inputs(tmp_path)
    with scripted_server(lambda body: (400, {"error": {"message": "bad request", "type": "invalid_request_error"}})) as server:
        assert cli.main(judge_args(tmp_path, *server.lm_args())) == ExitCode.LM_FAILURE  # every call alike
    assert len(server.bodies) == 1
    assert usage_of(tmp_path)["retried_calls"] == 0


def test_retry_after_comes_first_and_never_past_the_budget():
    rng = random.Random(0)
    assert wait_before_retry(0, 2.0, remaining=10.0, rng=rng) == 2.0
    assert wait_before_retry(0, 100000.0, remaining=1.5, rng=rng) == 1.5  # a day's Retry-After: what is left
    assert wait_before_retry(0, None, remaining=0.0, rng=rng) is None  # the budget is spent
    assert wait_before_retry(MAX_ATTEMPTS - 1, 0.1, remaining=10.0, rng=rng) is None  # out of attempts
    assert wait_before_retry(0, float("nan"), remaining=10.0, rng=rng) is not None  # an unusable hint: backoff


def test_backoff_doubles_with_jitter():
    rng = random.Random(1)
    for retry in range(4):
        step = BACKOFF_BASE * 2**retry
        waits = {backoff(retry, rng) for _ in range(20)}
        assert all(step / 2 <= w <= step for w in waits) and len(waits) > 1  # jittered, within its step


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_requests_per_minute_are_spaced_evenly():
    clock = FakeClock()
    limiter = RateLimiter(rpm=120, clock=clock)
    for _ in range(8):
        limiter.acquire(0, sleep=clock.sleep)
    assert clock.now == pytest.approx(3.0)  # 2 a second: a burst of 2, then one every 0.5 s


def test_tokens_per_minute_include_a_debt_for_a_large_request():
    clock = FakeClock()
    limiter = RateLimiter(tpm=600, clock=clock)  # 10 tokens a second
    limiter.acquire(50, sleep=clock.sleep)  # larger than the bucket: taken once it is full, leaving a debt
    limiter.acquire(10, sleep=clock.sleep)
    assert clock.now == pytest.approx(5.0)  # the 40-token debt and then 10 more: 5 s at 10 a second
    limiter.settle(estimated=10, used=0)  # the reply billed nothing: the estimate comes back
    before = clock.now
    limiter.acquire(10, sleep=clock.sleep)
    assert clock.now == before


def test_rpm_paces_a_judge_run(tmp_path):
    write_inputs(tmp_path, [Question(text=f"Is it {i}?", dimension="d") for i in range(4)])
    with scripted_server(lambda body: verdict("yes")) as server:
        started = time.monotonic()
        assert cli.main(judge_args(tmp_path, *server.lm_args(), "--rpm", "120", "--threads", "4")) == ExitCode.OK
        took = time.monotonic() - started
    assert len(server.bodies) == 4 and took >= 1.0  # a burst of 2, then one every 0.5 s


def test_rpm_without_a_server_is_refused_before_any_call():
    with pytest.raises(InputError, match="`rpm`: a limit for a server at `api_base`"):
        make_lm("openai/gpt-4o-mini", rpm=60)


def test_a_refused_spelling_costs_one_request_however_many_calls_are_in_flight():
    """llama-cpp-python's server refuses OpenAI's json_schema: 16 calls in flight at once meet the refusal once."""
    def reply(body: dict):
        time.sleep(0.05)  # the calls overlap
        if body.get("response_format", {}).get("type") == "json_schema":
            return REFUSAL
        return verdict("no")

    with scripted_server(reply) as server:
        lm = make_lm("openai/m", api_base=server.url, cache=False)

        def ask(i: int) -> str:
            with dspy.context(lm=lm):
                return BinaryJudge().judge_question("in", "out", Question(text=f"Is it {i}?", dimension="d")).answer

        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(ask, range(16)))
    assert answers == ["no"] * 16
    spellings = [body["response_format"]["type"] for body in server.bodies]
    assert spellings.count("json_schema") == 1 and len(spellings) == 17
    assert server.most_in_flight > 1  # the other calls did run together once the spelling was known
