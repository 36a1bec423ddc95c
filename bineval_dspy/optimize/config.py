"""`bineval optimize CONFIG.toml`: a TOML run description -> data splits, student, feedback, optimizer.

Two kinds of runs:
- ``mode = "self"``: an IFBench-style suite; the student is the generator; its outputs are judged by the
  hybrid checklist (code verifiers, plus optional TICK questions).
- ``mode = "cross"``: JSON Lines of judge examples (``input``, ``output``, ``question``, ``dimension``,
  ``question_id``, ``example_id`` and optionally ``reference`` yes/no); the student is a BinaryJudge on the
  target LM; the reference is the recorded answers, or a reference judge on ``[reference] lm``.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Literal, TypeVar

import dspy
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bineval_dspy.checklists.hybrid import hybrid_checklist
from bineval_dspy.checklists.stated import extracted
from bineval_dspy.checklists.tick import TickQuestionWriter
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import Fingerprint, file_digest
from bineval_dspy.core.jsonio import load_toml, read_jsonl
from bineval_dspy.core.schema import Checklist, JudgeOptions
from bineval_dspy.core.settings import fingerprint_of, optional
from bineval_dspy.enforce.plan import Source
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.lm.budget import BudgetMeter
from bineval_dspy.lm.specs import ServedLM, make_lm
from bineval_dspy.optimize.feedback import JUDGE_EXAMPLE_FIELDS, CrossModelFeedback, FeedbackSource, SelfUpdateFeedback
from bineval_dspy.optimize.metric import bineval_metric
from bineval_dspy.optimize.optimizer import BinEvalOptimizer
from bineval_dspy.optimize.results import TestScorer
from bineval_dspy.optimize.settings import OptimizerSettings
from bineval_dspy.programs.generator import Generator
from bineval_dspy.programs.refine import DEFAULT_MAX_TOKENS
from bineval_dspy.programs.state import PROBE_FILE, Splits, load_program, program_path
from bineval_dspy.programs.steer import SteeringSettings
from bineval_dspy.runs.spec import RunSpec
from bineval_dspy.suites.rows import SuiteRow, load_suite
from bineval_dspy.verifiers import code_digest
from bineval_dspy.verifiers.user import load_config_verifiers

SPLIT_NAMES = ("train", "val", "test")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DataConfig(_Strict):
    """Where the examples come from: one file split by counts (seeded, whole groups), or one file per split."""

    suite: Path | None = None
    examples: Path | None = None
    train: int | Path = Field(default=12, description="a count of groups drawn from the data file, or a file (0: none, for an experiment whose arms learn nothing)")
    val: int | Path = Field(default=8, description="a count, or a file (0: none, as train)")
    test: Literal["rest"] | int | Path = Field(
        default="rest", description='a count (0: no test split), a file, or "rest": every group not in train or val, held out to score the result'
    )
    seed: int = 0
    limit: dict[str, int] = Field(default_factory=dict, description="at most this many groups per split (the first of each)")

    @model_validator(mode="after")
    def _counts_or_files(self) -> DataConfig:
        sizes = {name: getattr(self, name) for name in SPLIT_NAMES}
        files = [name for name, value in sizes.items() if isinstance(value, Path)]
        counted = [name for name, value in sizes.items() if isinstance(value, int) and (value or name != "test")]
        if files and counted:
            given = ", ".join(f"{name} = {str(sizes[name])!r}" for name in files)
            raise ValueError(
                f"give train, val and test all as files or all as counts ({given} read as a file, {', '.join(counted)} a count;"
                ' test may also be "rest": every group not in train or val)'
            )
        for name, value in sizes.items():
            if isinstance(value, int) and value < 0:
                raise ValueError(f"{name} must be at least 0, got {value}")
        return self

    @property
    def split_files(self) -> dict[str, Path]:
        """The splits given as files (none when they are counts)."""
        return {name: value for name in SPLIT_NAMES if isinstance(value := getattr(self, name), Path)}


class ProgramConfig(_Strict):
    instructions: str | None = None
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=8)
    llm_questions: tuple[int, int] = (0, 0)
    threads: int = Field(default=1, ge=1, description="examples run at once (an in-process model batches them)")
    enforce: Source | None = Field(
        default=None, description="decode under the prompt's code-checkable constraints: those its words state (extracted) or the suite's (annotated)"
    )
    steering: SteeringSettings | None = Field(
        default=None, exclude_if=lambda value: value is None,  # a config without it keeps its fingerprint
        description="the generator's steering beyond enforce: a table of only, exclude and floor_tokens (programs.steer)",
    )
    checklist: Path | None = Field(default=None, description="self mode: a checklist whose questions every response is also judged against")
    judge: JudgeOptions = Field(default_factory=JudgeOptions, description="cross mode: the student judge's options")
    judge_program: Path | None = Field(
        default=None, description="self mode: a judge program (a run folder or program.json, e.g. a probe judge's) answering the feedback loop's LM questions"
    )

    @model_validator(mode="before")
    @classmethod
    def _steering_enforces(cls, data: Any) -> Any:
        """``[program] steering`` narrows ``enforce``: it takes its ``enforce`` from there unless it names its own."""
        steering = data.get("steering") if isinstance(data, dict) else None
        if isinstance(steering, dict) and "enforce" not in steering and data.get("enforce") is not None:
            data = {**data, "steering": {**steering, "enforce": data["enforce"]}}
        return data

    @model_validator(mode="after")
    def _one_source(self) -> ProgramConfig:
        if self.steering is not None and self.enforce is not None and self.steering.enforce != self.enforce:
            raise ValueError(f"steering.enforce {self.steering.enforce!r} differs from enforce {self.enforce!r}")
        if self.steering is not None:
            self.enforce = self.steering.enforce  # one source, wherever it was given
        return self

    @property
    def steered(self) -> SteeringSettings:
        """The generator's steering settings: ``steering``, else ``enforce`` alone."""
        return self.steering if self.steering is not None else SteeringSettings(enforce=self.enforce)

    @field_validator("llm_questions")
    @classmethod
    def _bounds(cls, value: tuple[int, int]) -> tuple[int, int]:
        low, high = value
        if value != (0, 0) and not 1 <= low <= high:
            raise ValueError(f"must be [low, high] with 1 <= low <= high, or [0, 0] for none; got [{low}, {high}]")
        return value

    @field_validator("judge")
    @classmethod
    def _one_question_a_call(cls, value: JudgeOptions) -> JudgeOptions:
        if value.scoring == "batch":
            raise ValueError("scoring: the optimizer edits the per-question judge's prompt; batch scoring asks through another")
        return value


