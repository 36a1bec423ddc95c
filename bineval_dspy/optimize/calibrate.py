"""``bineval calibrate CONFIG.toml``: train a probe judge on reference labels and save it as a judge program.

Calibrating a cheap evaluator against a strong one is training a head on its hidden state (``judges.probe``) with the
strong one's question-level verdicts as labels: judge examples (JSON Lines of input, output, question, reference and
the task's ``example_id``: a ``cross`` run's reference verdicts, InFoBench's recorded GPT-4 verdicts, people's
labels). Data rated by people per dimension only (SummEval, QAGS, Topical-Chat) gives weak labels: every dimension's
question (UniEval's wording, or the config's) inherits the output's human score on it, yes from the dimension's
median up (``meta.probe`` says what this assumes).

The run folder gets ``program.json`` (a judge whose LM questions the probe answers: ``judge --program``,
``meta-eval``'s ``probe`` key, experiments and the pytest plugin load it), ``probe.json`` (the head and its training
record) and ``results.json`` (the record, and the head on ``test`` examples with intervals over tasks).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from bineval_dspy.core.console import shown_path
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import file_digest
from bineval_dspy.core.jsonio import load_toml, write_text_atomic
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.probe import STRENGTHS, LabeledExample, Probe, examples_file, fit_probe, head_of_run
from bineval_dspy.judges.probe_fit import POOLINGS, Pooling, best_threshold
from bineval_dspy.judges.standing import Majority, Standing
from bineval_dspy.lm.hidden import Backend, HiddenStates
from bineval_dspy.lm.specs import DEFAULT_LM
from bineval_dspy.meta.datasets import DatasetConfig, MetaRow
from bineval_dspy.meta.prompts import QUESTIONS
from bineval_dspy.optimize.calibrate_steps import curve_of, predict, searching, standing_on
from bineval_dspy.optimize.learning_curve import CurveSettings, LearningCurve, Scorer
from bineval_dspy.programs.state import PROGRAM_FILE, ProgramFile
from bineval_dspy.runs.kinds import RUN_KINDS
from bineval_dspy.runs.spec import RunSpec
from bineval_dspy.stats.bootstrap import Bootstrap, Interval, Statistic, difference_of, mean_of
from bineval_dspy.stats.classification import auroc_statistic, balanced_accuracy_statistic, kappa_statistic, point

RESULTS_FILE = "results.json"


class ExamplesData(BaseModel):
    """Judge examples with reference verdicts: the files trained on, and an optional held-out ``test`` file."""

    model_config = ConfigDict(extra="forbid")

    train: list[Path] = Field(min_length=1)
    test: Path | None = None


class ProbeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    layers: list[int] | None = Field(default=None, description="candidate layers (default: four over 40-75% of the depth, and the last)")
    strengths: list[float] = Field(default=list(STRENGTHS), min_length=1, description="candidate C (inverse L2 strength)")
    poolings: list[Pooling] = Field(default=list(POOLINGS), min_length=1, description="how a layer's states are read: last token, mean over the output's or the question's tokens")
    combine: bool = Field(default=True, description="also try the best pooling's top 2-4 layers, concatenated and averaged")
    backbones: list[str] = Field(default_factory=list, description="embedded models whose states are compared on the training rows' folds (empty: `lm` only)")
    backend: Backend = Field(default="torch", description="who computes the states: torch on the dequantized weights, or llama.cpp's quantized pass (the head records it, the judge reads with it)")
    folds: int = Field(default=5, ge=2, description="grouped folds the candidates and threshold are chosen on")
    seed: int = 0

    @model_validator(mode="after")
    def _positive(self) -> ProbeSettings:
        if any(not 0 < c < float("inf") for c in self.strengths):
            raise ValueError("strengths: each C is a positive number")
        return self


class CalibrateConfig(RunSpec):
    """A calibration run: the judge LM (a model in this process), where its labels come from, the probe's settings."""

    lm: str = DEFAULT_LM
    run_dir: Path
    data: ExamplesData | None = None
    dataset: DatasetConfig | None = Field(default=None, description="a meta-eval [dataset] table: labels from its ratings per dimension (people's scores; InFoBench's are a strong judge's, GPT-4's, verdicts), yes from the median up")
    dimensions: list[str] = Field(default_factory=list, description="with dataset: the dimensions to ask about (empty: every rated one)")
    questions: dict[str, str] = Field(default_factory=dict, description="with dataset: a dimension's question (default: UniEval's wording)")
    probe: ProbeSettings = Field(default_factory=ProbeSettings)
    limit: int | None = Field(default=None, ge=1, description="a smoke run: the first N tasks of each file (every row of a task kept)")
    curve: CurveSettings = Field(default_factory=CurveSettings, description="the learning curve: held-out figures per label budget")
    baselines: list[Path] = Field(
        default_factory=list,
        description="heads trained before (a calibrate run's folder or an experiment arm's, or its program.json), scored on the same test rows as this run's head, the differences paired over the test tasks",
    )

    @model_validator(mode="after")
    def _one_source(self) -> CalibrateConfig:
        if (self.data is None) == (self.dataset is None):
            raise ValueError("give exactly one of [data] (judge examples with references) and [dataset] (human scores)")
        if self.baselines and (self.data is None or self.data.test is None):
            raise ValueError("baselines: a baseline is compared on the test rows; give [data] test")
        return self


