"""Every kind of run the library writes, found from a path and read into typed objects, for ``report`` and ``show``.

A path is a run directory (an optimizer's ``audit.json``, a meta-evaluation's ``scores.jsonl``, an analysis's
``phi.json``/``pruning.json``/``weights.json``, a tune study's ``results.json``), one of those files, `bineval judge`
output (JSON Lines whose rows carry ``bineval``), `bineval demo` output, or a meta-eval config (``.toml``: its run
directory, with the dataset's human scores to compare against). Anything else is one InputError line, before any
number is computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from bineval_dspy.analysis.files import REPORT_FILES
from bineval_dspy.analysis.phi import PhiReport
from bineval_dspy.analysis.pruning import PruningReport
from bineval_dspy.analysis.weights import WeightsReport
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_model, read_json_object, read_jsonl
from bineval_dspy.experiment.grid import GridRow, read_grid
from bineval_dspy.experiment.runner import ExperimentResults
from bineval_dspy.judges.rows import JUDGE_KEY
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
from bineval_dspy.report.meta_runs import CorrelationRow, MetaRun, load_meta, meta_from_config
from bineval_dspy.report.spend import spend_of
from bineval_dspy.tune.report import RESULTS_FILE, TuneResults

M = TypeVar("M", bound=BaseModel)

Kind = Literal["judge", "meta", "optimizer", "analysis", "tune", "experiment"]
__all__ = ["AnalysisRun", "CorrelationRow", "ExperimentRun", "JudgeRun", "JudgedRow", "MetaRun", "OptimizerRun", "Run", "TuneRun", "load_runs", "shown_path"]


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
def load_runs(path: Path) -> list[Run]:
    """The runs at ``path`` (a folder may hold several kinds, e.g. an analysis written into a run directory)."""
    if path.is_dir():
        return _folder_runs(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.suffix == ".toml":
        return [meta_from_config(path)]
    if path.suffix == ".jsonl":
        return [_jsonl_run(path)]
    if path.suffix == ".json":
        return [_json_run(path, read_json_object(path))]
    raise InputError(f"{path}: {NOT_A_RUN}; files are read by their suffix: .json, .jsonl or a meta-eval config .toml")


def _folder_runs(folder: Path) -> list[Run]:
    runs: list[Run] = []
    if (folder / AUDIT_FILE).is_file():
        runs.append(_optimizer(folder / AUDIT_FILE))
    if (folder / SCORES_FILE).is_file():
        runs.append(load_meta(folder))
    if any((folder / name).is_file() for name in REPORT_FILES.values()):
        runs.append(_analysis(folder, {kind: folder / name for kind, name in REPORT_FILES.items() if (folder / name).is_file()}))
    own = (folder / SCORES_FILE).is_file() or (folder / AUDIT_FILE).is_file()  # a meta-eval and an optimizer write one too
    if (folder / RESULTS_FILE).is_file() and not own:
        runs.append(_json_run(folder / RESULTS_FILE, read_json_object(folder / RESULTS_FILE)))
    if not runs:
        raise InputError(f"{folder}: not a run directory (no {AUDIT_FILE}, {SCORES_FILE}, {REPORT_FILES['phi']} or {RESULTS_FILE})")
    return runs


NOT_A_RUN = "not a run the library writes (an optimizer's audit.json, a meta-eval's scores.jsonl, analyze's phi.json, pruning.json or weights.json, tune's or experiment's results.json, judge, demo, verify or generate output)"


def _json_run(path: Path, raw: dict[str, Any]) -> Run:
    """A JSON file, by its ``kind`` (files from before runs carried one: by the fields that tell the kinds apart)."""
    kind = raw.get("kind")
    if kind == "optimizer-test" and (path.parent / AUDIT_FILE).is_file():
        return _optimizer(path.parent / AUDIT_FILE)
    if kind in ("phi", "pruning", "weights"):
        return _analysis(path.parent, {kind: path})
    if kind == "meta-eval" and (path.parent / SCORES_FILE).is_file():
        return load_meta(path.parent)
    if {"mode", "start", "best"} <= raw.keys():
        return _optimizer(path, raw)
    if {"study", "trials"} <= raw.keys():
        return _tune(path, raw)
    if {"arms", "baseline"} <= raw.keys():
        results = validated(ExperimentResults, raw, str(path))
        return ExperimentRun(source=path.parent, results=results, spend=results.usage, grid=read_grid(path.parent), plan=load_plan(path.parent))
    for kind, keys in (("phi", {"statistic", "dimensions"}), ("pruning", {"dropped", "questions_before"}), ("weights", {"alpha", "folds"})):
        if keys <= raw.keys():
            return _analysis(path.parent, {kind: path})
    if {"results", "article"} <= raw.keys():
        return demo_output(path, raw)
    if {"dataset", "methods", "run_dir"} <= raw.keys() and (path.parent / SCORES_FILE).is_file():
        return load_meta(path.parent)  # a meta-eval's results.json: the run beside it
    raise InputError(f"{path}: {NOT_A_RUN}")


def _jsonl_run(path: Path) -> Run:
    """`bineval judge` output, or a meta-eval run's scores file (then the run is its folder)."""
    for number, row in read_jsonl(path):
        if JUDGE_KEY in row:
            return judge_output(path)
        if "method" in row and "scores" in row:
            return load_meta(path.parent, scores_file=path)
        if "follow_instruction_list" in row and "instruction_id_list" in row:
            return suite_output(path, verified_card, "`bineval verify` output: each instruction a code-checked verdict")
        if "key" in row and "response" in row:
            return suite_output(path, generated_card, "`bineval generate` output: each STICK check a verdict (none without STICK)")
        raise InputError(f"{path}:{number}: {NOT_A_RUN}")
    raise InputError(f"{path}: no rows")


def _optimizer(path: Path, raw: dict[str, Any] | None = None) -> OptimizerRun:
    raw = read_json_object(path) if raw is None else raw
    audit = validated(Audit, raw, str(path))
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


def _tune(path: Path, raw: dict[str, Any]) -> TuneRun:
    results = validated(TuneResults, raw, str(path))
    return TuneRun(source=path.parent, results=results, spend=results.usage)
