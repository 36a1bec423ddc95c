"""Counting what a piece of work asked of its LMs: calls (cache hits included) and tokens."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import dspy
from dspy.utils.callback import BaseCallback
from pydantic import BaseModel

T = TypeVar("T")


class CallCounter(BaseCallback):
    """Counts LM calls (cache hits included: they are what the program asked for); safe across threads."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        with self._lock:
            self.calls += 1


class Cost(BaseModel):
    """LM calls and tokens spent by one piece of work; ``cached_prompt_tokens`` where the provider reports them."""

    lm_calls: int = 0
    tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int | None = None

    def __add__(self, other: Cost) -> Cost:
        cached = None if self.cached_prompt_tokens is None and other.cached_prompt_tokens is None else (
            (self.cached_prompt_tokens or 0) + (other.cached_prompt_tokens or 0)
        )
        return Cost(
            lm_calls=self.lm_calls + other.lm_calls,
            tokens=self.tokens + other.tokens,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_prompt_tokens=cached,
        )


def measured(work: Callable[[], T], counter: CallCounter | None = None) -> tuple[T, Cost]:
    """Run ``work`` counting its LM calls and tokens (tokens as DSPy's usage tracker reports them)."""
    counter = counter or CallCounter()
    before = counter.calls
    with dspy.context(callbacks=[*dspy.settings.callbacks, counter]), dspy.track_usage() as usage:
        result = work()
    totals = list(usage.get_total_tokens().values())
    prompt = sum(int(u.get("prompt_tokens") or 0) for u in totals)
    completion = sum(int(u.get("completion_tokens") or 0) for u in totals)
    reported = [(u.get("prompt_tokens_details") or {}).get("cached_tokens") for u in totals]
    cached = sum(int(c) for c in reported if c is not None) if any(c is not None for c in reported) else None
    return result, Cost(
        lm_calls=counter.calls - before,
        tokens=prompt + completion,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_prompt_tokens=cached,
    )