class BaselineFigures(BaseModel):
    """A head trained before, on this run's test rows: its figures, and this run's head minus it on the same
    resampled tasks (a paired difference: the two heads answered the same questions)."""

    probe: str  # its probe.json's digest
    head: str  # what it reads
    model: str  # whose states
    test: dict[str, Interval]
    difference: dict[str, Interval]
    yes_rate: float

    def text(self, name: str) -> str:
        """One line: its figures on the test rows, and this run's head minus it with the paired interval."""
        shown = ("kappa", "auroc", "balanced_accuracy")
        own = ", ".join(f"{k.replace('_', ' ')} {self.test[k].text()}" for k in shown if k in self.test)
        gain = ", ".join(f"{k.replace('_', ' ')} {self.difference[k].text(signed=True)}" for k in shown if k in self.difference)
        return f"baseline {name} ({self.head}, yes rate {self.yes_rate:.3f}): {own}; this run's head minus it, paired over tasks: {gain}"


@RUN_KINDS.writes("calibration", spec=CalibrateConfig)
class CalibrationResults(BaseModel):
    """``results.json``: how the head was trained, and how it did on held-out test examples (intervals over tasks)."""

    probe: str  # probe.json's digest
    record: dict[str, object]
    test_rows: int = 0
    test: dict[str, Interval] = Field(default_factory=dict)
    test_majority: Majority | None = None  # always giving the test references' commoner answer: the baseline to beat
    standing: Standing | None = None  # the head's held-out figures (test, else out-of-fold) and whether they are at chance
    curve: LearningCurve | None = None  # held-out figures per label budget (None: curve.sizes was empty)
    backbones: dict[str, float | None] = Field(default_factory=dict, description="each backbone's out-of-fold AUROC on the training rows (the chosen one's head is saved)")
    test_best: dict[str, float | None] = Field(
        default_factory=dict, description="diagnostic, never used to choose: the test kappa at the best global threshold there, beside the chosen one's"
    )
    baselines: dict[str, BaselineFigures] = Field(default_factory=dict, description="each baseline head (its folder, relative to the working folder when inside it) on the same test rows")


def load_calibrate(path: Path) -> CalibrateConfig:
    """Parse a calibrate config; relative paths are taken from its folder."""
    config = load_toml(path, CalibrateConfig)
    base = path.parent
    update: dict[str, object] = {"run_dir": (base / config.run_dir).resolve()}
    if config.data is not None:
        test = (base / config.data.test).resolve() if config.data.test is not None else None
        update["data"] = config.data.model_copy(update={"train": [(base / p).resolve() for p in config.data.train], "test": test})
    if config.dataset is not None:
        update["dataset"] = config.dataset.model_copy(update={name: (base / value).resolve() for name, value in config.dataset.paths().items()})
    update["baselines"] = [(base / p).resolve() for p in config.baselines]
    return config.model_copy(update=update)