class ReferenceConfig(_Strict):
    lm: str | None = None


class RunConfig(RunSpec, ServedLM):
    mode: Literal["self", "cross"]
    test_every: bool = Field(default=False, description="also score the best program on test after every accepted step")
    lesson_lm: str | None = None
    run_dir: Path
    data: DataConfig
    program: ProgramConfig = ProgramConfig()
    reference: ReferenceConfig = ReferenceConfig()
    optimizer: OptimizerSettings = OptimizerSettings()
    verifiers: list[Path] = Field(
        default_factory=list, exclude_if=lambda files: not files,  # a config without them keeps its fingerprint
        description="Python files of your own verifiers (@bineval_dspy.verifier), from this file's folder",
    )

    @model_validator(mode="after")
    def _something_to_learn_from(self) -> RunConfig:
        if self.program.checklist is not None and self.mode != "self":
            raise ValueError("program.checklist: questions asked of a generator's responses (mode = \"self\")")
        if (self.optimizer.steering or self.program.steering is not None) and self.mode != "self":
            raise ValueError("steering: a generator's decoding (mode = \"self\"); in cross mode the student is a judge")
        if self.program.judge_program is not None and self.mode != "self":
            raise ValueError("program.judge_program: the judge of a generator's responses (mode = \"self\"); in cross mode the judge is the student")
        empty = [name for name in self.learns_from if getattr(self.data, name) == 0]
        if empty:
            uses = {"train": "learns from train", "val": "is checked on val"}
            who = "the optimizer" if "val" in self.learns_from else "fine-tuning"
            raise ValueError(f"data.{empty[0]}: {who} {' and '.join(uses[n] for n in self.learns_from)}; give at least 1")
        return self

    @property
    def learns_from(self) -> tuple[str, ...]:
        """The splits the run cannot do without: the optimizer learns from train and is checked on val (fine-tuning
        has no val loop; an experiment of fixed programs needs neither)."""
        return ("train", "val")


