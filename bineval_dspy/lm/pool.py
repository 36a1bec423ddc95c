"""Several servers for one model (``api_base`` given more than once): each call goes to the replica with the fewest
requests open, a replica that fails to answer (refused, reset, timed out, a 5xx) leaves the rotation for a while,
and the call is sent again to another, so a replica that dies mid-run loses no row.

Each replica is a ``RemoteEngine`` with its own client, schema spelling and client-side rate limits (``rpm``, ``tpm``
are per server); the pool caps the requests open across all of them (``limit_in_flight``). A call no replica
answers within its time budget raises, as one server's would: the verdict is unanswered, never a yes.

Why not LiteLLM's Router: servers at ``api_base`` are called through DSPy's lm15 client by ``RemoteEngine`` (schema
spellings, deadlines, retries), not through LiteLLM; the pool keeps that engine and adds least-busy routing and
failover over it, as the Router's least-busy strategy does.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

from dspy.lm15 import Request, Response

from bineval_dspy.lm.engine import EngineBase
from bineval_dspy.lm.remote import TRANSIENT, RemoteEngine
from bineval_dspy.lm.retry import wait_before_retry
from bineval_dspy.lm.usage import report_retries

COOLDOWN_S = 5.0  # a replica that failed is left out this long, then tried again (it may have come back)


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
        self.spec = replicas[0].spec
        self.timeout = max(r.timeout for r in replicas)
        self.cooldown = cooldown
        self.open = [0] * len(replicas)  # requests open per replica
        self.answered = [0] * len(replicas)  # replies per replica, for the run's record and the tests
        self.down_until = [0.0] * len(replicas)
        self._lock = threading.Lock()
        self._slots: threading.BoundedSemaphore | None = None
        self._rng = random.Random()

    @property
    def model(self) -> str:
        """The spec and every server: cache keys and verdicts name the pool, whichever replica answered."""
        return f"{self.spec}@{','.join(r.api_base for r in self.replicas)}"

    def __deepcopy__(self, memo: dict[str, Any]) -> ReplicaPool:
        return self  # program copies share the pool

    def limit_in_flight(self, most: int | None) -> bool:
        """At most ``most`` requests open across the replicas; each replica's own pool of connections grows to it."""
        self._slots = threading.BoundedSemaphore(most) if most else None
        for replica in self.replicas:
            replica.limit_in_flight(None)
            if most:
                replica.widen(most)
        return True

    def complete(self, request: Request) -> Response:
        """Send ``request`` to the least busy replica in rotation; a transient failure takes that replica out and
        the request goes to another at once, or, when none is left, again after a wait while the budget lasts."""
        started = time.monotonic()
        deadline = started + 2 * self.timeout
        tried: set[int] = set()
        retry, retried = 0, False
        try:
            with self._slots if self._slots is not None else nullcontext():
                while True:
                    index = self._pick(tried)
                    try:
                        with self._opened(index):
                            response = self.replicas[index].attempt(request, deadline)
                    except TRANSIENT as exc:
                        retried = True
                        self._fail(index)
                        tried.add(index)
                        if len(tried) < len(self.replicas):
                            continue  # another replica, now
                        wait = wait_before_retry(retry, exc.retry_after, started + self.timeout - time.monotonic(), self._rng)
                        if wait is None:
                            raise
                        retry, tried = retry + 1, set()
                        time.sleep(wait)
                        continue
                    with self._lock:
                        self.answered[index] += 1
                    return response
        finally:
            report_retries(False, retried)

    def _pick(self, tried: set[int]) -> int:
        """The untried replica in rotation with the fewest open requests (ties: the first); when every untried one
        is cooling down, the one whose cooldown ends first."""
        now = time.monotonic()
        with self._lock:
            untried = [i for i in range(len(self.replicas)) if i not in tried]
            up = [i for i in untried if self.down_until[i] <= now]
            return min(up, key=lambda i: self.open[i]) if up else min(untried, key=lambda i: self.down_until[i])

    @contextmanager
    def _opened(self, index: int) -> Iterator[None]:
        with self._lock:
            self.open[index] += 1
        try:
            yield
        finally:
            with self._lock:
                self.open[index] -= 1

    def _fail(self, index: int) -> None:
        with self._lock:
            self.down_until[index] = time.monotonic() + self.cooldown

