"""Judging rows on a Ray cluster: ``bineval judge --ray ADDRESS``. Ray is an optional extra
(``pip install bineval-dspy[ray]``); without it nothing here is imported.

The driver (the command's process) keeps the one resumable output: it reads the rows still to judge, sends them in
batches to ``workers`` Ray actors, and appends each batch's results in input order, so resume, fingerprints and
the file are a single-process run's. Each actor configures the run's LM once (its own engine, the shared disk cache)
and judges its batch with the judging runner, ``concurrency`` requests in flight. An actor that dies (a killed
process, a lost node) is restarted by Ray and its batch sent again: nothing it held was written, so no row is
written twice.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from bineval_dspy.core.console import progress_bar
from bineval_dspy.core.errors import InputError, RunError, one_line
from bineval_dspy.judges.rows import JudgeResult

if TYPE_CHECKING:
    from bineval_dspy.programs.judge_file import JudgeFile

Row = dict[str, Any]
BATCH_ROWS = 16  # rows an actor judges per task: enough to keep its requests in flight, few enough to redo


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


class _Worker:
    """One Ray actor: the run's LM configured once, then batches of rows judged on it."""

    def __init__(self, config_json: str, checklist_json: str, fields: tuple[str, str]) -> None:
        from bineval_dspy.core.schema import Checklist
        from bineval_dspy.judges.runner import parallelism
        from bineval_dspy.lm import runtime
        from bineval_dspy.programs.judge_file import JudgeFile, file_judge

        config = JudgeFile.model_validate_json(config_json)
        self.lm = runtime.configure(config.lm, config.cache_dir)
        self.judge = file_judge(config, self.lm.model)
        self.checklist = Checklist.model_validate_json(checklist_json)
        self.fields = fields
        asked = sum(q.verifier is None for q in self.checklist.questions)
        self.plan = parallelism(self.lm, asked, concurrency=config.concurrency, threads=config.threads)

    def pid(self) -> int:
        return os.getpid()

    def judge_batch(self, rows: list[tuple[int, Row]]) -> list[tuple[Row, str]]:
        """Each (data line, row) judged, as (row, its JudgeResult as JSON), in input order."""
        from bineval_dspy.judges.runner import judge_rows

        results = judge_rows(self.judge, self.checklist, rows, total=len(rows), plan=self.plan, fields=self.fields, show=False)
        return [(row, result.model_dump_json()) for row, result in results]


def ray_judge_rows(
    config: JudgeFile, checklist_json: str, rows: Iterable[tuple[int, Row]], *, fields: tuple[str, str], total: int
) -> Iterator[tuple[Row, JudgeResult]]:
    """The rows judged by ``config.workers`` actors on the cluster at ``config.ray``, as (row, result) in input
    order; each actor holds at most two batches, so the driver's memory stays flat in the rows."""
    assert config.ray is not None
    ray = connect(config.ray, config.workers)
    actor = ray.remote(max_restarts=3, max_task_retries=3, num_cpus=1)(_Worker)
    workers = [actor.remote(config.model_dump_json(), checklist_json, fields) for _ in range(config.workers)]
    pending: deque[Any] = deque()
    batch: list[tuple[int, Row]] = []
    turn = 0

    def submit(rows: list[tuple[int, Row]]) -> None:
        nonlocal turn
        pending.append(workers[turn % len(workers)].judge_batch.remote(rows))
        turn += 1

    def drain(keep: int) -> Iterator[tuple[Row, JudgeResult]]:
        while len(pending) > keep:
            try:
                judged = ray.get(pending.popleft())
            except ray.exceptions.RayActorError as exc:  # restarted and retried until Ray gave up on it
                raise RunError(f"`ray`: a worker died and Ray gave up restarting it ({one_line(exc)}); rerun to go on") from None
            for row, result in judged:
                advance()
                yield row, JudgeResult.model_validate_json(result)

    with progress_bar(f"judging on {config.workers} Ray worker(s)", total) as advance:
        try:
            for item in rows:
                batch.append(item)
                if len(batch) == BATCH_ROWS:
                    submit(batch)
                    batch = []
                    yield from drain(2 * len(workers))
            if batch:
                submit(batch)
            yield from drain(0)
        finally:
            for worker in workers:
                ray.kill(worker)