def load_config(path: Path) -> RunConfig:
    """Parse and validate a run config; relative paths are taken from the config's folder."""
    return resolve_paths(load_toml(path, RunConfig), path)


Config = TypeVar("Config", bound=RunConfig)


def resolve_paths(config: Config, path: Path) -> Config:
    """A config read from ``path`` with its data files and run directory taken from that file's folder."""
    verifiers = load_config_verifiers(config.verifiers, path)  # before anything names their ids
    base = path.parent
    data = config.data
    wanted = "suite" if config.mode == "self" else "examples"
    given = getattr(data, wanted)
    if given is None and not data.split_files:
        raise InputError(f"{path}: field 'data.{wanted}' is required when mode = \"{config.mode}\" (or give train, val and test as files)")
    files = {name: (base / file).resolve() for name, file in data.split_files.items()}
    if given is not None:
        files[wanted] = (base / given).resolve()
    program = {name: (base / file).resolve() for name in ("checklist", "judge_program") if (file := getattr(config.program, name)) is not None}
    return config.model_copy(
        update={
            "verifiers": verifiers,
            "data": data.model_copy(update=files),
            "run_dir": (base / config.run_dir).resolve(),
            "program": config.program.model_copy(update=program),
        }
    )


def _count(size: int | Path | str) -> int:
    """A split's size given as a count (the validator refused counts mixed with files)."""
    assert isinstance(size, int), size
    return size


def split(items: list[Any], data: DataConfig, source: str, group=lambda item: item) -> tuple[list, list, list]:
    """Seeded train/val/test split by group (suite key, or instruction id), so no group spans two splits."""
    groups = list(dict.fromkeys(group(item) for item in items))
    random.Random(data.seed).shuffle(groups)
    sizes = [_count(data.train), _count(data.val)]
    sizes.append(max(len(groups) - sum(sizes), 0) if data.test == "rest" else _count(data.test))
    if len(groups) < sum(sizes):
        raise InputError(f"{source}: {len(groups)} groups in the data, fewer than train + val + test = {sum(sizes)}")
    cut = {"train": groups[: sizes[0]], "val": groups[sizes[0] : sizes[0] + sizes[1]]}
    cut["test"] = groups[sizes[0] + sizes[1] : sum(sizes)]
    chosen = {name: set(g) for name, g in cut.items()}
    return tuple([item for item in items if group(item) in chosen[name]] for name in SPLIT_NAMES)  # type: ignore[return-value]


def given_splits(files: dict[str, Path], load, group) -> tuple[list[Any], list, list]:
    """One file per split; a group (suite key, example id) in two splits is one located error: the test would leak."""
    loaded = {name: load(files[name]) if name in files else [] for name in SPLIT_NAMES}
    seen: dict[str, str] = {}
    for name in SPLIT_NAMES:
        for item in loaded[name]:
            first = seen.setdefault(str(group(item)), name)
            if first != name:
                raise InputError(f"{files[name]}: {group(item)!r} is also in the {first} split ({files[first]})")
    return loaded["train"], loaded["val"], loaded["test"]


def load_judge_examples(path: Path) -> list[dspy.Example]:
    """Judge examples for cross-model runs; ``reference`` must be yes/no when present."""
    examples = []
    for number, obj in read_jsonl(path, required=JUDGE_EXAMPLE_FIELDS):
        if obj.get("reference") not in (None, "yes", "no"):
            raise InputError(f"{path}:{number}: field 'reference' must be \"yes\" or \"no\"")
        examples.append(dspy.Example(**obj).with_inputs("input", "output", "question"))
    return examples


