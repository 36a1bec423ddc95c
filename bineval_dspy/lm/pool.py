"""Several servers for one model (``api_base`` given more than once): each call goes to the replica that should
answer it soonest (fewest requests open, weighted by how long its replies take), a replica that fails to answer
(refused, reset, timed out, a 5xx) leaves the rotation for a while, and the call is sent again to another, so a
replica that dies or hangs mid-run loses no row.

A call's budget is twice the timeout, as one server's; an attempt gets one timeout of it, so a replica that hangs
leaves the other timeout to a healthy one. A call still unanswered halfway through its attempt (sooner on a replica
whose replies are fast) is also sent to another replica, and the first reply wins: a slow replica costs a call that
much, not its whole budget.

Each replica is a ``RemoteEngine`` with its own client, schema spelling and client-side rate limits (``rpm``, ``tpm``
are per server); the pool caps the calls open across all of them (``limit_in_flight``). A call no replica answers
within its budget raises, as one server's would: the verdict is unanswered, never a yes.

``remote_lm`` makes the ``dspy.LM`` of servers at ``api_base``: one ``RemoteEngine``, or a pool of several.

Why not LiteLLM's Router: servers at ``api_base`` are called through DSPy's lm15 client by ``RemoteEngine`` (schema
spellings, deadlines, retries), not through LiteLLM; the pool keeps that engine and adds latency-aware least-busy
routing, failover and hedging over it.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import threading
import time
from collections.abc import Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, TypeVar

import dspy
from dspy.lm15 import ProviderError, Request, Response, TimeoutError

from bineval_dspy.lm.engine import EngineBase
from bineval_dspy.lm.remote import TRANSIENT, Exchange, LM15Exchange, RemoteEngine, Retries, on_io_loop
from bineval_dspy.lm.retry import wait_before_retry
from bineval_dspy.lm.usage import report_retries

if TYPE_CHECKING:
    from bineval_dspy.enforce.steering import Steering

R = TypeVar("R")

COOLDOWN_S = 5.0  # a replica that failed is left out this long, then tried again (it may have come back)
HEDGE_FLOOR_S = 1.0  # no hedge before this: a reply a little slower than usual is not worth a second request
HEDGE_TIMES = 4  # a call not answered within this many times its replica's usual latency is hedged ...
HEDGE_SHARE = 0.5  # ... and in any case once this share of its attempt's timeout has passed
SMOOTHING = 0.2  # the weight of the newest reply in a replica's latency estimate


class ReplicaPool(EngineBase):
    """One model served by several OpenAI-compatible servers, called as one engine."""

    in_process = False
    supports_response_schema = True
    supports_function_calling = False
    supports_reasoning = False
    supported_params = RemoteEngine.supported_params

    def __init__(self, replicas: Sequence[RemoteEngine], *, cooldown: float = COOLDOWN_S) -> None:
        if len(replicas) < 2:
            raise ValueError("a pool has two replicas or more")
        self.replicas = list(replicas)
        self.supports_steering = replicas[0].supports_steering  # replicas of one spec: one kind of server
        self.steering_code = replicas[0].steering_code
        self.spec = replicas[0].spec
        self.timeout = max(r.timeout for r in replicas)
        self.cooldown = cooldown
        self.answered = [0] * len(replicas)  # replies per replica, for the run's record and the tests
        self.latency: list[float | None] = [None] * len(replicas)  # seconds a reply takes, smoothed; None: none yet
        self.down_until = [0.0] * len(replicas)
        self._open: list[dict[int, float]] = [{} for _ in replicas]  # attempts open per replica: id -> when sent
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._slots: asyncio.Semaphore | None = None
        self._rng = random.Random()

    def unsteerable(self, steering: Steering) -> str:
        return self.replicas[0].unsteerable(steering)

    @property
    def model(self) -> str:
        """The spec and every server: cache keys and verdicts name the pool, whichever replica answered."""
        return f"{self.spec}@{','.join(r.api_base for r in self.replicas)}"

    def __deepcopy__(self, memo: dict[str, Any]) -> ReplicaPool:
        return self  # program copies share the pool

    def limit_in_flight(self, most: int | None) -> bool:
        """At most ``most`` calls open across the replicas (a hedge is part of its call); each replica's own pool
        of connections grows to it."""
        self._slots = asyncio.Semaphore(most) if most else None
        for replica in self.replicas:
            replica.limit_in_flight(None)
            if most:
                replica.widen(2 * most)  # a call and its hedge
        return True

    def complete(self, request: Request) -> Response:
        """DSPy's door: one request through ``call``, on the I/O loop; its retries are counted in the ``usage`` of the
        work around it."""
        retries = Retries()
        try:
            return on_io_loop(self.call(LM15Exchange(self.replicas[0]._grammared(request)), retries))  # one server kind
        finally:
            report_retries(False, retries.retried)

    async def call(self, exchange: Exchange[R], retries: Retries) -> R:
        """The first reply of the replicas ``exchange`` is sent to: the one expected to answer soonest, another at
        once when an attempt fails and one beside it when an attempt is slow (``hedge_after``); when every replica
        failed, all again after a wait while the call's first timeout lasts. Each attempt ends within one timeout,
        the call within two; a failover or a hedge is noted in ``retries``."""
        started = time.monotonic()
        deadline = started + 2 * self.timeout
        tried: set[int] = set()
        running: dict[asyncio.Task[R], tuple[int, float]] = {}  # attempt -> its replica, when its hedge is due
        retry = 0
        async with self._slots if self._slots is not None else nullcontext():
            self._launch(self._pick(tried), exchange, deadline, running, tried)
            while True:
                due = min((at for _, at in running.values()), default=deadline)
                done, _ = await asyncio.wait(running, timeout=max(0.0, min(due, deadline) - time.monotonic()), return_when=asyncio.FIRST_COMPLETED)
                if not done:
                    if time.monotonic() >= deadline:
                        raise TimeoutError(f"no replica answered within the call's {2 * self.timeout:g} s") from None
                    spare = self._spare(tried)
                    for slow, (index, at) in running.items():
                        if at <= time.monotonic():
                            running[slow] = (index, deadline)  # one hedge per attempt
                    if spare is not None:  # a hedge: the slow attempt goes on beside it, the first reply wins
                        retries.retried = True
                        self._launch(spare, exchange, deadline, running, tried)
                    continue
                failure: BaseException | None = None
                for task in done:
                    index, _ = running.pop(task)
                    failure = task.exception()
                    if failure is None:
                        return task.result()
                    if not _replica_fault(failure):
                        raise failure
                    retries.retried = True
                    self._fail(index)
                if running:
                    continue  # another attempt of this call is still open
                if len(tried) < len(self.replicas):
                    index = self._pick(tried)  # another replica, now
                else:
                    assert failure is not None  # a task of this round failed, or the call had returned
                    if not isinstance(failure, TRANSIENT):
                        raise failure  # every replica sent a reply cut short: no wait makes them whole
                    wait = wait_before_retry(retry, failure.retry_after, started + self.timeout - time.monotonic(), self._rng)
                    if wait is None:
                        raise failure
                    retry, tried = retry + 1, set()
                    await asyncio.sleep(wait)
                    index = self._pick(tried)
                self._launch(index, exchange, deadline, running, tried)

    def _launch(self, index: int, exchange: Exchange[R], deadline: float, running: dict[asyncio.Task[R], tuple[int, float]], tried: set[int]) -> None:
        """Send ``exchange`` to replica ``index`` as a task of its own, ended within the replica's timeout (and the
        call's ``deadline``), entered in ``running`` with when its hedge is due; a reply updates the replica's
        latency. A losing attempt runs on to its end, so its replica's open requests stay counted."""
        now = time.monotonic()
        replica = self.replicas[index]
        until = min(deadline, now + replica.timeout)
        with self._lock:
            attempt = next(self._ids)
            self._open[index][attempt] = now
            usual = self.latency[index]

        async def send() -> R:
            try:
                reply = await replica.attempt(exchange, until)
            finally:
                with self._lock:
                    del self._open[index][attempt]
            with self._lock:
                took, prior = time.monotonic() - now, self.latency[index]
                self.answered[index] += 1
                self.latency[index] = took if prior is None else (1 - SMOOTHING) * prior + SMOOTHING * took
            return reply

        task = asyncio.ensure_future(send())
        task.add_done_callback(_seen)
        running[task] = (index, now + hedge_after(replica.timeout, usual))
        tried.add(index)

    def _pick(self, tried: set[int]) -> int:
        """The untried replica in rotation expected to answer soonest (``_spare``); when every untried one is
        cooling down, the one whose cooldown ends first."""
        spare = self._spare(tried)
        if spare is not None:
            return spare
        with self._lock:
            return min((i for i in range(len(self.replicas)) if i not in tried), key=lambda i: self.down_until[i])

    def _spare(self, tried: set[int]) -> int | None:
        """The untried replica in rotation expected to answer soonest: (requests open + 1) x its latency, the
        latency being its usual one or, when longer, the age of its oldest open request (a replica that hangs
        shows it before its first timeout); ties drawn at random. None when none is in rotation."""
        now = time.monotonic()
        with self._lock:
            up = [i for i in range(len(self.replicas)) if i not in tried and self.down_until[i] <= now]
            waits = {i: (len(self._open[i]) + 1) * self._expected(i, now) for i in up}
        if not waits:
            return None
        soonest = min(waits.values())
        return self._rng.choice([i for i in up if waits[i] == soonest])

    def _expected(self, index: int, now: float) -> float:
        oldest = now - min(self._open[index].values(), default=now)
        return max(self.latency[index] or 0.0, oldest)

    def _fail(self, index: int) -> None:
        with self._lock:
            self.down_until[index] = time.monotonic() + self.cooldown


