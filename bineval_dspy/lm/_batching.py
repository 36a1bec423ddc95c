"""The embedded engine's batch scheduler: greedy calls from many threads gathered into one batch.

Kept apart from the engine because it knows nothing of llama.cpp: it hands lists of requests to a ``run``
function and each caller its own result (or exception). Callers may be the questions of one output or of
several outputs in flight together; the engine orders a batch so requests sharing a prompt prefix sit together.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

BATCH_WAIT_S = 0.05  # how long a batch waits for requests a caller announced with ``expect``

# (group, index) of the call a thread is making: the questions of one output are one group, in checklist order
_call_order: ContextVar[tuple[object, int] | None] = ContextVar("bineval_call_order", default=None)
_arrivals = itertools.count()


@contextmanager
def call_order(group: object, index: int) -> Iterator[None]:
    """Calls made inside are the ``index``-th of ``group``: a batch decodes them in that order, whatever order
    their threads reach it in. The order matters for exactness: a request reuses the KV cells of the one before
    it up to their shared prefix (questions that start alike share words), and cells computed in another
    request's prefill round differently, so only the order of one call at a time gives its tokens and P(yes)."""
    token = _call_order.set((group, index))
    try:
        yield
    finally:
        _call_order.reset(token)


Req = TypeVar("Req")
Res = TypeVar("Res")


class _Slot(Generic[Req, Res]):
    def __init__(self, request: Req) -> None:
        self.request = request
        self.result: Res | BaseException | None = None
        self.arrival = next(_arrivals)
        self.group, self.index = _call_order.get() or (self.arrival, 0)


def _in_call_order(batch: list[_Slot[Req, Res]]) -> list[_Slot[Req, Res]]:
    """A batch's calls group by group (groups in the order their first call arrived), each group in call order."""
    first: dict[object, int] = {}
    for slot in batch:
        first.setdefault(slot.group, slot.arrival)
    return sorted(batch, key=lambda slot: (first[slot.group], slot.index, slot.arrival))


class Batcher(Generic[Req, Res]):
    """Gathers greedy calls into batches, one batch at a time. While a batch runs, the calls arriving meanwhile
    wait; when it ends, the first of them waiting leads the next: it waits for the calls announced with ``expect``
    (at most ``BATCH_WAIT_S``), takes up to ``max_size`` in arrival order and runs them in call order (``call_order``). So the questions of rows
    judged together share batches: those of the next rows gather while one decodes."""

    def __init__(self, run: Callable[[list[Req]], Sequence[Res | BaseException]], max_size: int) -> None:
        self.run = run
        self.max_size = max_size
        self.cond = threading.Condition()
        self.pending: list[_Slot[Req, Res]] = []
        self.expected = 0
        self.busy = False  # a batch is being gathered or run

    def submit(self, request: Req) -> Res:
        """Wait for ``request``'s result, running batches (its own, or the one ahead of it) while none runs."""
        slot: _Slot[Req, Res] = _Slot(request)
        with self.cond:
            self.pending.append(slot)
            self.expected = max(0, self.expected - 1)
            self.cond.notify_all()
            while True:
                while slot.result is None and self.busy:
                    self.cond.wait()
                if slot.result is not None:
                    break
                self.busy = True
                deadline = time.monotonic() + BATCH_WAIT_S
                while self.expected > 0 and len(self.pending) < self.max_size and time.monotonic() < deadline:
                    self.cond.wait(max(0.0, deadline - time.monotonic()))
                batch, self.pending = self.pending[: self.max_size], self.pending[self.max_size :]
                batch = _in_call_order(batch)
                self.cond.release()
                try:
                    results: Sequence[Res | BaseException] = self.run([s.request for s in batch])
                except BaseException as exc:  # even an interrupt must release the callers waiting on this batch
                    results = [exc] * len(batch)
                finally:
                    self.cond.acquire()
                for waiting, result in zip(batch, results):
                    waiting.result = result
                self.busy = False
                self.cond.notify_all()
        if isinstance(slot.result, BaseException):
            raise slot.result
        return slot.result

    def announce(self, n: int) -> None:
        """``n`` more calls are about to arrive: a leader waits for them (briefly) before running its batch."""
        with self.cond:
            self.expected += n

    def withdraw(self) -> None:
        """The announced calls that have not arrived never will (answered from the cache): stop waiting."""
        with self.cond:
            self.expected = 0
            self.cond.notify_all()


class Expectation:
    """``with engine.expect(n):`` around n calls about to arrive together, so they form one batch."""

    def __init__(self, batcher: Batcher[Any, Any] | None, n: int) -> None:
        self.batcher = batcher
        self.n = n

    def __enter__(self) -> None:
        if self.batcher is not None:
            self.batcher.announce(self.n)

    def __exit__(self, *exc: object) -> None:
        if self.batcher is not None:
            self.batcher.withdraw()


def common_prefix(sequences: list[list[int]]) -> list[int]:
    """The longest token prefix every sequence starts with."""
    first = sequences[0]
    length = min(len(seq) for seq in sequences)
    for seq in sequences[1:]:
        same = 0
        while same < length and seq[same] == first[same]:
            same += 1
        length = same
    return first[:length]
