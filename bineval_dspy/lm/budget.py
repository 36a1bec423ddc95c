"""Budgets for long runs (``--max-cost USD``, ``--max-calls N``), checked before each unit of work starts.

A unit is what a command saves when it finishes: a judged row, a generated row, one meta-eval score, one optimizer
step, one tune trial. A unit starts only when what this run has spent, plus an estimate for each unit in flight and
for the new one, stays within the budget. A unit's estimate is the dearest finished unit of its kind in this run
(calls and dollars apart). The first unit of a kind has nothing to be estimated from: it starts alone, and only
while the budget is not yet reached, so a run passes its budget only by such a first unit, or by a unit dearer
than every unit of its kind before it. The budget counts this invocation's spending only: finished work is saved
and never redone, so a rerun (with the same budget or a larger one) spends on what is left, and no budget enters a
resume fingerprint.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Generator, Iterable, Iterator, Sized
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any, Literal, TypeVar

import dspy
from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.core.console import in_caller_context, progress_bar
from bineval_dspy.core.errors import BudgetExhausted
from bineval_dspy.lm.stopping import OPEN_CALLS, stop_requested, stoppable
from bineval_dspy.lm.usage import Cost, Measurement, measuring

T = TypeVar("T")
R = TypeVar("R")
Decision = Literal["start", "wait", "stop"]
EPSILON = 1e-12  # dollars: float sums must not stop a run that is exactly at its budget
_IN_UNIT: ContextVar[bool] = ContextVar("bineval_in_unit", default=False)  # a map run inside a unit is part of it


class Budget(BaseModel):
    """The limits of one run; None: no limit."""

    model_config = ConfigDict(frozen=True)

    max_cost: float | None = Field(default=None, gt=0, description="US dollars")
    max_calls: int | None = Field(default=None, ge=0, description="LM calls, cache hits included")

    @property
    def limited(self) -> bool:
        return self.max_cost is not None or self.max_calls is not None

    def share(self, workers: int) -> Budget:
        """An equal part for each of ``workers`` processes, so that together they keep within the whole."""
        return Budget(
            max_cost=None if self.max_cost is None else self.max_cost / workers,
            max_calls=None if self.max_calls is None else self.max_calls // workers,
        )

    def describe(self) -> str:
        limits = [f"`max_cost` {self.max_cost:g}" if self.max_cost is not None else "", f"`max_calls` {self.max_calls}" if self.max_calls is not None else ""]
        return " and ".join(limit for limit in limits if limit) or "no budget"


class BudgetMeter:
    """What one run has spent against its budget, and which units may start; safe across threads."""

    def __init__(self, budget: Budget | None = None) -> None:
        self.budget = budget or Budget()
        self.spent = Cost()
        self._dearest: dict[str, Cost] = {}
        self._running: Counter[str] = Counter()
        self._lock = threading.Lock()

    @classmethod
    def for_models(cls, budget: Budget, models: Iterable[str]) -> BudgetMeter:
        """The meter of ``budget`` for a run on ``models`` (model strings): a dollar budget needs their prices, so
        an LM without one is refused before any call."""
        if budget.max_cost is not None:
            from bineval_dspy.lm.prices import check_priced

            check_priced(models)
        return cls(budget)

    def decide(self, kind: str) -> Decision:
        """Start a unit of ``kind`` now, wait for the units in flight to finish first, or stop the run."""
        with self._lock:
            running = sum(self._running.values())
            if not self.budget.limited:
                return "start"
            estimate = self._dearest.get(kind)
            if estimate is None or any(self._dearest.get(k) is None for k, n in self._running.items() if n):
                if running:
                    return "wait"
                return "stop" if self._reached() else "start"
            calls = self.spent.lm_calls + estimate.lm_calls + sum(n * self._dearest[k].lm_calls for k, n in self._running.items())
            usd = (self.spent.usd or 0.0) + (estimate.usd or 0.0) + sum(n * (self._dearest[k].usd or 0.0) for k, n in self._running.items())
            over = (self.budget.max_calls is not None and calls > self.budget.max_calls) or (
                self.budget.max_cost is not None and usd > self.budget.max_cost + EPSILON
            )
            if not over:
                return "start"
            return "wait" if running else "stop"

    def begin(self, kind: str) -> None:
        with self._lock:
            self._running[kind] += 1

    def end(self, kind: str, cost: Cost) -> None:
        """A unit of ``kind`` finished (or failed) having spent ``cost``."""
        with self._lock:
            self._running[kind] -= 1
            self.spent = self.spent + cost
            dearest = self._dearest.get(kind)
            self._dearest[kind] = cost if dearest is None else dearest.model_copy(
                update={"lm_calls": max(dearest.lm_calls, cost.lm_calls), "usd": max(dearest.usd or 0.0, cost.usd or 0.0)}
            )

    def check(self, kind: str, left: str) -> None:
        """For work done one unit at a time: raise ``BudgetExhausted`` unless a unit of ``kind`` may start now."""
        if self.decide(kind) != "start":
            raise self.exhausted(left)

    @contextmanager
    def unit(self, kind: str, left: str) -> Iterator[Measurement]:
        """One unit of ``kind``, done in the block: checked first (``left`` says what a stop leaves undone), then
        measured and charged, also when the block raises. The block runs in a ``dspy.context``: an LM it configures
        with ``dspy.configure`` is not seen inside it."""
        self.check(kind, left)
        self.begin(kind)
        measurement: Measurement | None = None
        try:
            with measuring() as measurement:
                yield measurement
        finally:
            self.end(kind, measurement.cost if measurement is not None else Cost())

    def exhausted(self, left: str) -> BudgetExhausted:
        """The one-line stop: the budget, what this run spent, what is left and how to go on."""
        return BudgetExhausted(
            f"budget reached ({self.budget.describe()}): this run spent {self.spent.summary()}; {left}; "
            "rerun the same command to go on (finished work is kept; a budget counts one run's spending)"
        )

    def _reached(self) -> bool:
        calls, usd = self.budget.max_calls, self.budget.max_cost
        return (calls is not None and self.spent.lm_calls >= calls) or (usd is not None and (self.spent.usd or 0.0) >= usd - EPSILON)


def metered_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    label: str,
    *,
    threads: int = 1,
    meter: BudgetMeter | None = None,
    kind: str = "unit",
    what: str = "unit(s)",
    total: int | None = None,
    show: bool = True,
) -> Iterator[tuple[R, Cost]]:
    """``fn`` on each item with its ``Cost``, in order, with a progress bar (``threads`` at once when > 1; none with
    ``show=False``: library calls that must not print, and maps inside a unit). The library's one parallel map:
    rows, examples, questions of a row, samples of a prompt.

    Items are drawn as units start: a stream (``total`` says its length) is never held whole, only the units in
    flight. Each unit starts only when ``meter`` lets it. When the meter says stop, the units in flight finish and
    are yielded, then ``BudgetExhausted`` is raised naming how many of ``what`` were not started; on a first Ctrl-C
    (``lm.stopping``) likewise, then ``KeyboardInterrupt``. A map run inside another's unit is part of that unit: a
    Ctrl-C lets it finish, as the unit does. A unit's error is raised in its place, after the units before it. The
    units keep no DSPy history: over a long run it would hold the last 10,000 prompts and replies, which nothing
    here reads.
    """
    meter = meter or BudgetMeter()

    callbacks = list(dspy.settings.callbacks or ())
    counted = callbacks if OPEN_CALLS in callbacks else [*callbacks, OPEN_CALLS]  # its calls in flight, for a Ctrl-C

    def unit(item: T) -> tuple[R, Cost]:
        measurement: Measurement | None = None
        inside = _IN_UNIT.set(True)
        try:
            with dspy.context(callbacks=counted, disable_history=True), measuring() as measurement:
                result = fn(item)
        finally:
            _IN_UNIT.reset(inside)
            meter.end(kind, measurement.cost if measurement is not None else Cost())
        return result, measurement.cost

    with ThreadPoolExecutor(max_workers=threads) if threads > 1 else nullcontext() as pool:
        start = (lambda item: pool.submit(in_caller_context(unit), item)) if pool is not None else (lambda item: _now(unit, item))
        yield from _metered(start, items, label, max(threads, 1), meter, kind, what, total, show)


def metered_amap(
    fn: Callable[[T], Awaitable[tuple[R, Cost]]],
    items: Iterable[T],
    label: str,
    *,
    loop: asyncio.AbstractEventLoop,
    window: int,
    meter: BudgetMeter | None = None,
    kind: str = "unit",
    what: str = "unit(s)",
    total: int | None = None,
    show: bool = True,
) -> Generator[tuple[R, Cost], None, None]:
    """``metered_map`` for work that is a coroutine on ``loop`` and counts its own cost: ``window`` units in flight,
    each one hand-off from this thread to the loop and back (the items are read and the results used here)."""
    meter = meter or BudgetMeter()

    async def unit(item: T) -> tuple[R, Cost]:
        cost = Cost()
        try:
            result, cost = await fn(item)
        finally:
            meter.end(kind, cost)
        return result, cost

    yield from _metered(lambda item: asyncio.run_coroutine_threadsafe(unit(item), loop), items, label, window, meter, kind, what, total, show)


def _metered(
    start: Callable[[T], Future[tuple[R, Cost]]],
    items: Iterable[T],
    label: str,
    window: int,
    meter: BudgetMeter,
    kind: str,
    what: str,
    total: int | None,
    show: bool,
) -> Iterator[tuple[R, Cost]]:
    """The units of ``items`` started by ``start`` (at most ``window`` unfinished), their results in order."""
    if total is None:
        if not isinstance(items, Sized):
            raise TypeError("metered_map: a stream of items needs its total")
        total = len(items)
    source = iter(items)
    pending: deque[Future[tuple[R, Cost]]] = deque()
    started, stopped = 0, False
    whole = _IN_UNIT.get()  # inside a unit: a Ctrl-C lets the unit, and so this map, finish
    with stoppable(), (progress_bar(label, total) if show else nullcontext(lambda: None)) as advance, _cancelled_at_exit(pending):
        while True:
            while not stopped and started < total and len(pending) < window:
                if not whole and stop_requested():
                    stopped = True
                    break
                decision = meter.decide(kind)
                if decision == "wait":
                    break
                if decision == "stop":
                    stopped = True
                    break
                item = next(source, _END)
                if item is _END:
                    total = started
                    break
                meter.begin(kind)
                started += 1
                pending.append(start(item))
            if not pending:
                break
            result = pending.popleft().result()
            advance()  # before the yield: a consumer that stops at its last item still sees the bar complete
            yield result
    if started < total and stop_requested():  # the units in flight are saved; the rest waits for a rerun
        raise KeyboardInterrupt
    if started < total:
        raise meter.exhausted(f"{total - started} of {total} {what} not started")


@contextmanager
def _cancelled_at_exit(pending: deque[Future[Any]]) -> Iterator[None]:
    """The units still pending when the consumer stops early (an error, a closed stream) are cancelled: a coroutine
    stops at its next await, a thread's unit that has not started never starts."""
    try:
        yield
    finally:
        for future in pending:
            future.cancel()


_END: Any = object()  # the end of a stream of items


def _now(fn: Callable[[T], R], item: T) -> Future[R]:
    """``fn(item)`` run at once, as a finished future (the one-thread path of ``metered_map``)."""
    future: Future[R] = Future()
    try:
        future.set_result(fn(item))
    except BaseException as exc:  # re-raised by result(), where the threaded path raises it too
        future.set_exception(exc)
    return future
