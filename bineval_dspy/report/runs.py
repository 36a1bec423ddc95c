"""Every kind of run the library writes, found from a path and read into typed objects, for ``report`` and ``show``.

A path is a run directory (an optimizer's ``audit.json``, a meta-evaluation's ``scores.jsonl``, an analysis's
``phi.json``/``pruning.json``/``weights.json``, a tune study's or an experiment's ``results.json``), one of those
files, a log (`bineval judge`, `generate` or `verify` output) or its header, `bineval demo` output, or a meta-eval
config (``.toml``: its run directory, with the dataset's human scores to compare against). ``load_run`` reads a file
by the reader ``READERS`` holds for its kind (``runs.files.run_kind``: its header's, its ``kind`` field's, or for an
older file what its keys say). Anything else is one InputError line, before any number is computed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel

from bineval_dspy.analysis.files import REPORT_FILES
from bineval_dspy.analysis.phi import PhiReport
from bineval_dspy.analysis.pruning import PruningReport
from bineval_dspy.analysis.weights import WeightsReport
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_model, read_json_object
from bineval_dspy.core.registry import Registry
from bineval_dspy.experiment.grid import GridRow, read_grid
from bineval_dspy.experiment.runner import ExperimentResults
from bineval_dspy.lm.estimate import Plan, load_plan
from bineval_dspy.lm.usage import Cost, total
from bineval_dspy.meta.runner import SCORES_FILE
from bineval_dspy.optimize.audit import AUDIT_FILE, Audit
from bineval_dspy.optimize.results import RESULTS_FILE as OPTIMIZE_RESULTS_FILE
from bineval_dspy.optimize.results import RunResults
from bineval_dspy.report.judged_runs import (
    JudgedRow,
    JudgeRun,
    demo_output,
    generated_card,
    judge_output,
    suite_output,
    validated,
    verified_card,
)
from bineval_dspy.report.meta_runs import CorrelationRow, MetaRun, load_meta, meta_from_config, meta_results
from bineval_dspy.report.spend import spend_of
from bineval_dspy.runs.files import NOT_A_RUN, headed_log, run_kind
from bineval_dspy.tune.report import RESULTS_FILE, TuneResults

M = TypeVar("M", bound=BaseModel)

Kind = Literal["judge", "meta", "optimizer", "analysis", "tune", "experiment"]
__all__ = ["AnalysisRun", "CorrelationRow", "ExperimentRun", "JudgeRun", "JudgedRow", "MetaRun", "OptimizerRun", "Run", "READERS", "RunReader", "TuneRun", "load_run", "load_runs", "shown_path"]


def shown_path(path: Path) -> str:
    """A run's path as a reader knows it: relative to the working folder when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# -- the kinds ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OptimizerRun:
    """An optimizer run directory's audit: every iteration, lesson and edit, and the start and best prompts."""

    source: Path
    audit: Audit
    spend: Cost = field(default_factory=Cost)
    results: RunResults | None = None  # the test split's results, once the run scored it
    plan: Plan | None = None  # what the run was planned to ask of its LM (runs before plans were kept: none)
    kind: Literal["optimizer"] = "optimizer"


@dataclass(frozen=True)
class AnalysisRun:
    """`bineval analyze` output: phi per dimension, the pruning, the fitted weights (those that exist)."""

    source: Path
    phi: PhiReport | None
    pruning: PruningReport | None
    weights: WeightsReport | None
    spend: Cost = field(default_factory=Cost)
    kind: Literal["analysis"] = "analysis"


@dataclass(frozen=True)
class TuneRun:
    """A tune study's ``results.json``: every trial and the best one or the Pareto front."""

    source: Path
    results: TuneResults
    spend: Cost = field(default_factory=Cost)
    kind: Literal["tune"] = "tune"


@dataclass(frozen=True)
class ExperimentRun:
    """A ``bineval experiment`` run's ``results.json``: every arm on the test split against the baseline."""

    source: Path
    results: ExperimentResults
    spend: Cost = field(default_factory=Cost)
    grid: list[GridRow] = field(default_factory=list)  # every test output of every arm (runs before grids: none)
    plan: Plan | None = None
    kind: Literal["experiment"] = "experiment"


Run = JudgeRun | MetaRun | OptimizerRun | AnalysisRun | TuneRun | ExperimentRun


# -- finding and reading -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunReader:
    """How ``load_run`` reads the files of one run kind: ``read`` makes the run from a file with one of ``suffixes``."""

    read: Callable[[Path], Run]
    suffixes: tuple[str, ...] = (".json",)


# The run kinds show and report read, by the kind a file's header or ``kind`` field names (``runs.files.run_kind``).
READERS: Registry[RunReader] = Registry("run kind")


