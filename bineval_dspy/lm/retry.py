"""How a call to a remote server waits and tries again, and the client-side rate limits; no DSPy here, so the
command line's parser can read the defaults without loading it.

A call's retries start within its first ``timeout`` seconds (``--timeout``): a transient failure (HTTP 429, 5xx, a
timeout, a dropped connection) is tried again after the server's ``Retry-After``, else after exponential backoff
with jitter, and no wait reaches past that point. So one call, every attempt and wait included, ends within twice
its timeout, and a server asking to retry after a day costs one timeout, never the day. A call that still fails is
an unanswered question, never a yes.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

FAST_PATH_ENV = "BINEVAL_FAST_PATH"  # 0 / off: per-question remote verdicts go through DSPy's per-call path
DEFAULT_TIMEOUT = 120.0  # seconds to wait for a server's answer to one attempt
MAX_ATTEMPTS = 8  # tries of one call at most, however short its waits
BACKOFF_BASE = 0.5  # seconds before the first retry without a Retry-After; doubled for each retry after it
BACKOFF_CAP = 30.0  # seconds: the longest backoff step


def fast_path_default() -> bool:
    """Whether remote per-question verdicts take the fast path (``lm.fastpath``) unless a run says otherwise: yes,
    unless ``BINEVAL_FAST_PATH`` says 0 or off."""
    return os.environ.get(FAST_PATH_ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def backoff(retry: int, rng: random.Random) -> float:
    """The wait before retry number ``retry`` (0 first) without a server hint: exponential, with "equal jitter"
    (half the step fixed, half random), so clients throttled together do not come back together."""
    step = min(BACKOFF_CAP, BACKOFF_BASE * 2**retry)
    return step / 2 + rng.uniform(0, step / 2)


def wait_before_retry(retry: int, retry_after: float | None, remaining: float, rng: random.Random) -> float | None:
    """Seconds to wait before retry number ``retry``, or None to give up: out of attempts, or no time left of
    the call's budget. The server's ``Retry-After`` (when it sent a usable one) comes before our backoff; either
    is cut to what is left of the budget."""
    if retry + 1 >= MAX_ATTEMPTS or remaining <= 0:
        return None
    usable = retry_after is not None and math.isfinite(retry_after) and retry_after >= 0
    hint = retry_after if usable and retry_after is not None else backoff(retry, rng)
    return min(hint, remaining)


@dataclass
class _Bucket:
    """A token bucket: ``rate`` units a second, holding at most ``capacity``; ``level`` may go below zero (a
    request larger than the bucket is a debt the next requests wait out)."""

    rate: float
    capacity: float
    level: float

    def refill(self, elapsed: float) -> None:
        self.level = min(self.capacity, self.level + elapsed * self.rate)

    def shortfall(self, amount: float) -> float:
        """Seconds until the bucket holds ``amount`` (capped at its capacity); 0 when it does now."""
        return max(0.0, (min(amount, self.capacity) - self.level) / self.rate)


def _bucket(per_minute: float | None, smallest: float) -> _Bucket | None:
    """A bucket spacing ``per_minute`` evenly: it holds one second's allowance (at least ``smallest``)."""
    if not per_minute:
        return None
    capacity = max(smallest, per_minute / 60)
    return _Bucket(rate=per_minute / 60, capacity=capacity, level=capacity)


class RateLimiter:
    """Client-side limits of requests and tokens per minute (``--rpm``, ``--tpm``), shared by every thread of the
    process: requests are spaced evenly (bursts of at most one second's allowance), so a provider's per-minute
    limit is met without its 429s. Tokens are an estimate before the request (``settle`` corrects it)."""

    def __init__(
        self, rpm: float | None = None, tpm: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._requests = _bucket(rpm, 1.0)
        self._tokens = _bucket(tpm, 1.0)
        self._clock = clock
        self._lock = threading.Lock()
        self._at = clock()

    @property
    def limited(self) -> bool:
        return self._requests is not None or self._tokens is not None

    def acquire(self, tokens: int, sleep: Callable[[float], None] = time.sleep) -> float:
        """Take one request and ``tokens`` from the buckets, waiting until they allow it; the seconds waited."""
        waited = 0.0
        while (short := self._take(tokens)) > 0:
            sleep(short)
            waited += short
        return waited

    async def wait(self, tokens: int) -> None:
        """``acquire`` for a call on an event loop: the wait is the loop's, not the thread's."""
        while (short := self._take(tokens)) > 0:
            await asyncio.sleep(short)

    def _take(self, tokens: int) -> float:
        """Take one request and ``tokens`` when the buckets hold them (0 returned), else the seconds to wait."""
        with self._lock:
            now = self._clock()
            for bucket in self._buckets():
                bucket.refill(now - self._at)
            self._at = now
            short = max(
                self._requests.shortfall(1) if self._requests else 0.0,
                self._tokens.shortfall(tokens) if self._tokens else 0.0,
            )
            if short <= 0:
                if self._requests:
                    self._requests.level -= 1
                if self._tokens:
                    self._tokens.level -= tokens
            return short

    def settle(self, estimated: int, used: int) -> None:
        """Correct the token bucket once a reply says how many tokens the request used."""
        if self._tokens is not None:
            with self._lock:
                self._tokens.level = min(self._tokens.capacity, self._tokens.level + estimated - used)

    def _buckets(self) -> list[_Bucket]:
        return [bucket for bucket in (self._requests, self._tokens) if bucket is not None]
