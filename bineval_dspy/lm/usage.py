"""What a piece of work asked of its LMs: calls (cache hits included), the tokens they billed and their price."""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import dspy
from dspy.utils.callback import BaseCallback
from dspy.utils.usage_tracker import UsageTracker
from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer, model_validator

from bineval_dspy.lm.prices import price_of

T = TypeVar("T")


class CallCounter(BaseCallback):
    """Counts LM calls per model string (cache hits included: they are what the program asked for); thread-safe."""

    def __init__(self) -> None:
        self.by_model: Counter[str] = Counter()
        self.throttled = 0  # calls a server throttled (HTTP 429 or 503) at least once
        self.retried = 0  # calls sent again after a transient failure
        self.hits = 0  # calls answered from the cache (``report_cache_hit``)
        self.hit_tokens = 0  # what those replies billed when they were first made
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        return sum(self.by_model.values())

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        with self._lock:
            self.by_model[str(getattr(instance, "model", ""))] += 1

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self.by_model)

    def count_retries(self, throttled: bool, retried: bool) -> None:
        """Told by the remote engine when one call is over (``report_retries``)."""
        with self._lock:
            self.throttled += throttled
            self.retried += retried

    def retries(self) -> tuple[int, int]:
        with self._lock:
            return self.throttled, self.retried

    def count_hit(self, tokens: int) -> None:
        """Told by the cache when it answers a call (``report_cache_hit``)."""
        with self._lock:
            self.hits += 1
            self.hit_tokens += tokens

    def cache_hits(self) -> tuple[int, int]:
        with self._lock:
            return self.hits, self.hit_tokens


def report_cache_hit(tokens: int) -> None:
    """Count one call the cache answered in every ``measuring`` block around it, with the tokens its reply billed
    when it was made (0 where the entry does not say): what a rerun without the cache would pay again."""
    for callback in dspy.settings.callbacks or ():
        if isinstance(callback, CallCounter):
            callback.count_hit(tokens)


def cached_reply_tokens(record: Any) -> int:
    """The tokens a cached reply billed when it was made, where the entry keeps its usage (else 0)."""
    usage = record.get("usage") if isinstance(record, dict) else None
    if not isinstance(usage, dict):
        return 0
    return int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)


def report_retries(throttled: bool, retried: bool) -> None:
    """Count one finished call's throttling and retries in every ``measuring`` block around it (each has its
    counter among DSPy's callbacks, which follow the call into worker threads)."""
    if not (throttled or retried):
        return
    for callback in dspy.settings.callbacks or ():
        if isinstance(callback, CallCounter):
            callback.count_retries(throttled, retried)


