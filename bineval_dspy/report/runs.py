"""Every kind of run the library writes, found from a path and read into typed objects, for ``report`` and ``show``.

A path is a run directory (an optimizer's ``audit.json``, a meta-evaluation's ``scores.jsonl``, an analysis's
``phi.json``/``pruning.json``/``weights.json``, a tune study's, an experiment's or a calibration's ``results.json``,
fine-tuning's ``samples.jsonl``), one of those files, a log (`bineval judge`, `generate` or `verify` output) or its
header, `bineval demo` output, or a meta-eval config (``.toml``: its run directory, with the dataset's human scores
to compare against). ``load_run`` reads a file by its kind (``runs.files.run_kind``: its header's, its ``kind``
field's, or for an older file what its keys say) through the reader that kind's ``runs.kinds.RUN_KINDS`` entry
holds: each reader here registers itself for its kind (``RUN_KINDS.reads``). Anything else is one InputError line,
before any number is computed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel

from bineval_dspy.analysis.files import REPORT_FILES
from bineval_dspy.analysis.phi import PhiReport
from bineval_dspy.analysis.pruning import PruningReport
from bineval_dspy.analysis.weights import WeightsReport
from bineval_dspy.core.console import shown_path
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_model, read_json_object
from bineval_dspy.core.runlog import RunLog, model_log
from bineval_dspy.experiment.grid import GridRow, read_grid
from bineval_dspy.experiment.runner import ExperimentResults
from bineval_dspy.finetune.data import SAMPLES_FILE, PromptSamples, Sample
from bineval_dspy.judges.probe import ProbeRecord
from bineval_dspy.lm.estimate import Plan, load_plan
from bineval_dspy.lm.usage import Cost, total
from bineval_dspy.meta.runner import SCORES_FILE
from bineval_dspy.optimize.audit import AUDIT_FILE, Audit
from bineval_dspy.optimize.calibrate import CalibrationResults
from bineval_dspy.optimize.results import RESULTS_FILE as OPTIMIZE_RESULTS_FILE
from bineval_dspy.optimize.results import RunResults
from bineval_dspy.report.judged_runs import (
    JudgedRow,
    JudgedRows,
    demo_output,
    validated,
)
from bineval_dspy.report.spend import spend_of
from bineval_dspy.runs.files import NOT_A_RUN, headed_log, run_kind
from bineval_dspy.runs.header import RunHeader, read_header
from bineval_dspy.runs.kinds import LOG, RUN_KINDS
from bineval_dspy.stats.bootstrap import Interval
from bineval_dspy.tune.report import RESULTS_FILE, TuneResults

M = TypeVar("M", bound=BaseModel)

__all__ = [
    "AnalysisRun", "CalibrationRun", "ExperimentRun", "FinetuneRun", "JudgedRows", "JudgedRow", "OptimizerRun",
    "LoadedRun", "TuneRun", "load_run", "load_runs", "shown_path",
]  # fmt: skip


# -- the kinds ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OptimizerRun:
    """An optimizer run directory's audit: every iteration, lesson and edit, and the start and best prompts."""

    source: Path
    audit: Audit
    spend: Cost = field(default_factory=Cost)
    results: RunResults | None = None  # the test split's results, once the run scored it
    plan: Plan | None = None  # what the run was planned to ask of its LM (runs before plans were kept: none)
    kind: Literal["optimizer-audit"] = "optimizer-audit"  # its test results are read into the same run


@dataclass(frozen=True)
class AnalysisRun:
    """`bineval analyze` output: phi per dimension, the pruning, the fitted weights (those that exist)."""

    source: Path
    phi: PhiReport | None
    pruning: PruningReport | None
    weights: WeightsReport | None
    spend: Cost = field(default_factory=Cost)
    kind: str = "phi"  # the kind of its first file: phi, pruning or weights


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


