"""The protocol every resumable command implements, so one loop (``execute``) owns the log, resume, budgets,
progress and the executor for all of them.

A run says what it is (``kind``), which units it asks for (``items``, each under a ``key``), what decides its
records (``fingerprint``), the log they go to (``log``), how this process does units (``do``: streamed in order,
each starting only when the budget lets it) and how a Ray actor is built to do them elsewhere (``actor``: a class
and the setup it takes, so the actor's module never imports the runner back). ``summarize`` turns the records into
the run's result; ``plan`` (the dry run) lives beside it on each run.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol, TypeVar

from bineval_dspy.core.fingerprint import Fingerprint
from bineval_dspy.core.runlog import RunLog
from bineval_dspy.lm.budget import BudgetMeter
from bineval_dspy.lm.usage import Cost

I = TypeVar("I")  # noqa: E741 - an item: the unit of work
O = TypeVar("O")  # noqa: E741 - an outcome: what doing a unit gave (a record, or the error that kept it from one)
R = TypeVar("R")  # a record: what the log keeps of a done unit


class Worker(Protocol[I, O]):
    """What a Ray actor holds: the run's setup built once in its process, then batches of items done on it."""

    def run(self, items: list[I]) -> list[O]: ...


class Run(Protocol[I, O, R]):
    """One resumable run of a command over its units."""

    kind: str  # the registered run kind, written in the log's header
    prune: bool  # drop finished records of keys the run no longer asks for (else they stay, e.g. beyond a ``limit``)

    def items(self) -> Sequence[I]:
        """Every unit the run asks for, in order (finished ones included: ``execute`` leaves those out)."""
        ...

    def key(self, item: I) -> str: ...

    def log(self) -> RunLog[R]: ...

    def fingerprint(self) -> Fingerprint: ...

    def do(self, todo: Sequence[I], meter: BudgetMeter) -> Iterator[O]:
        """The outcomes of ``todo``, here, in order; a unit starts only when ``meter`` lets it."""
        ...

    def actor(self) -> tuple[type[Worker[I, O]], tuple[Any, ...]]:
        """The Ray actor's class and its arguments: what it needs to build the run's setup in its own process."""
        ...

    def record(self, outcome: O) -> R | None:
        """What the log keeps of an outcome; None for a unit that failed (reported, and done again by the next run)."""
        ...

    def usage(self, outcome: O) -> Cost: ...