def load_runs(path: Path) -> list[Run]:
    """The runs at ``path`` (a folder may hold several kinds, e.g. an analysis written into a run directory)."""
    if path.is_dir():
        return _folder_runs(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    return [load_run(path)]


def load_run(path: Path) -> Run:
    """The run in one file, read by its kind's reader: a log's header (its kind read from the log beside it), a
    results file, a log, or a meta-eval config (``.toml``: its run directory with the dataset's human scores)."""
    if path.suffix == ".toml":
        return meta_from_config(path)
    if (log := headed_log(path)) is not None:
        return load_run(log)
    if path.suffix not in (".json", ".jsonl"):
        raise InputError(f"{path}: {NOT_A_RUN}; files are read by their suffix: .json, .jsonl or a meta-eval config .toml")
    kind = run_kind(path)
    reader = READERS.get(kind)
    if reader is None:
        raise InputError(f"{path}: {NOT_A_RUN} (its kind is {kind!r})")
    if path.suffix not in reader.suffixes:
        raise InputError(f"{path}: {NOT_A_RUN} (a {kind!r} run is a {' or '.join(reader.suffixes)} file)")
    return reader.read(path)


def _folder_runs(folder: Path) -> list[Run]:
    runs: list[Run] = []
    if (folder / AUDIT_FILE).is_file():
        runs.append(load_run(folder / AUDIT_FILE))
    if (folder / SCORES_FILE).is_file():
        runs.append(load_run(folder / SCORES_FILE))
    if any((folder / name).is_file() for name in REPORT_FILES.values()):
        runs.append(_analysis(folder, {kind: folder / name for kind, name in REPORT_FILES.items() if (folder / name).is_file()}))
    own = (folder / SCORES_FILE).is_file() or (folder / AUDIT_FILE).is_file()  # a meta-eval and an optimizer write one too
    if (folder / RESULTS_FILE).is_file() and not own:
        runs.append(load_run(folder / RESULTS_FILE))
    if not runs:
        raise InputError(f"{folder}: not a run directory (no {AUDIT_FILE}, {SCORES_FILE}, {REPORT_FILES['phi']} or {RESULTS_FILE})")
    return runs


def _optimizer_test(path: Path) -> OptimizerRun:
    """An optimizer's test results: the run whose audit is beside them."""
    if not (path.parent / AUDIT_FILE).is_file():
        raise InputError(f"{path}: an optimizer's test results without the run's {AUDIT_FILE} beside them")
    return _optimizer(path.parent / AUDIT_FILE)


def _meta(path: Path) -> MetaRun:
    """A meta-eval's scores (its run is their folder), or its results: with the scores beside them when they are."""
    if path.suffix == ".jsonl":
        return load_meta(path.parent, scores_file=path)
    return load_meta(path.parent) if (path.parent / SCORES_FILE).is_file() else meta_results(path)


def _experiment(path: Path) -> ExperimentRun:
    results = load_model(path, ExperimentResults)
    return ExperimentRun(source=path.parent, results=results, spend=results.usage, grid=read_grid(path.parent), plan=load_plan(path.parent))


def _tune(path: Path) -> TuneRun:
    results = load_model(path, TuneResults)
    return TuneRun(source=path.parent, results=results, spend=results.usage)


def _demo(path: Path) -> JudgeRun:
    return demo_output(path, read_json_object(path))


def _optimizer(path: Path) -> OptimizerRun:
    audit = load_model(path, Audit)
    results_path = path.parent / OPTIMIZE_RESULTS_FILE
    results = load_model(results_path, RunResults) if results_path.is_file() else None
    return OptimizerRun(source=path.parent, audit=audit, spend=audit.usage, results=results, plan=load_plan(path.parent))


def _analysis(folder: Path, files: dict[str, Path]) -> AnalysisRun:
    raws = {kind: read_json_object(path) for kind, path in files.items()}

    def report(kind: str, model: type[M]) -> M | None:
        return validated(model, raws[kind], str(files[kind])) if kind in raws else None

    return AnalysisRun(
        source=folder,
        phi=report("phi", PhiReport),
        pruning=report("pruning", PruningReport),
        weights=report("weights", WeightsReport),
        spend=total(spend_of(raw, str(files[kind])) for kind, raw in raws.items()),
    )


def _analysis_file(kind: str) -> Callable[[Path], Run]:
    """The reader of one of an analysis's files, alone (its folder's other files are read with the folder)."""
    return lambda path: _analysis(path.parent, {kind: path})


READERS.add("judge", RunReader(judge_output, (".jsonl",)))
READERS.add("generate", RunReader(partial(suite_output, card_of=generated_card, task="`bineval generate` output: each STICK check a verdict (none without STICK)"), (".jsonl",)))
READERS.add("verify", RunReader(partial(suite_output, card_of=verified_card, task="`bineval verify` output: each instruction a code-checked verdict"), (".jsonl",)))
READERS.add("demo", RunReader(_demo))
READERS.add("meta-eval", RunReader(_meta, (".jsonl", ".json")))
READERS.add("optimizer-audit", RunReader(_optimizer))
READERS.add("optimizer-test", RunReader(_optimizer_test))
for _name in REPORT_FILES:  # phi, pruning, weights
    READERS.add(_name, RunReader(_analysis_file(_name)))
READERS.add("tune", RunReader(_tune))
READERS.add("experiment", RunReader(_experiment))
