"""Counting what work asked of its LMs: calls, tokens, cached prompt tokens where the engine reports them, and dollars
from LiteLLM's bundled price map (offline; unknown prices are None, never 0)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import dspy
import pytest
from dspy.lm15 import Message, Request, Response, Usage

from bineval_dspy.lm.prices import COST_MAP, price_of
from bineval_dspy.lm.usage import Cost, dollars, measured, total
from bineval_dspy.testing import scripted_lm


class CachingEngine:
    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens"})

    def __init__(self, cached: int | None) -> None:
        self.cached = cached

    def complete(self, request: Request) -> Response:
        usage = Usage(input_tokens=10, output_tokens=2, cache_read_tokens=self.cached)
        return Response(id="r", model=request.model, message=Message.assistant("ok"), finish_reason="stop", usage=usage)

    def __deepcopy__(self, memo: dict) -> CachingEngine:
        return self


def run_twice(cached: int | None) -> Cost:
    lm = dspy.LM("custom/caching", engine=CachingEngine(cached), cache=False, num_retries=0)
    predict = dspy.Predict("question -> answer")

    def work() -> None:
        with dspy.context(lm=lm, adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
            for _ in range(2):
                try:
                    predict(question="q")
                except Exception:  # "ok" is not a ChatAdapter reply; the call still happened and was counted
                    pass

    return measured(work)[1]


def test_cached_prompt_tokens_are_reported_where_the_engine_gives_them():
    cost = run_twice(cached=7)
    assert (cost.lm_calls, cost.prompt_tokens, cost.completion_tokens, cost.tokens) == (2, 20, 4, 24)
    assert cost.cached_prompt_tokens == 14
    assert run_twice(cached=None).cached_prompt_tokens is None  # not reported is not zero


def test_costs_add_up():
    total = Cost(lm_calls=1, tokens=5, prompt_tokens=4, completion_tokens=1, cached_prompt_tokens=None) + Cost(
        lm_calls=2, tokens=3, prompt_tokens=2, completion_tokens=1, cached_prompt_tokens=2
    )
    assert total == Cost(lm_calls=3, tokens=8, prompt_tokens=6, completion_tokens=2, cached_prompt_tokens=2, usd=None, unpriced_calls=3)


# -- prices -------------------------------------------------------------------------------------------------------
def bundled_map() -> dict:
    """LiteLLM's bundled price map, read here independently of the code under test."""
    return json.loads(Path(str(importlib.metadata.distribution("litellm").locate_file(COST_MAP))).read_text(encoding="utf-8"))


def ask(lm: dspy.LM, times: int) -> None:
    predict = dspy.Predict("question -> answer")
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        for n in range(times):
            predict(question=f"q{n}")


def test_dollars_come_from_litellms_bundled_map():
    usage = Usage(input_tokens=1000, output_tokens=200, cache_read_tokens=400)
    lm = scripted_lm(lambda r: '{"answer": "4"}', model="openai/gpt-4o-mini", usage=usage)
    cost = measured(lambda: ask(lm, 2))[1]
    entry = bundled_map()["gpt-4o-mini"]
    per_call = 600 * entry["input_cost_per_token"] + 400 * entry["cache_read_input_token_cost"] + 200 * entry["output_cost_per_token"]
    assert cost.usd == pytest.approx(2 * per_call, rel=1e-12) and cost.priced and not cost.partial
    assert (cost.lm_calls, cost.prompt_tokens, cost.completion_tokens, cost.cached_prompt_tokens) == (2, 2000, 400, 800)


@pytest.mark.parametrize(
    "model, entry",
    [
        ("openai/gpt-4o-mini", "gpt-4o-mini"),  # the map names most models without their provider...
        ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("anthropic/gpt-4o-mini", None),  # ... and such a name counts only for the entry's own provider
        ("openai/local@http://127.0.0.1:8000/v1", None),  # a server sets its own price
        ("local/smollm2-135m-instruct-q4_1@sha256-0123456789ab", None),  # embedded
        ("custom/scripted", None),
        ("openai/no-such-model", None),
    ],
)
def test_prices_are_looked_up_by_model_string(model, entry):
    price = price_of(model)
    assert (price.entry if price else None) == entry
    if price is not None:
        assert price.input == bundled_map()[entry]["input_cost_per_token"]


def test_an_unknown_price_is_none_never_zero_and_a_mixed_sum_says_it_is_partial():
    unknown = measured(lambda: ask(scripted_lm(lambda r: '{"answer": "4"}'), 3))[1]
    assert (unknown.usd, unknown.unpriced_calls, unknown.priced) == (None, 3, False)
    assert unknown.price_text() == "price unknown"
    priced = measured(lambda: ask(scripted_lm(lambda r: '{"answer": "4"}', model="openai/gpt-4o-mini"), 1))[1]
    both = measured(lambda: (ask(scripted_lm(lambda r: '{"answer": "4"}'), 3), ask(scripted_lm(lambda r: '{"answer": "4"}', model="openai/gpt-4o-mini"), 1)))[1]
    assert both.lm_calls == 4 and both.unpriced_calls == 3 and both.partial and both.usd == pytest.approx(priced.usd)
    assert unknown + priced == both  # adding costs gives what measuring the work together gives
    assert "partial" in both.price_text() and "3 unpriced" in both.price_text()


def test_cost_arithmetic_and_its_canonical_states():
    assert Cost() + Cost() == Cost() and Cost().usd == 0.0  # no call costs nothing, exactly
    assert Cost(lm_calls=2, usd=None).unpriced_calls == 2  # no price: every call is unpriced
    assert Cost(lm_calls=2, usd=0.5, unpriced_calls=2).usd is None  # all calls unpriced: no dollars known
    a, b, c = Cost(lm_calls=1, usd=0.25), Cost(lm_calls=2, usd=None), Cost(lm_calls=1, usd=0.5, tokens=3)
    assert (a + b) + c == a + (b + c) == total([a, b, c])
    assert total([a, b, c]).usd == 0.75 and total([a, b, c]).unpriced_calls == 2 and total([b, b]).usd is None
    legacy = Cost.model_validate({"lm_calls": 4, "tokens": 9})  # a record written before prices were
    assert (legacy.usd, legacy.unpriced_calls) == (None, 4)
    assert b.model_dump(exclude_none=True)["usd"] is None  # the block always names its unknowns
    assert [dollars(x) for x in (0, 0.000612, 0.0123, 12.345, 1500)] == ["$0", "$0.000612", "$0.0123", "$12.35", "$1,500.00"]


NO_NETWORK = """
import os, socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(args)
    raise OSError("no network in this test")
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
import bineval_dspy
from bineval_dspy.lm.prices import price_of
price = price_of("openai/gpt-4o-mini")
assert "litellm" not in sys.modules  # our prices import no LiteLLM
import litellm  # with the setting bineval_dspy made, LiteLLM reads its bundled map too
assert litellm.model_cost["gpt-4o-mini"]["input_cost_per_token"] == price.input
print(os.environ["LITELLM_LOCAL_MODEL_COST_MAP"], len(attempts))
"""


def test_prices_never_touch_the_network():
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    done = subprocess.run([sys.executable, "-c", NO_NETWORK], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "0"]