def labeled_examples(config: CalibrateConfig) -> tuple[list[LabeledExample], dict[str, str], str]:
    """The training rows, the digests of the files they came from, and what the labels are."""
    if config.data is not None:
        examples = [e for path in config.data.train for e in first_tasks(examples_file(path), config.limit)]
        return examples, {str(p): file_digest(p) for p in config.data.train}, "reference verdicts of " + ", ".join(p.name for p in config.data.train)
    rows, texts = dataset_rows(config)
    examples = weak_examples(rows, texts)
    assert config.dataset is not None
    data = {str(p): file_digest(p) for p in config.dataset.paths().values()}
    rated = "InFoBench's recorded GPT-4 verdicts (a strong judge's)" if config.dataset.kind == "infobench" else "human scores"
    return examples, data, f"{rated} per dimension, yes from the dimension's median up"


def dataset_rows(config: CalibrateConfig) -> tuple[list[MetaRow], dict[str, str]]:
    """The rated dataset's rows and each dimension's question."""
    dataset = config.dataset
    assert dataset is not None
    rows = dataset.load()
    if config.limit is not None:
        kept = set(list(dict.fromkeys(row.doc_id for row in rows))[: config.limit])
        rows = [row for row in rows if row.doc_id in kept]
    rated = sorted({dim for row in rows for dim in row.scores})
    dimensions = config.dimensions or rated
    unknown = [d for d in dimensions if d not in rated]
    if unknown:
        raise InputError(f"{config.source}: field 'dimensions': {unknown[0]!r} is not rated in the dataset (rated: {', '.join(rated)})")
    defaults = QUESTIONS.get(dataset.genre, {})
    texts = {d: config.questions.get(d) or defaults.get(d, "") for d in dimensions}
    missing = [d for d, t in texts.items() if not t]
    if missing:
        raise InputError(f"{config.source}: field 'questions': no default question for {missing[0]!r}; give questions.{missing[0]} = \"...\"")
    return rows, texts


def weak_examples(rows: Sequence[MetaRow], texts: dict[str, str]) -> list[LabeledExample]:
    """A row per (output, dimension): the dimension's question, yes when the output's human score reaches the
    dimension's median over ``rows`` (the row carries its dimension: a threshold of its own where its folds allow);
    an input's outputs together (their text is read once)."""

    medians = {d: float(np.median([row.scores[d] for row in rows if d in row.scores])) for d in texts}
    first: dict[str, int] = {}
    for k, row in enumerate(rows):
        first.setdefault(row.doc_id, k)
    ordered = sorted(rows, key=lambda row: first[row.doc_id])
    return [
        LabeledExample(
            input=row.input, output=row.output, question=text, reference="yes" if row.scores[d] >= medians[d] else "no", group=row.doc_id, dimension=d,
        )
        for row in ordered for d, text in texts.items() if d in row.scores
    ]


def first_tasks(examples: list[LabeledExample], limit: int | None) -> list[LabeledExample]:
    """The rows of the first ``limit`` tasks (in the order they first appear), every row of each: a smoke run."""
    if limit is None:
        return examples
    kept = set(list(dict.fromkeys(e.group for e in examples))[:limit])
    return [e for e in examples if e.group in kept]


def calibrate(config: CalibrateConfig, readers: Sequence[HiddenStates]) -> CalibrationResults:
    """Train a head on each backbone's states (``readers``: one per backbone), keep the one with the best
    out-of-fold AUROC on the training rows, save the judge program beside it, score the test examples with it;
    returns what ``results.json`` holds."""
    examples, data, labels = labeled_examples(config)
    test = first_tasks(examples_file(config.data.test), config.limit) if config.data is not None and config.data.test is not None else []
    baselines = [(path, *baseline_head(path, readers, config.source)) for path in config.baselines]  # refused before the fit, not after
    settings = config.probe
    trained: list[tuple[Probe, HiddenStates]] = []
    for reader in readers:
        with searching(reader, examples, settings.layers, len(settings.strengths), settings.folds):
            probe = fit_probe(
                examples, reader, labels=labels, data=data, layers=settings.layers, strengths=settings.strengths, poolings=settings.poolings,
                combine=settings.combine, folds=settings.folds, seed=settings.seed, test_groups=[e.group for e in test],
                label=f"  training rows: reading {reader.model}'s states",
            )
        trained.append((probe, reader))
    probe, reader = max(trained, key=lambda t: t[0].record.validation.get("auroc") or -1.0)
    judge = BinaryJudge(explanations="none", probability=True, probe=probe)
    ProgramFile.of(judge).save(config.run_dir / PROGRAM_FILE)
    results = CalibrationResults(
        probe=probe.digest(), record=json.loads(probe.record.model_dump_json()),
        backbones={p.record.model: p.record.validation.get("auroc") for p, _ in trained},
    )
    if test:
        boot = Bootstrap([e.group for e in test], 1000, settings.seed)
        p, answers = predict(probe, reader, test, label="  test rows: reading states")
        refs: list[str] = [e.reference for e in test]
        results.test_rows, results.test, results.test_best = len(test), figures_of(boot, p, answers, refs), best_diagnostic(p, answers, refs)
        results.test_majority = Majority.of(refs)
        for path, old, old_reader in baselines:
            results.baselines[shown_path(path)] = compared(boot, (p, answers), old, predict(old, old_reader, test), refs)
    results.standing = standing_on(results.test, results.test_rows, results.test_majority, probe)

    def fit(rows: Sequence[LabeledExample], seed: int) -> Scorer:  # a head as this run trains its own, on fewer labels
        head = fit_probe(
            rows, reader, labels=labels, data=data, layers=settings.layers, strengths=settings.strengths, poolings=settings.poolings,
            combine=settings.combine, folds=settings.folds, seed=seed,
        )
        return lambda held: predict(head, reader, held)

    results.curve = curve_of(config.curve, fit, examples, test, probe, reader, settings.seed)
    write_text_atomic(config.run_dir / RESULTS_FILE, results.model_dump_json(indent=2))
    return results