def build(
    config: RunConfig, progress: bool = False, *, fingerprint: Fingerprint | None = None, meter: BudgetMeter | None = None
) -> tuple[dspy.Module, BinEvalOptimizer, tuple[list[Any], list, list]]:
    """Student program, optimizer and splits for a run config (the LM is configured by the caller); ``progress``
    shows progress bars. ``fingerprint`` (what decides the run's records: ``run_fingerprint``, or an experiment
    arm's) and ``meter`` (its budget) go to the optimizer here, never set on it afterwards; the config's
    ``lesson_lm`` takes notes and edits."""
    settings = config.optimizer
    feedback: FeedbackSource
    if config.mode == "self":
        def examples_of(path: Path) -> list[dspy.Example]:
            return [r.to_example() for r in load_suite(path, extract=extracted)]

        if config.data.split_files:
            splits = given_splits(config.data.split_files, examples_of, group=lambda ex: ex.key)
        else:
            assert config.data.suite is not None  # load_config requires it
            splits = split(examples_of(config.data.suite), config.data, config.source, group=lambda ex: ex.key)
        writer = TickQuestionWriter(config.program.llm_questions) if config.program.llm_questions != (0, 0) else None
        checklists: dict[str, Checklist] = {}
        every = _every_row_checklist(config.program.checklist)

        def checklist_for(example: dspy.Example) -> Checklist:
            if example.key not in checklists:
                row = SuiteRow.from_example(example)
                checklists[example.key] = hybrid_checklist(row, generator=writer, n_llm_questions=config.program.llm_questions, also=every)
            return checklists[example.key]

        judge = load_program(config.program.judge_program, "judge").build() if config.program.judge_program is not None else BinaryJudge()
        feedback = SelfUpdateFeedback(bineval_metric(judge, checklist_for), threads=config.program.threads)
        templates = {ex.template for part in splits for ex in part if ex.get("template") is not None}  # a template suite's
        instructions = config.program.instructions or (templates.pop() if templates else None)
        _check_steering(config)
        student: dspy.Module = Generator(instructions, max_tokens=config.program.max_tokens, steering=config.program.steered)
        if "annotated" in {config.program.steered.enforce, *(c.enforce for c in settings.steering or [])}:
            try:
                student.annotate([SuiteRow.from_example(ex) for part in splits for ex in part])
            except InputError as exc:
                raise InputError(f"{config.data.suite or config.source}: {exc}") from None
    else:
        if config.data.split_files:
            splits = given_splits(config.data.split_files, load_judge_examples, group=lambda ex: ex.example_id)
        else:
            assert config.data.examples is not None  # load_config requires it
            splits = split(load_judge_examples(config.data.examples), config.data, config.source, group=lambda ex: ex.example_id)
        examples = [ex for part in splits for ex in part]
        if config.reference.lm:
            feedback = CrossModelFeedback(BinaryJudge(), make_lm(config.reference.lm, source=f"{config.source}: field 'reference.lm' ="))
        else:
            missing = [ex.question_id for ex in examples if ex.get("reference") is None]
            if missing:
                raise InputError(f"{config.data.examples}: example {missing[0]} has no 'reference' and no [reference] lm is set")
            feedback = CrossModelFeedback()
        options = config.program.judge.model_dump()
        options["probability"] = options["probability"] or settings.thresholds  # thresholds are fitted on the P(yes) it reads
        student = BinaryJudge(**options)
        if config.program.instructions:
            student.answer.signature = student.answer.signature.with_instructions(config.program.instructions)
    if config.data.limit:
        splits = _limited(splits, config.data.limit, "key" if config.mode == "self" else "example_id")
    if "seed" not in settings.model_fields_set:
        settings = settings.model_copy(update={"seed": config.data.seed})
    optimizer = BinEvalOptimizer(feedback, settings=settings, run_dir=config.run_dir, progress=progress, fingerprint=fingerprint, meter=meter)
    if config.lesson_lm:
        lesson_lm = make_lm(config.lesson_lm, source=f"{config.source}: field 'lesson_lm' =")
        optimizer.note_taker.set_lm(lesson_lm)
        optimizer.updater.set_lm(lesson_lm)
    return student, optimizer, splits


