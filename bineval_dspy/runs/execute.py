"""``execute``: the one loop every resumable run goes through.

It claims the run's log under the run's fingerprint (earlier output made by other settings is refused in one line;
``overwrite`` starts afresh), writes the header (``runs.header``: kind, version, status, usage), leaves out the units
whose records are already finished, has the executor do the rest, appends each record as it comes, in input order,
and marks the header finished, incomplete (every unit ran, but a rerun does some again: a judged row with
unanswered questions), stopped (a budget or a first Ctrl-C: the records so far are kept) or failed. The executor is
this process (``Here``) or Ray actors (``RayActors``), each written once here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from bineval_dspy.core.errors import BudgetExhausted, InputError, one_line
from bineval_dspy.core.fingerprint import sidecar
from bineval_dspy.core.version import __version__
from bineval_dspy.lm.budget import BudgetMeter
from bineval_dspy.lm.usage import Cost
from bineval_dspy.runs.header import RunHeader, Status, read_header, write_header
from bineval_dspy.runs.protocol import Run
from bineval_dspy.runs.spec import UnitRunSpec, check_cluster

logger = logging.getLogger(__name__)

I = TypeVar("I")  # noqa: E741
O = TypeVar("O")  # noqa: E741
R = TypeVar("R")


class Executor(Protocol):
    """Where a run's units are done; the outcomes come back in input order."""

    def map(self, run: Run[I, O, R], todo: Sequence[I]) -> Iterator[O]: ...


@dataclass
class Here:
    """This process: the run's own ``do``, its units started as ``meter``'s budget lets them."""

    meter: BudgetMeter = field(default_factory=BudgetMeter)

    def map(self, run: Run[I, O, R], todo: Sequence[I]) -> Iterator[O]:
        return run.do(todo, self.meter)


@dataclass
class RayActors:
    """``workers`` actors on the Ray cluster at ``address``, each built from the run's ``actor()`` setup, the units
    sent to them in batches (``core.cluster.on_actors``) while this process writes the one log."""

    address: str
    workers: int

    def map(self, run: Run[I, O, R], todo: Sequence[I]) -> Iterator[O]:
        from bineval_dspy.core.cluster import on_actors

        worker, args = run.actor()
        return on_actors(self.address, self.workers, worker, args, todo, label=run.kind, total=len(todo))


def executor_for(spec: UnitRunSpec, meter: BudgetMeter) -> Executor:
    """The executor ``spec`` names (checked: a cluster takes no budget, and needs Ray installed)."""
    return executor_of(spec.ray, spec.workers, meter)


def executor_of(address: str | None, workers: int, meter: BudgetMeter) -> Executor:
    """Ray actors on the cluster at ``address``, or this process under ``meter``'s budget (None: no cluster)."""
    check_cluster(address, meter.budget)
    return RayActors(address, workers) if address is not None else Here(meter)


@dataclass
class Executed(Generic[O, R]):
    """What ``execute`` did: every finished record the log now holds (by key: the kept ones, then this run's), and this
    run's share."""

    records: dict[str, R]
    kept: int  # finished records of earlier output, kept
    todo: int  # units this run had to do
    written: int = 0
    unfinished: int = 0  # records written that a rerun does again (``RunLog.finished`` says no): the run is incomplete
    failed: list[O] = field(default_factory=list)  # outcomes with no record (the unit failed): done again next run
    spent: Cost = field(default_factory=Cost)
    stopped: BudgetExhausted | None = None  # the budget ended the run; the records written so far are saved


def open_run(run: Run[I, O, R], items: Sequence[I], overwrite: bool, resumed: Callable[[int, int], str] | None = None) -> dict[str, R]:
    """Claim the run's log (refusing other settings' output), repair it and write the header; the finished records
    by key. ``resumed(kept, todo)`` is the line said when earlier records are kept."""
    log = run.log()
    wanted = {run.key(item) for item in items}
    fingerprint = run.fingerprint()
    try:
        before = read_header(log.path) if not overwrite and log.path.exists() and log.path.stat().st_size > 0 else None
    except InputError as exc:  # the header is damaged: it alone records what made the records beside it
        raise InputError(f"{exc}; it records what made the records of {log.path.name}{log.hint}") from None
    recorded = before.fingerprint if before is not None and before.fingerprint else None
    kept = log.open(fingerprint, overwrite, wanted=wanted.__contains__ if run.prune else None, recorded=recorded)
    write_header(log.path, RunHeader(kind=run.kind, version=__version__, usage=before.usage if before and kept else Cost(), fingerprint=fingerprint))
    sidecar(log.path).unlink(missing_ok=True)  # older output's fingerprint: the header holds it now
    if kept:
        todo = len(wanted - kept.keys())
        logger.info(resumed(len(kept), todo) if resumed else f"resuming: {len(kept)} finished record(s) kept in {log.path}, {todo} to do")
    return kept


def execute(
    run: Run[I, O, R], executor: Executor, *, overwrite: bool = False, resumed: Callable[[int, int], str] | None = None
) -> Executed[O, R]:
    """Do the run's units not already finished in its log, on ``executor``, appending each record in input order."""
    items = list(run.items())
    kept = open_run(run, items, overwrite, resumed)
    log = run.log()
    todo = [item for item in items if run.key(item) not in kept]
    done: Executed[O, R] = Executed(records=dict(kept), kept=len(kept), todo=len(todo))
    status: Status = "failed"
    error: str | None = None
    try:
        for outcome in executor.map(run, todo) if todo else iter(()):
            done.spent = done.spent + run.usage(outcome)
            record = run.record(outcome)
            if record is None:
                done.failed.append(outcome)
                continue
            log.append(record)
            done.records[log.key(record)] = record
            done.written += 1
            done.unfinished += not log.finished(record)
        status = "stopped" if done.failed else "incomplete" if done.unfinished else "finished"
    except BudgetExhausted as exc:
        done.stopped, status = exc, "stopped"
    except KeyboardInterrupt:
        status = "stopped"
        raise
    except Exception as exc:  # the header says why the run failed; the exception goes on to the caller
        error = one_line(exc)
        raise
    finally:
        header = read_header(log.path)
        if header is not None:
            write_header(log.path, header.model_copy(update={"status": status, "usage": header.usage + done.spent, "error": error}))
    return done


def user_verifier_files() -> list[str]:
    """The user's verifier files this process has loaded: an actor's setup names them, so it loads them too and
    knows their ids."""
    from bineval_dspy.verifiers.registry import USER_FILES

    return sorted(map(str, USER_FILES))