def baseline_head(path: Path, readers: Sequence[HiddenStates], source: str) -> tuple[Probe, HiddenStates]:
    """The head ``path`` names (through ``head_of_run``'s digest check) and the run's reader of the states it reads;
    refused in one line when no backbone of this run gives them."""
    old = head_of_run(path)
    for reader in readers:
        if reader.model == old.record.model and reader.backend == old.record.backend:
            return old, reader
    reads = ", ".join(f"{r.model} ({r.backend})" for r in readers)
    raise InputError(f"{source}: field 'baselines': {path} reads {old.record.model}'s {old.record.backend} states; this run reads {reads}")


def statistics_of(p: np.ndarray, answers: Sequence[str], refs: Sequence[str]) -> dict[str, Statistic]:
    """The held-out figures as statistics over resampled tasks: kappa, balanced accuracy, AUROC, agreement."""
    return {
        "kappa": kappa_statistic(list(zip(answers, refs))),
        "balanced_accuracy": balanced_accuracy_statistic(answers, refs),
        "auroc": auroc_statistic(list(p), refs),
        "agreement": mean_of([float(a == r) for a, r in zip(answers, refs)]),
    }


def figures_of(boot: Bootstrap, p: np.ndarray, answers: Sequence[str], refs: Sequence[str]) -> dict[str, Interval]:
    """``statistics_of`` with 95% intervals over the test tasks."""
    return {name: boot.interval(stat) for name, stat in statistics_of(p, answers, refs).items()}


def best_diagnostic(p: np.ndarray, answers: Sequence[str], refs: Sequence[str]) -> dict[str, float | None]:
    """Diagnostic only, never used to choose: the kappa a global threshold chosen on the test rows themselves
    reaches, that threshold, and the head's yes rate."""
    cut = best_threshold(np.asarray(p), np.array([r == "yes" for r in refs], dtype=float))
    best = point(kappa_statistic([("yes" if v >= cut else "no", r) for v, r in zip(p, refs)]), len(refs))
    return {"kappa_at_best_threshold": best, "best_threshold": cut, "yes_rate": sum(a == "yes" for a in answers) / len(answers)}


def compared(boot: Bootstrap, new: tuple[np.ndarray, list[str]], old: Probe, scored: tuple[np.ndarray, list[str]], refs: Sequence[str]) -> BaselineFigures:
    """The baseline ``old`` (its P(yes) and answers ``scored``) on the test rows, and ``new`` minus it on the same
    draws."""
    mine, theirs = statistics_of(*new, refs), statistics_of(*scored, refs)
    return BaselineFigures(
        probe=old.digest(), head=old.head.describe(), model=old.record.model, test={name: boot.interval(stat) for name, stat in theirs.items()},
        difference={name: boot.interval(difference_of(mine[name], theirs[name])) for name in mine},
        yes_rate=sum(a == "yes" for a in scored[1]) / len(refs),
    )
