"""Counting what work asked of its LMs: calls, tokens and cached prompt tokens where the engine reports them."""

from __future__ import annotations

import dspy
from dspy.lm15 import Message, Request, Response, Usage

from bineval_dspy.lm.usage import Cost, measured


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
    assert total == Cost(lm_calls=3, tokens=8, prompt_tokens=6, completion_tokens=2, cached_prompt_tokens=2)