def _check_steering(config: RunConfig) -> None:
    """A name in ``only``/``exclude`` that no verifier id, family, how or rule kind answers to is a typo: refused in
    one line (after the config's own verifiers are registered)."""
    given = [("program.steering", config.program.steered), *(("optimizer.steering", c) for c in config.optimizer.steering or [])]
    for field, steering in given:
        if name := steering.unknown_name():
            raise InputError(f"{config.source}: field '{field}': {name!r} names no instruction id, family (the id before ':'), how or rule kind")


def _every_row_checklist(path: Path | None) -> Checklist | None:
    """``[program] checklist``: its questions join every row's checklist (its code verifiers checked first)."""
    if path is None:
        return None
    from bineval_dspy.core.jsonio import load_model
    from bineval_dspy.judges.code import check_verifiers

    checklist = load_model(path, Checklist)
    check_verifiers(checklist, str(path))
    return checklist


def _limited(splits: tuple[list[Any], list, list], limit: dict[str, int], group_by: str) -> tuple[list, list, list]:
    """Each split cut to its first ``limit[name]`` groups (a smoke-test run of a full-size config)."""
    out = []
    for name, part in zip(SPLIT_NAMES, splits):
        keep = list(dict.fromkeys(str(ex[group_by]) for ex in part))[: limit.get(name, len(part))]
        out.append([ex for ex in part if str(ex[group_by]) in set(keep)])
    return out[0], out[1], out[2]


def splits_of(config: RunConfig, splits: tuple[list[Any], list, list]) -> Splits:
    """The groups of each split, as ``splits.json`` records them."""
    group_by = "key" if config.mode == "self" else "example_id"
    groups = [list(dict.fromkeys(str(ex[group_by]) for ex in part)) for part in splits]
    return Splits(group_by=group_by, train=groups[0], val=groups[1], test=groups[2])


def test_scorer(config: RunConfig, student: dspy.Module, optimizer: BinEvalOptimizer, test: list[dspy.Example]) -> TestScorer:
    """Scores programs on the test split with the run's own feedback; suites also get verify's accuracies."""
    rows = {str(ex.key): SuiteRow.from_example(ex) for ex in test} if config.mode == "self" else None
    settings = optimizer.settings
    return TestScorer(optimizer.feedback, student, test, resamples=settings.resamples, seed=config.data.seed, confidence=settings.confidence, rows=rows)


class RunFingerprint(BaseModel):
    """What decides an optimize run's results: every config setting (``config``, less where files lie and what
    the optimizer records itself), the data files' bytes (not where they lie: a run moved with its data resumes),
    the LM and the code of the verifiers that grade it."""

    config: dict[str, Any]
    train_file: str | None = optional()
    val_file: str | None = optional()
    test_file: str | None = optional()
    data_file: str | None = optional()  # one data file split by counts
    checklist_file: str | None = optional()
    judge_program: str | None = optional()  # the judge's own file and its probe's, wherever they lie
    judge_probe: str | None = optional()
    lm: str
    verifiers: str


def run_fingerprint(config: RunConfig, lm_identity: str) -> Fingerprint:
    """``RunFingerprint`` of ``config`` run on the LM ``lm_identity``, field by field."""
    data_path = config.data.suite if config.mode == "self" else config.data.examples
    paths: dict[str, Any] = {"data": {"suite", "examples", *config.data.split_files}, "program": {"checklist", "judge_program"}}
    settings = config.model_dump(mode="json", exclude={"run_dir": True, "optimizer": True, "test_every": True, **paths})
    files = {f"{name}_file": file_digest(path) for name, path in config.data.split_files.items()}
    if data_path is not None and not files:
        files["data_file"] = file_digest(data_path)
    if config.program.checklist is not None:
        files["checklist_file"] = file_digest(config.program.checklist)
    if config.program.judge_program is not None:
        judge = program_path(config.program.judge_program)
        files["judge_program"] = file_digest(judge)
        if (judge.parent / PROBE_FILE).is_file():
            files["judge_probe"] = file_digest(judge.parent / PROBE_FILE)
    return fingerprint_of(RunFingerprint(config=settings, **files, lm=lm_identity, verifiers=code_digest()))