class Cost(BaseModel):
    """LM calls, tokens and US dollars spent by one piece of work: the ``usage`` block of every JSON output.

    Tokens are what the LM billed (a call answered from the cache bills none); ``cached_prompt_tokens`` where the
    provider reports them, else None. ``usd`` prices each call with its model's rates in LiteLLM's bundled map;
    ``unpriced_calls`` counts the calls whose model has no price there (embedded models, servers at
    ``--api-base``). A sum keeps the known dollars and the count of unpriced calls, so a total over priced and
    unpriced work says it is ``partial``; ``usd`` is None only when none of the calls has a price (unknown is never 0).
    ``throttled_calls`` counts the calls a server throttled (HTTP 429 or 503) at least once, ``retried_calls`` those
    sent again after a transient failure (servers at ``--api-base``; ``bineval_dspy.lm.retry``). ``cache_hits`` counts
    the calls the disk cache answered (the rest were sent: the misses, which billed ``tokens``), ``cache_hit_tokens``
    what those replies billed when first made: a rerun on the same cache pays for the misses only, one without it
    pays for both.
    """

    lm_calls: int = 0
    tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int | None = None
    usd: float | None = None
    unpriced_calls: int = 0
    throttled_calls: int = 0
    retried_calls: int = 0
    cache_hits: int = 0
    cache_hit_tokens: int = 0

    @property
    def cache_misses(self) -> int:
        """The calls sent to the LM (not answered from the cache)."""
        return self.lm_calls - self.cache_hits

    @model_validator(mode="after")
    def _canonical(self) -> Cost:
        """One reading per state: no call costs $0; no priced call (or a record without prices) is usd None."""
        if self.lm_calls == 0:
            self.usd, self.unpriced_calls = self.usd or 0.0, 0
        elif self.usd is None or self.unpriced_calls >= self.lm_calls:
            self.usd, self.unpriced_calls = None, self.lm_calls
        return self

    @model_serializer(mode="wrap")
    def _unknowns_shown(self, handler: SerializerFunctionWrapHandler) -> Any:
        """An unknown stays in the block as null (``"usd": null``), also inside output written with exclude_none."""
        data = handler(self)
        if not isinstance(data, dict):
            return data
        return {name: data.get(name) for name in type(self).model_fields if name in data or getattr(self, name) is None}

    @property
    def priced(self) -> bool:
        """Whether ``usd`` is the whole price (every call priced)."""
        return self.unpriced_calls == 0

    @property
    def partial(self) -> bool:
        """Whether ``usd`` prices only some of the calls."""
        return 0 < self.unpriced_calls < self.lm_calls

    def __add__(self, other: Cost) -> Cost:
        cached = None if self.cached_prompt_tokens is None and other.cached_prompt_tokens is None else (
            (self.cached_prompt_tokens or 0) + (other.cached_prompt_tokens or 0)
        )
        usd = None if self.usd is None and other.usd is None else (self.usd or 0.0) + (other.usd or 0.0)
        return Cost(
            lm_calls=self.lm_calls + other.lm_calls,
            tokens=self.tokens + other.tokens,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_prompt_tokens=cached,
            usd=usd,
            unpriced_calls=self.unpriced_calls + other.unpriced_calls,
            throttled_calls=self.throttled_calls + other.throttled_calls,
            retried_calls=self.retried_calls + other.retried_calls,
            cache_hits=self.cache_hits + other.cache_hits,
            cache_hit_tokens=self.cache_hit_tokens + other.cache_hit_tokens,
        )

    def price_text(self) -> str:
        """The dollars as a reader should take them: exact, partial, or unknown."""
        if self.usd is None:
            return "price unknown"
        if self.unpriced_calls:
            return f"{dollars(self.usd)} for {self.lm_calls - self.unpriced_calls} call(s), {self.unpriced_calls} unpriced (partial)"
        return dollars(self.usd)

    def summary(self, unknown_price: bool = False) -> str:
        """One line for a console: calls, tokens, dollars; ``unknown_price`` (the run's LM has no price) says
        "price unknown" even for no call (a resumed run), as every other run on that LM does."""
        cached = f", {self.cached_prompt_tokens:,} of them cached" if self.cached_prompt_tokens is not None else ""
        retries = f"; {self.throttled_calls:,} throttled, {self.retried_calls:,} retried" if self.throttled_calls or self.retried_calls else ""
        return (
            f"{self.lm_calls:,} LM call(s), {self.tokens:,} tokens ({self.prompt_tokens:,} prompt{cached}, "
            f"{self.completion_tokens:,} completion), {'price unknown' if unknown_price and not self.lm_calls else self.price_text()}{retries}"
            f"{self.cache_text()}"
        )

    def cache_text(self) -> str:
        """What the cache saved, for a reader deciding on a rerun: the calls it answered and sent, with their tokens."""
        if not self.lm_calls:
            return ""
        return (
            f"; cache: {self.cache_hits:,} hit(s) ({self.cache_hit_tokens:,} tokens not billed again), "
            f"{self.cache_misses:,} miss(es) ({self.tokens:,} tokens billed)"
        )