@dataclass(frozen=True)
class CalibrationRun:
    """`bineval calibrate`'s ``results.json``: how the probe judge's head was trained, its out-of-fold figures, and
    its figures on held-out test examples (with intervals over tasks) when the run had some."""

    source: Path
    results: CalibrationResults
    record: ProbeRecord  # the results' training record, typed
    spend: Cost = field(default_factory=Cost)  # the head reads a model in this process: no LM calls are billed
    kind: Literal["calibration"] = "calibration"

    @property
    def figures(self) -> list[tuple[str, float | None, Interval | None]]:
        """Each figure (kappa, balanced accuracy, AUROC, ...) out-of-fold beside the same on the test split, if any."""
        validation, test = self.record.validation, self.results.test
        return [(name, validation.get(name), test.get(name)) for name in dict.fromkeys([*validation, *test])]


@dataclass(frozen=True)
class FinetuneRun:
    """Fine-tuning's ``samples.jsonl``: each train prompt's sampled responses and what its checklist said of them."""

    source: Path
    prompts: list[PromptSamples]
    spend: Cost = field(default_factory=Cost)  # the log's header's (none before headers)
    kind: Literal["finetune-samples"] = "finetune-samples"

    @property
    def samples(self) -> list[Sample]:
        return [sample for prompt in self.prompts for sample in prompt.samples]

    def failed_questions(self) -> list[tuple[str, int]]:
        """The questions samples failed, by how many samples failed each, most first."""
        return Counter(question for sample in self.samples for question in sample.failed).most_common()


@dataclass(frozen=True)
class LogRun:
    """A run log of a kind with no view of its own (a command added since): its header and its records as they are,
    so a new resumable command is readable by ``show`` and ``report`` from its header alone."""

    source: Path
    header: RunHeader
    records: list[dict[str, Any]]
    spend: Cost = field(default_factory=Cost)

    @property
    def kind(self) -> str:
        return self.header.kind

    def columns(self, most: int = 6) -> list[str]:
        """The records' first top-level fields that hold a number, a string or a boolean (what fits a table cell)."""
        seen: dict[str, None] = {}
        for record in self.records[:50]:
            seen.update({name: None for name, value in record.items() if isinstance(value, (str, int, float, bool))})
        return list(seen)[:most]


class LoadedRun(Protocol):
    """What every report object is: the kind it was read as (a ``RUN_KINDS`` name, which holds its title and views),
    where it was read from, and what it spent."""

    @property
    def kind(self) -> str: ...

    @property
    def source(self) -> Path: ...

    @property
    def spend(self) -> Cost: ...


# -- finding and reading -----------------------------------------------------------------------------------------