def _replica_fault(failure: BaseException) -> bool:
    """Whether ``failure`` is the replica's rather than the request's, so another replica may answer: a transient
    one, or a success status whose body is no JSON (a reply cut short or garbled), which left such a replica in the
    rotation losing verdicts (issue 55's minor list: 35 of 120)."""
    if isinstance(failure, TRANSIENT):
        return True
    status = getattr(failure, "status", None)
    return type(failure) is ProviderError and status is not None and 200 <= status < 300


def _seen(task: asyncio.Task[Any]) -> None:
    """A losing attempt's failure is nobody's to raise: read, so asyncio does not report it as lost."""
    if not task.cancelled():
        task.exception()


def hedge_after(timeout: float, latency: float | None) -> float:
    """Seconds after which an attempt still unanswered is sent to another replica too: ``HEDGE_TIMES`` its
    replica's usual latency (at least ``HEDGE_FLOOR_S``), and never later than ``HEDGE_SHARE`` of its timeout."""
    share = HEDGE_SHARE * timeout
    return share if latency is None else min(share, max(HEDGE_FLOOR_S, HEDGE_TIMES * latency))


def remote_lm(
    spec: str,
    api_base: str | Sequence[str],
    *,
    api_key: str | None,
    timeout: float,
    temperature: float,
    max_tokens: int,
    cache: bool,
    rpm: float | None = None,
    tpm: float | None = None,
    **kwargs,
) -> dspy.LM:
    """A ``dspy.LM`` calling the server at ``api_base`` (several: replicas of one model in a ``ReplicaPool``):
    DSPy's cache and usage, our engine's retries (DSPy's own are off, so a call is never retried by both)."""
    bases = [api_base] if isinstance(api_base, str) else list(api_base)
    replicas = [RemoteEngine(spec, base, api_key=api_key, timeout=timeout, rpm=rpm, tpm=tpm) for base in bases]
    engine: RemoteEngine | ReplicaPool = replicas[0] if len(replicas) == 1 else ReplicaPool(replicas)
    return dspy.LM(
        engine.model,
        engine=engine,
        temperature=temperature,
        max_tokens=max_tokens,
        cache=cache,
        num_retries=0,
        **kwargs,
    )
