"""Work on a Ray cluster: Ray found (an optional extra, ``pip install bineval-dspy[ray]``; without it nothing here
imports it), joined or started, and an ordered map of batches over actors that the runners build their cluster
runs on: ``judge``, ``generate`` and ``meta-eval`` rows (their actors beside their runs, mapped by ``runs.execute.RayActors``), experiment arms
and tune workers as tasks.

The driver (the command's process) keeps the one resumable output: it sends the items still to do in batches to
the actors and writes each batch's results in input order, so resume, fingerprints and the file are a single
process's. An actor that dies (a killed process, a lost node) is restarted by Ray and its batch sent again: nothing
it held was written, so nothing is written twice.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from bineval_dspy.core.console import progress_bar
from bineval_dspy.core.errors import InputError, RunError, one_line

T = TypeVar("T")
BATCH_ROWS = 16  # items an actor takes per task: enough to keep its requests in flight, few enough to redo


def ray_module() -> Any:
    """Ray, or one line saying how to get it."""
    try:
        import ray
    except ImportError:
        raise InputError("`ray`: Ray is not installed; pip install 'bineval-dspy[ray]'") from None
    return ray


def connect(address: str, workers: int) -> Any:
    """Ray, connected: ``local`` starts a cluster on this machine with ``workers`` CPUs, anything else (``auto``,
    ``ray://host:10001``) joins one."""
    ray = ray_module()
    if not ray.is_initialized():
        local = address == "local"
        ray.init(
            address=None if local else address, num_cpus=workers if local else None, include_dashboard=False,
            log_to_driver=False, configure_logging=False, runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "false"}},
        )  # fmt: skip
    return ray


def on_actors(
    address: str, workers: int, worker: type, args: tuple[Any, ...], items: Iterable[T], *, label: str, total: int
) -> Iterator[Any]:
    """``items`` sent in batches of ``BATCH_ROWS`` to ``workers`` Ray actors of class ``worker`` (built with
    ``args``; its ``run(batch)`` returns a result per item), the results yielded in input order. Each actor holds at
    most two batches, so the driver's memory stays flat in the items; a dead actor is restarted and its batch sent
    again, and one Ray gave up on is a ``RunError``."""
    ray = connect(address, workers)
    actor = ray.remote(max_restarts=3, max_task_retries=3, num_cpus=1)(worker)
    handles = [actor.remote(*args) for _ in range(workers)]
    pending: deque[Any] = deque()
    batch: list[T] = []
    turn = 0

    def submit(batch: list[T]) -> None:
        nonlocal turn
        pending.append(handles[turn % len(handles)].run.remote(batch))
        turn += 1

    def drain(keep: int) -> Iterator[Any]:
        while len(pending) > keep:
            try:
                done = ray.get(pending.popleft())
            except ray.exceptions.RayActorError as exc:  # restarted and retried until Ray gave up on it
                raise RunError(f"`ray`: a worker died and Ray gave up restarting it ({one_line(exc)}); rerun to go on") from None
            for result in done:
                advance()
                yield result

    with progress_bar(f"{label} on {workers} Ray worker(s)", total) as advance:
        try:
            for item in items:
                batch.append(item)
                if len(batch) == BATCH_ROWS:
                    submit(batch)
                    batch = []
                    yield from drain(2 * len(handles))
            if batch:
                submit(batch)
            yield from drain(0)
        finally:
            for handle in handles:
                ray.kill(handle)
