"""Run a meta-evaluation: every method scores every sampled output, then each is correlated with the human scores.

The run directory holds ``scores.jsonl``: one line per finished (method, output), appended as it is done, with the
scores, what lies behind them (scorecard or ratings), its ``usage`` (LM calls, tokens, dollars) and seconds. A rerun
keeps the complete lines and scores the rest (incomplete ones again); the run is fingerprinted, so a rerun under a
config that would score differently is refused, naming the first difference. Generated checklists are saved beside
the scores, with what writing them cost (``checklist-NAME.json.usage.json``), and reused on resume. With a budget,
each score (and each checklist to write) starts only when the budget lets it.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy
from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.checklists.writers import save_checklist_usage
from bineval_dspy.core.errors import InputError, RunError, one_line
from bineval_dspy.core.fingerprint import Fingerprint, file_digest
from bineval_dspy.core.jsonio import (
    check_output_path,
    load_model,
    write_json,
)
from bineval_dspy.core.runlog import RunLog, model_log
from bineval_dspy.core.schema import Checklist
from bineval_dspy.core.settings import fingerprint_of
from bineval_dspy.judges.code import check_verifiers
from bineval_dspy.judges.runner import Parallelism, parallelism
from bineval_dspy.lm.budget import BudgetMeter, metered_map
from bineval_dspy.lm.runtime import LMOptions, lm_identity
from bineval_dspy.lm.specs import make_lm
from bineval_dspy.lm.usage import Cost
from bineval_dspy.meta.config import MetaEvalConfig
from bineval_dspy.meta.datasets import MetaRow, sample_documents
from bineval_dspy.meta.methods import (
    BinEvalMethod,
    MethodConfig,
    MethodProblem,
    Scored,
    Scorer,
    build_scorer,
    checklist_writer,
)
from bineval_dspy.meta.results import MetaEvalResults, OutputScore, results
from bineval_dspy.runs.execute import Here, execute, executor_of, user_verifier_files
from bineval_dspy.runs.kinds import RUN_KINDS
from bineval_dspy.verifiers import code_digest

SCORES_FILE = "scores.jsonl"


class Cluster(BaseModel):
    """Where a run's scores are computed besides this process: ``workers`` Ray actors on the cluster at ``address``
    ("local" starts one here), each configuring ``lm`` (the run's LM options) with the disk cache at ``cache_dir``."""

    address: str
    workers: int = Field(default=2, ge=1)
    lm: LMOptions | None = None
    cache_dir: Path | None = None


def run_meta_eval(
    config: MetaEvalConfig,
    *,
    lm: dspy.LM | None = None,
    threads: int = 1,
    overwrite: bool = False,
    meter: BudgetMeter | None = None,
    cluster: Cluster | None = None,
) -> MetaEvalResults:
    """Score the sampled outputs with every method (resuming ``config.run_dir``) and correlate with the humans.

    ``lm``: the LM every LM method uses (default: the configured one); ``threads``: outputs scored at once on a
    remote LM. ``cluster``: the outputs are scored by Ray actors (``MetaWorker``), this process writing the one log
    (``runs.execute``). Bad input raises InputError before any LM call; an LM that writes no usable checklist,
    RunError; ``meter``'s budget reached, BudgetExhausted (the finished scores are saved).
    """
    meter = meter or BudgetMeter()
    executor = executor_of(cluster.address, cluster.workers, meter) if cluster is not None else Here(meter)
    rows = checked_rows(config)
    checklists: dict[str, Checklist] = {}
    for method in config.methods:
        if isinstance(method, BinEvalMethod) and isinstance(method.checklist, Path):
            checklists[method.name] = load_model(method.checklist, Checklist)
            check_verifiers(checklists[method.name], str(method.checklist))
    if config.uses_lm:
        lm = lm or dspy.settings.lm
        if lm is None:
            raise InputError(f"{config.source or 'config'}: its methods need an LM, and none is configured")
    identity = lm_identity(lm) if config.uses_lm and lm is not None else None
    own_lms = {
        m.name: make_lm(m.lm, source=f"{config.source or 'config'}: field 'methods.{i}.lm' =")
        for i, m in enumerate(config.methods)
        if m.lm is not None and m.uses_lm
    }
    config.run_dir.mkdir(parents=True, exist_ok=True)
    out = config.run_dir / SCORES_FILE
    check_output_path(out)
    resumed = not overwrite and out.exists() and out.stat().st_size > 0  # a written checklist is reused then too
    run = MetaRun(config, rows, checklists, lm, own_lms, identity, threads, reuse=resumed, cluster=cluster)
    done = execute(run, executor, overwrite=overwrite, resumed=lambda kept, todo: f"resuming: {kept} finished score(s) kept in {out}, {todo} to do")
    if done.stopped is not None:
        raise meter.exhausted(f"{len(run.items()) - len(done.records)} of {len(run.items())} score(s) not started") from None
    records = {(r.method, r.id): r for r in done.records.values()}
    return results(config, rows, records, identity)


@RUN_KINDS.writes("meta-eval", spec=MetaEvalConfig, results=MetaEvalResults, legacy=({"dataset", "methods", "run_dir"}, {"method", "scores"}))
@dataclass
class MetaRun:
    """``bineval meta-eval`` as a run (``runs.protocol.Run``): every method's score of every sampled output."""

    config: MetaEvalConfig
    rows: list[MetaRow]
    checklists: dict[str, Checklist]  # the methods' checklist files, loaded; generated ones join as they are written
    lm: dspy.LM | None  # the LM every LM method uses, unless it has its own
    own_lms: dict[str, dspy.LM]
    identity: str | None
    threads: int
    reuse: bool  # resuming: a generated checklist already written is reused
    cluster: Cluster | None = None
    kind: str = "meta-eval"
    prune: bool = True  # scores of methods or outputs the config no longer asks for are dropped

    def items(self) -> list[tuple[str, MetaRow]]:
        return [(method.name, row) for method in self.config.methods for row in self.rows]

    def key(self, item: tuple[str, MetaRow]) -> str:
        return f"{item[0]}\x00{item[1].id}"

    def log(self) -> RunLog[OutputScore]:
        return scores_log(self.config.run_dir / SCORES_FILE)

    def fingerprint(self) -> Fingerprint:
        return run_fingerprint(self.config, self.identity, self.checklists)

    def method(self, name: str) -> MethodConfig:
        return next(m for m in self.config.methods if m.name == name)

    def checklist(self, method: MethodConfig, meter: BudgetMeter) -> Checklist | None:
        """The method's checklist: its file's, or the one its writer writes for the task (once; reused on resume)."""
        if isinstance(method, BinEvalMethod) and method.checklist == "generate" and method.name not in self.checklists:
            lm = self.own_lms.get(method.name, self.lm)
            with dspy.context(lm=lm) if lm is not None else nullcontext():
                self.checklists[method.name] = _generated_checklist(self.config, method, self.config.scored_dimensions(), reuse=self.reuse, meter=meter)
        return self.checklists.get(method.name)

    def do(self, todo: Sequence[tuple[str, MetaRow]], meter: BudgetMeter) -> Iterator[OutputScore]:
        for name, group in itertools.groupby(todo, key=lambda item: item[0]):
            method = self.method(name)
            method_lm = self.own_lms.get(name, self.lm)
            with dspy.context(lm=method_lm) if method_lm is not None else nullcontext():
                yield from _score(method, [row for _, row in group], self.config, self.checklist(method, meter), method_lm, self.threads, meter, self.rows)

    def actor(self) -> tuple[type[MetaWorker], tuple[Any, ...]]:
        assert self.cluster is not None
        checklists = {m.name: self.checklist(m, BudgetMeter()) for m in self.config.methods}  # written here, once
        return MetaWorker, (self.cluster, self.config, checklists, self.threads, self.rows, user_verifier_files())

    def record(self, outcome: OutputScore) -> OutputScore:
        return outcome

    def usage(self, outcome: OutputScore) -> Cost:
        return outcome.usage


class MetaWorker:
    """One Ray actor of ``bineval meta-eval --ray``: each method's scorer built once, on first use (on the run's LM,
    or the method's own), then batches of (method, output) scored with it."""

    def __init__(
        self, cluster: Cluster, config: MetaEvalConfig, checklists: dict[str, Checklist | None], threads: int, rows: list[MetaRow], user_files: list[str]
    ) -> None:
        from bineval_dspy.lm import runtime
        from bineval_dspy.verifiers import load_verifier_files

        load_verifier_files(user_files)
        self.config, self.checklists, self.threads, self.rows = config, checklists, threads, rows
        self.lm = runtime.configure(cluster.lm, cluster.cache_dir) if cluster.lm is not None and config.uses_lm else None
        self.scorers: dict[str, tuple[Scorer, Parallelism, dspy.LM | None]] = {}

    def _scorer(self, method: MethodConfig) -> tuple[Scorer, Parallelism, dspy.LM | None]:
        if method.name not in self.scorers:
            lm = self.lm if method.uses_lm else None
            if method.lm is not None and method.uses_lm:
                lm = make_lm(method.lm, source=f"{self.config.source or 'config'}: method {method.name!r}: field 'lm' =")
            scorer, plan = method_scorer(method, self.config, self.checklists.get(method.name), lm, self.threads, self.rows)
            self.scorers[method.name] = scorer, plan, lm
        return self.scorers[method.name]

    def run(self, items: list[tuple[str, MetaRow]]) -> list[OutputScore]:
        """Each (method, output) scored, with its cost and seconds, in input order."""
        out: list[OutputScore] = []
        for name, group in itertools.groupby(items, key=lambda item: item[0]):
            method = next(m for m in self.config.methods if m.name == name)
            scorer, plan, lm = self._scorer(method)
            with dspy.context(lm=lm) if lm is not None else nullcontext():
                out += scored_rows(method, scorer, plan, [row for _, row in group], show=False)
        return out


def method_scorer(
    method: MethodConfig, config: MetaEvalConfig, checklist: Checklist | None, lm: dspy.LM | None, threads: int, rows: Sequence[MetaRow]
) -> tuple[Scorer, Parallelism]:
    """A method's scorer, and how many outputs it scores at once: a remote LM scores ``threads`` outputs at once (and
    BinEval's questions of one output concurrently); the in-process model takes one output at a time and batches
    its questions itself."""
    plan = parallelism(lm, 0, threads=threads) if lm is not None and method.uses_lm else Parallelism(rows=1, questions=None)
    scorer = build_scorer(
        method, config.scored_dimensions(), config.dataset.genre, checklist=checklist, judge_threads=plan.questions,
        rows=rows, task=config.dataset.task,
    )  # fmt: skip
    return scorer, plan


def scored_rows(
    method: MethodConfig, scorer: Scorer, plan: Parallelism, todo: Sequence[MetaRow], meter: BudgetMeter | None = None, show: bool = True
) -> Iterator[OutputScore]:
    """One method's scores for ``todo``, with their cost and seconds, in order as each is done; each starts only
    when ``meter`` lets it (the method's scores are one kind of unit: they cost alike)."""

    def score_one(row: MetaRow) -> tuple[MetaRow, Scored, float]:
        start = time.perf_counter()
        return row, scorer(row), time.perf_counter() - start

    kind = f"method {method.name}"
    scored = metered_map(score_one, todo, method.name, total=len(todo), threads=plan.rows, meter=meter, kind=kind, what="score(s)", show=show)
    for (row, score, seconds), cost in scored:
        yield OutputScore(**dict(score), method=method.name, id=row.id, doc_id=row.doc_id, usage=cost, seconds=seconds)


def _score(
    method: MethodConfig,
    todo: Sequence[MetaRow],
    config: MetaEvalConfig,
    checklist: Checklist | None,
    lm: dspy.LM | None,
    threads: int,
    meter: BudgetMeter,
    rows: Sequence[MetaRow] = (),
) -> Iterator[OutputScore]:
    """One method's scores for ``todo``, scored in this process."""
    scorer, plan = method_scorer(method, config, checklist, lm, threads, rows)
    return scored_rows(method, scorer, plan, todo, meter)


def checked_rows(config: MetaEvalConfig) -> list[MetaRow]:
    """The dataset's rows after every check that needs no LM: dimensions rated, methods applicable; then sampled."""
    where = config.source or "config"
    rows = config.dataset.load()
    if not rows:
        raise InputError(f"{where}: field 'dataset': the data files hold no rows")
    rated = list(dict.fromkeys(dim for row in rows for dim in row.scores))
    for dim in config.scored_dimensions():
        if dim not in rated:
            raise InputError(f"{where}: field 'dimensions': {dim!r} is not rated in this dataset (rated: {', '.join(rated)})")
    for index, method in enumerate(config.methods):
        try:
            method.check(config.scored_dimensions(), config.dataset.genre, rows)
            if isinstance(method, BinEvalMethod) and method.checklist == "generate" and config.dataset.task is None:
                raise MethodProblem("checklist", "a generated checklist needs the task the outputs do: set dataset.task")
        except MethodProblem as exc:
            raise InputError(f"{where}: field 'methods.{index}.{exc.field}': {exc}") from None
    return sample_documents(rows, config.limit, config.seed)


def dataset_fingerprint(config: MetaEvalConfig) -> str:
    """The dataset's settings and its files' contents, as a run's fingerprint records them."""
    dataset = config.dataset.model_dump(mode="json")
    dataset.update({name: file_digest(path) for name, path in config.dataset.paths().items()})
    return json.dumps(dataset, sort_keys=True)


class MetaFingerprint(BaseModel):
    """What decides a meta-evaluation's scores, resolved; plus one entry per method, ``method.NAME``: its options
    (those a release added left out at their default), its checklist file's digest, and the verifiers' code for a
    method whose questions code may answer."""

    model_config = ConfigDict(extra="allow")  # the ``method.NAME`` entries

    dataset: str  # its settings and its files' contents
    dimensions: str
    sample: str
    lm: str


def run_fingerprint(config: MetaEvalConfig, lm: str | None, checklists: Mapping[str, Checklist]) -> Fingerprint:
    """What decides the scores (``MetaFingerprint``; ``checklists``: the file checklists, loaded). The bootstrap
    settings are left out: they change the table, not a single score."""
    methods: dict[str, str] = {}
    for method in config.methods:
        options = method.fingerprint_options()
        if isinstance(method, BinEvalMethod) and isinstance(method.checklist, Path):
            options["checklist"] = file_digest(method.checklist)
        if isinstance(method, BinEvalMethod) and method.code_routing:
            loaded = checklists.get(method.name)
            if loaded is None or any(q.verifier for q in loaded.questions):  # a written checklist may get verifiers
                options["verifiers"] = code_digest()
        methods[f"method.{method.name}"] = json.dumps(options, sort_keys=True)
    sample = json.dumps({"limit": config.limit, "seed": config.seed})
    return fingerprint_of(MetaFingerprint(dataset=dataset_fingerprint(config), dimensions=json.dumps(config.scored_dimensions()), sample=sample, lm=lm or "(none)", **methods))


def scores_log(out: Path, hint: str = "; use `overwrite` or a new run_dir") -> RunLog[OutputScore]:
    """A meta-eval's scores as a run log: keyed by (method, output id), kept when every dimension got a score; what
    every reader of scores reads them through (``hint``: what a damaged line advises; a reader's is empty)."""
    return model_log(out, OutputScore, key=lambda r: f"{r.method}\x00{r.id}", finished=lambda r: r.complete, hint=hint)


def _generated_checklist(
    config: MetaEvalConfig, method: BinEvalMethod, dimensions: Sequence[str], reuse: bool, meter: BudgetMeter
) -> Checklist:
    """The method's writer's checklist (BinEval's two steps unless set) for the dataset's task, written once into the run directory (reused on resume),
    with its cost beside it."""
    path = config.run_dir / f"checklist-{method.name}.json"
    if reuse and path.exists():
        return load_model(path, Checklist)
    task = config.dataset.task
    assert task is not None  # checked_rows refuses a generated checklist without one
    with meter.unit("checklist", f"method {method.name}'s checklist not written") as measurement:
        try:
            checklist = checklist_writer(method, config.dataset.genre)(task=task, dimensions=list(dimensions))
        except InputError:
            raise
        except Exception as exc:
            raise RunError(f"method {method.name!r}: the LM gave no usable checklist ({one_line(exc)})") from None
    write_json(path, checklist.model_dump(mode="json"))
    save_checklist_usage(path, method.writer, dspy.settings.lm.model if dspy.settings.lm is not None else "(none)", measurement.cost)
    return checklist
