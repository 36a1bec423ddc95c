"""Rows on a Ray cluster: ``bineval judge``, ``generate`` and ``meta-eval`` with ``--ray ADDRESS``. Ray is an
optional extra (``pip install bineval-dspy[ray]``); without it nothing here is imported.

The driver (the command's process) keeps the one resumable output: it reads the rows still to do, sends them in
batches to ``workers`` Ray actors, and appends each batch's results in input order, so resume, fingerprints and
the file are a single-process run's. Each actor configures the run's LM once (its own engine, the shared disk cache)
and runs its batch with the command's own runner (judging, generating with STICK, or one method's scoring). An actor that dies (a killed
process, a lost node) is restarted by Ray and its batch sent again: nothing it held was written, so no row is
written twice.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, TypeVar

from bineval_dspy.core.console import progress_bar
from bineval_dspy.core.errors import InputError, RunError, one_line
from bineval_dspy.judges.rows import JudgeResult

if TYPE_CHECKING:
    from bineval_dspy.core.schema import Checklist
    from bineval_dspy.meta.config import MetaEvalConfig
    from bineval_dspy.meta.datasets import MetaRow
    from bineval_dspy.meta.methods import MethodConfig
    from bineval_dspy.meta.runner import Cluster, OutputScore
    from bineval_dspy.programs.generator import GeneratedRow
    from bineval_dspy.programs.judge_file import JudgeFile
    from bineval_dspy.programs.suite_file import GenerateSuite
    from bineval_dspy.suites.rows import SuiteRow

Row = dict[str, Any]
T = TypeVar("T")
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


class _JudgeWorker:
    """One Ray actor of ``bineval judge --ray``: the run's LM configured once, then batches of rows judged on it."""

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

    def run(self, rows: list[tuple[int, Row]]) -> list[tuple[Row, str]]:
        """Each (data line, row) judged, as (row, its JudgeResult as JSON), in input order."""
        from bineval_dspy.judges.runner import judge_rows

        results = judge_rows(self.judge, self.checklist, rows, total=len(rows), plan=self.plan, fields=self.fields, show=False)
        return [(row, result.model_dump_json()) for row, result in results]


class _GenerateWorker:
    """One Ray actor of ``bineval generate --ray``: the run's LM, program and STICK judge built once, then batches
    of suite rows generated on them."""

    def __init__(self, config_json: str) -> None:
        from bineval_dspy.programs.suite_file import GenerateSuite, generation_setup

        self.setup = generation_setup(GenerateSuite.model_validate_json(config_json))

    def pid(self) -> int:
        return os.getpid()

    def run(self, rows: list[SuiteRow]) -> list[GeneratedRow]:
        """Each row generated (record, or the error that kept it from one) with its cost, in input order."""
        return list(self.setup.generated(rows, show=False))


class _MetaWorker:
    """One Ray actor of ``bineval meta-eval --ray``: one method's scorer built once (on the run's LM, or the
    method's own), then batches of outputs scored with it."""

    def __init__(self, cluster: Cluster, config: MetaEvalConfig, method: MethodConfig, checklist: Checklist | None, threads: int, rows: list[MetaRow]) -> None:
        from bineval_dspy.lm import runtime
        from bineval_dspy.lm.specs import make_lm
        from bineval_dspy.meta.runner import method_scorer

        self.method = method
        self.lm = runtime.configure(cluster.lm, cluster.cache_dir) if cluster.lm is not None and method.uses_lm else None
        if method.lm is not None and method.uses_lm:
            self.lm = make_lm(method.lm, source=f"{config.source or 'config'}: method {method.name!r}: field 'lm' =")
        self.scorer, self.plan = method_scorer(method, config, checklist, self.lm, threads, rows)

    def pid(self) -> int:
        return os.getpid()

    def run(self, rows: list[MetaRow]) -> list[OutputScore]:
        """Each output's score, with its cost and seconds, in input order."""
        import dspy

        from bineval_dspy.meta.runner import scored_rows

        with dspy.context(lm=self.lm) if self.lm is not None else nullcontext():
            return list(scored_rows(self.method, self.scorer, self.plan, rows, show=False))


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


def ray_judge_rows(
    config: JudgeFile, checklist_json: str, rows: Iterable[tuple[int, Row]], *, fields: tuple[str, str], total: int
) -> Iterator[tuple[Row, JudgeResult]]:
    """The rows judged by ``config.workers`` actors on the cluster at ``config.ray``, as (row, result) in input order."""
    assert config.ray is not None
    args = (config.model_dump_json(), checklist_json, fields)
    for row, result in on_actors(config.ray, config.workers, _JudgeWorker, args, rows, label="judging", total=total):
        yield row, JudgeResult.model_validate_json(result)


def ray_scored(
    cluster: Cluster, config: MetaEvalConfig, method: MethodConfig, checklist: Checklist | None, threads: int, todo: Sequence[MetaRow], rows: Sequence[MetaRow]
) -> Iterator[OutputScore]:
    """One method's scores for ``todo``, computed by ``cluster.workers`` actors, in input order."""
    args = (cluster, config, method, checklist, threads, list(rows))
    yield from on_actors(cluster.address, cluster.workers, _MetaWorker, args, todo, label=f"scoring ({method.name})", total=len(todo))


def ray_generated_rows(config: GenerateSuite, rows: Sequence[SuiteRow]) -> Iterator[GeneratedRow]:
    """The rows generated by ``config.workers`` actors on the cluster at ``config.ray``, in input order."""
    assert config.ray is not None
    yield from on_actors(config.ray, config.workers, _GenerateWorker, (config.model_dump_json(),), rows, label="generating", total=len(rows))