def total(costs: Iterable[Cost]) -> Cost:
    """The sum of costs (an empty sum is no cost)."""
    result = Cost()
    for cost in costs:
        result = result + cost
    return result


def dollars(usd: float) -> str:
    """US dollars to three significant digits and at least cents, without an exponent: $0.000612, $12.35."""
    if usd == 0:
        return "$0"
    digits = max(2, 2 - math.floor(math.log10(abs(usd))))
    return f"${usd:,.{digits}f}"


class Measurement:
    """Filled in when a ``measuring`` block ends, also when it ends with an exception (the calls were made)."""

    cost: Cost = Cost()


@contextmanager
def measuring(counter: CallCounter | None = None) -> Iterator[Measurement]:
    """Count the LM calls, tokens and dollars of the block (tokens as DSPy's usage tracker reports them)."""
    counter = counter or CallCounter()
    before, retries_before, hits_before = counter.snapshot(), counter.retries(), counter.cache_hits()
    measurement = Measurement()
    with dspy.context(callbacks=[*dspy.settings.callbacks, counter]), dspy.track_usage() as usage:
        try:
            yield measurement
        finally:
            throttled, retried = (now - then for now, then in zip(counter.retries(), retries_before))
            hits, hit_tokens = (now - then for now, then in zip(counter.cache_hits(), hits_before))
            cost = _cost(counter.snapshot() - before, usage.get_total_tokens())
            update = {"throttled_calls": throttled, "retried_calls": retried, "cache_hits": hits, "cache_hit_tokens": hit_tokens}
            measurement.cost = cost.model_copy(update=update)


class CallTally:
    """The calls, billed usage and retries of work whose LM calls do not go through DSPy's LM (the verdict fast
    path, ``lm.fastpath``), counted as ``measuring`` counts DSPy's: every call (cache hits included), the usage
    of each reply a server sent, a throttled or retried call once."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.usage = UsageTracker()
        self.throttled = self.retried = 0
        self.hits = self.hit_tokens = 0

    def hit(self, model: str, tokens: int) -> None:
        """One call on ``model`` the cache answered; ``tokens``: what its reply billed when it was made."""
        self.calls[model] += 1
        self.hits += 1
        self.hit_tokens += tokens

    def count(self, model: str, usage: dict[str, Any] | None = None) -> None:
        """One call on ``model`` sent to it; ``usage``: what its reply billed (None: no reply)."""
        self.calls[model] += 1
        if usage:
            self.usage.add_usage(model, usage)

    def cost(self) -> Cost:
        update = {"throttled_calls": self.throttled, "retried_calls": self.retried, "cache_hits": self.hits, "cache_hit_tokens": self.hit_tokens}
        return _cost(self.calls, self.usage.get_total_tokens()).model_copy(update=update)


def measured(work: Callable[[], T], counter: CallCounter | None = None) -> tuple[T, Cost]:
    """Run ``work`` and return its result with its ``Cost``."""
    with measuring(counter) as measurement:
        result = work()
    return result, measurement.cost


def _cost(calls: Counter[str], usage: dict[str, dict[str, Any]]) -> Cost:
    """A ``Cost`` from the calls per model and DSPy's usage totals per model."""
    totals = list(usage.values())
    prompt = sum(int(u.get("prompt_tokens") or 0) for u in totals)
    completion = sum(int(u.get("completion_tokens") or 0) for u in totals)
    reported = [(u.get("prompt_tokens_details") or {}).get("cached_tokens") for u in totals]
    cached = sum(int(c) for c in reported if c is not None) if any(c is not None for c in reported) else None
    usd, unpriced = 0.0, 0
    for model in set(calls) | set(usage):
        price = price_of(model)
        if price is None:
            unpriced += calls.get(model, 0)
        else:
            usd += price.usd(usage.get(model, {}))
    return Cost(
        lm_calls=sum(calls.values()),
        tokens=prompt + completion,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_prompt_tokens=cached,
        usd=usd,
        unpriced_calls=unpriced,
    )