def load_runs(path: Path) -> list[LoadedRun]:
    """The runs at ``path`` (a folder may hold several kinds, e.g. an analysis written into a run directory)."""
    if path.is_dir():
        return _folder_runs(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    return [load_run(path)]


def load_run(path: Path) -> LoadedRun:
    """The run in one file, read by its kind's reader: a log's header (its kind read from the log beside it), a
    results file, a log, or a run's config (a suffix of its own, ``.toml``: the one kind whose reader takes it, e.g.
    a meta-eval's run directory with the dataset's human scores)."""
    configs = [kind.read for kind in RUN_KINDS.values() if kind.read is not None and path.suffix in set(kind.suffixes) - {".json", ".jsonl"}]
    if len(configs) == 1:
        return configs[0](path)
    if (log := headed_log(path)) is not None:
        if not log.exists() and (header := read_header(log)) is not None:  # the run ended before it wrote its output
            why = f" ({header.error})" if header.error else ""
            raise InputError(f"{path}: a {header.kind!r} run that wrote no {log.name}: it is {header.status}{why}")
        return load_run(log)
    if path.suffix not in (".json", ".jsonl"):
        read = sorted({suffix for kind in RUN_KINDS.values() if kind.read is not None for suffix in kind.suffixes})
        raise InputError(f"{path}: {NOT_A_RUN}; files are read by their suffix: {', '.join(read)}")
    kind = run_kind(path)
    known = RUN_KINDS.get(kind)
    if (known is None or known.read is None) and path.suffix == ".jsonl" and (header := read_header(path)) is not None:
        return _log(path, header)  # a kind with no reader of its own: its header and records as they are
    if known is None or known.read is None:
        raise InputError(f"{path}: {NOT_A_RUN} (its kind is {kind!r})")
    if path.suffix not in known.suffixes:
        raise InputError(f"{path}: {NOT_A_RUN} (a {kind!r} run is a {' or '.join(known.suffixes)} file)")
    return known.read(path)


def _log(path: Path, header: RunHeader) -> LogRun:
    """A headed log read through the run kernel (a torn last line skipped), each record as the object it is."""
    log: RunLog[dict[str, Any]] = RunLog(path, key=lambda record: "", parse=lambda number, record: record, dump=lambda record: record)
    return LogRun(path, header, [record for _, record in log.read()], header.usage)


def _folder_runs(folder: Path) -> list[LoadedRun]:
    runs: list[LoadedRun] = []
    if (folder / AUDIT_FILE).is_file():
        runs.append(load_run(folder / AUDIT_FILE))
    if (folder / SCORES_FILE).is_file():
        runs.append(load_run(folder / SCORES_FILE))
    if any((folder / name).is_file() for name in REPORT_FILES.values()):
        runs.append(_analysis(folder, {kind: folder / name for kind, name in REPORT_FILES.items() if (folder / name).is_file()}))
    own = (folder / SCORES_FILE).is_file() or (folder / AUDIT_FILE).is_file()  # a meta-eval and an optimizer write one too
    if (folder / RESULTS_FILE).is_file() and not own:
        runs.append(load_run(folder / RESULTS_FILE))
    if (folder / SAMPLES_FILE).is_file():
        runs.append(load_run(folder / SAMPLES_FILE))
    if not runs:
        raise InputError(f"{folder}: not a run directory (no {AUDIT_FILE}, {SCORES_FILE}, {REPORT_FILES['phi']}, {RESULTS_FILE} or {SAMPLES_FILE})")
    return runs


@RUN_KINDS.reads("optimizer-test", title="optimizer run")
def _optimizer_test(path: Path) -> OptimizerRun:
    """An optimizer's test results: the run whose audit is beside them."""
    if not (path.parent / AUDIT_FILE).is_file():
        raise InputError(f"{path}: an optimizer's test results without the run's {AUDIT_FILE} beside them")
    return _optimizer(path.parent / AUDIT_FILE)


@RUN_KINDS.reads("experiment", title="experiment")
def _experiment(path: Path) -> ExperimentRun:
    results = load_model(path, ExperimentResults)
    return ExperimentRun(source=path.parent, results=results, spend=results.usage, grid=read_grid(path.parent), plan=load_plan(path.parent))


@RUN_KINDS.reads("tune", title="tune study")
def _tune(path: Path) -> TuneRun:
    results = load_model(path, TuneResults)
    return TuneRun(source=path.parent, results=results, spend=results.usage)


@RUN_KINDS.reads("calibration", title="calibration")
def _calibration(path: Path) -> CalibrationRun:
    results = load_model(path, CalibrationResults)
    return CalibrationRun(source=path.parent, results=results, record=validated(ProbeRecord, results.record, f"{path}: in 'record'"))


@RUN_KINDS.reads("finetune-samples", title="fine-tuning samples", suffixes=LOG)
def _samples(path: Path) -> FinetuneRun:
    """Fine-tuning's samples, read through their run log (the one ``finetune.data.SamplesRun.log`` opens), with what the
    header says they cost."""
    prompts = [record for _, record in model_log(path, PromptSamples, key=lambda r: r.key).read()]
    header = read_header(path)
    return FinetuneRun(source=path, prompts=prompts, spend=header.usage if header is not None else Cost())


@RUN_KINDS.reads("demo", title="demo output", legacy=({"results", "article"},))
def _demo(path: Path) -> JudgedRows:
    return demo_output(path, read_json_object(path))


@RUN_KINDS.reads("optimizer-audit", title="optimizer run")
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
        kind=next(iter(files)),
        phi=report("phi", PhiReport),
        pruning=report("pruning", PruningReport),
        weights=report("weights", WeightsReport),
        spend=total(spend_of(raw, str(files[kind])) for kind, raw in raws.items()),
    )


def _analysis_file(kind: str) -> Callable[[Path], LoadedRun]:
    """The reader of one of an analysis's files, alone (its folder's other files are read with the folder)."""
    return lambda path: _analysis(path.parent, {kind: path})


for _part in REPORT_FILES:  # phi, pruning, weights: each file alone (its folder's other files are read with the folder)
    RUN_KINDS.reads(_part, title="analysis")(_analysis_file(_part))
