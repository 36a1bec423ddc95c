"""`bineval optimize CONFIG.toml`: a TOML run description -> data splits, student, feedback, optimizer.

Two kinds of runs:
- ``mode = "self"``: an IFBench-style suite; the student is the generator; its outputs are judged by the
  hybrid checklist (code verifiers, plus optional TICK questions).
- ``mode = "cross"``: JSON Lines of judge examples (``input``, ``output``, ``question``, ``dimension``,
  ``question_id``, ``example_id`` and optionally ``reference`` yes/no); the student is a BinaryJudge on the
  target LM; the reference is the recorded answers, or a reference judge on ``[reference] lm``.
"""

from __future__ import annotations

import argparse
import random
import tomllib
from pathlib import Path
from typing import Literal

import dspy
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bineval_dspy.errors import InputError
from bineval_dspy.feedback import CrossModelFeedback, SelfUpdateFeedback
from bineval_dspy.generator import Generator
from bineval_dspy.hybrid import TickQuestionWriter, hybrid_checklist, hybrid_judge
from bineval_dspy.jsonio import describe_validation_error, read_jsonl
from bineval_dspy.judge import BinaryJudge
from bineval_dspy.lessons import DEFAULT_THRESHOLD, LessonBank
from bineval_dspy.models import DEFAULT_LM, make_lm
from bineval_dspy.optimizer import BinEvalOptimizer
from bineval_dspy.runtime import configure
from bineval_dspy.show import show_run
from bineval_dspy.suite import SuiteRow, load_suite

JUDGE_EXAMPLE_FIELDS = ("input", "output", "question", "dimension", "question_id", "example_id")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DataConfig(_Strict):
    suite: Path | None = None
    examples: Path | None = None
    train: int = Field(default=12, ge=1)
    val: int = Field(default=8, ge=1)
    test: int = Field(default=0, ge=0)
    seed: int = 0


class ProgramConfig(_Strict):
    instructions: str | None = None
    max_tokens: int = Field(default=256, ge=8)
    llm_questions: tuple[int, int] = (0, 0)


class ReferenceConfig(_Strict):
    lm: str | None = None


class OptimizerConfig(_Strict):
    max_iterations: int = Field(default=4, ge=1)
    patience: int = Field(default=2, ge=1)
    min_delta: float = Field(default=0.01, ge=0)
    target_score: float | None = None
    epsilon: float = Field(default=0.05, gt=0)
    max_chars: int = Field(default=4000, ge=1)
    max_growth: float = Field(default=4.0, ge=1)
    lessons_per_iteration: int = Field(default=3, ge=1)
    max_failures: int = Field(default=16, ge=1)
    bloat_guard: bool = True
    dedup_threshold: float = Field(default=DEFAULT_THRESHOLD, gt=0, le=1)


class RunConfig(_Strict):
    source: str = Field(default="", exclude=True, description="the config file, for error messages")
    mode: Literal["self", "cross"]
    lm: str = DEFAULT_LM
    lesson_lm: str | None = None
    run_dir: Path
    data: DataConfig
    program: ProgramConfig = ProgramConfig()
    reference: ReferenceConfig = ReferenceConfig()
    optimizer: OptimizerConfig = OptimizerConfig()


def load_config(path: Path) -> RunConfig:
    """Parse and validate a run config; relative paths are taken from the config's folder."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: malformed TOML ({exc})") from None
    try:
        config = RunConfig.model_validate(raw)
    except ValidationError as exc:
        raise InputError(f"{path}: {describe_validation_error(exc)}") from None
    config.source = str(path)
    base = path.parent
    data = config.data
    wanted = "suite" if config.mode == "self" else "examples"
    given = getattr(data, wanted)
    if given is None:
        raise InputError(f"{path}: field 'data.{wanted}' is required when mode = \"{config.mode}\"")
    setattr(data, wanted, (base / given).resolve())
    config.run_dir = (base / config.run_dir).resolve()
    return config


def split(items: list, data: DataConfig, source: str, group=lambda item: item) -> tuple[list, list, list]:
    """Seeded train/val/test split by group (suite key, or instruction id), so no group spans two splits."""
    groups = list(dict.fromkeys(group(item) for item in items))
    random.Random(data.seed).shuffle(groups)
    if len(groups) < data.train + data.val + data.test:
        raise InputError(f"{source}: {len(groups)} groups in the data, fewer than train + val + test = {data.train + data.val + data.test}")
    cut = {"train": groups[: data.train], "val": groups[data.train : data.train + data.val]}
    cut["test"] = groups[data.train + data.val : data.train + data.val + data.test]
    chosen = {name: set(g) for name, g in cut.items()}
    return tuple([item for item in items if group(item) in chosen[name]] for name in ("train", "val", "test"))  # type: ignore[return-value]


def suite_example(row: SuiteRow) -> dspy.Example:
    return dspy.Example(key=row.key, prompt=row.prompt, instruction_id_list=row.instruction_id_list, kwargs=row.kwargs).with_inputs("prompt")


def load_judge_examples(path: Path) -> list[dspy.Example]:
    """Judge examples for cross-model runs; ``reference`` must be yes/no when present."""
    examples = []
    for number, obj in read_jsonl(path, required=JUDGE_EXAMPLE_FIELDS):
        if obj.get("reference") not in (None, "yes", "no"):
            raise InputError(f"{path}:{number}: field 'reference' must be \"yes\" or \"no\"")
        examples.append(dspy.Example(**obj).with_inputs("input", "output", "question"))
    return examples


def build(config: RunConfig) -> tuple[dspy.Module, BinEvalOptimizer, tuple[list, list, list]]:
    """Student program, optimizer and splits for a run config (the LM is configured by the caller)."""
    settings = config.optimizer
    if config.mode == "self":
        rows = load_suite(config.data.suite)
        splits = split([suite_example(r) for r in rows], config.data, config.source, group=lambda ex: ex.key)
        writer = TickQuestionWriter(config.program.llm_questions) if config.program.llm_questions != (0, 0) else None
        checklists: dict[str, object] = {}

        def checklist_for(example: dspy.Example):
            if example.key not in checklists:
                row = SuiteRow(key=example.key, prompt=example.prompt, instruction_id_list=example.instruction_id_list, kwargs=example.kwargs)
                checklists[example.key] = hybrid_checklist(row, generator=writer, n_llm_questions=config.program.llm_questions)
            return checklists[example.key]

        feedback = SelfUpdateFeedback(hybrid_judge(), checklist_for)
        student: dspy.Module = Generator(config.program.instructions, max_tokens=config.program.max_tokens)
    else:
        examples = load_judge_examples(config.data.examples)
        splits = split(examples, config.data, config.source, group=lambda ex: ex.example_id)
        if config.reference.lm:
            feedback = CrossModelFeedback(BinaryJudge(), make_lm(config.reference.lm))
        else:
            missing = [ex.question_id for ex in examples if ex.get("reference") is None]
            if missing:
                raise InputError(f"{config.data.examples}: example {missing[0]} has no 'reference' and no [reference] lm is set")
            feedback = CrossModelFeedback()
        student = BinaryJudge()
        if config.program.instructions:
            student.answer.signature = student.answer.signature.with_instructions(config.program.instructions)
    optimizer = BinEvalOptimizer(
        feedback,
        bank=LessonBank(threshold=settings.dedup_threshold),
        run_dir=config.run_dir,
        seed=config.data.seed,
        **settings.model_dump(exclude={"dedup_threshold"}),
    )
    return student, optimizer, splits


def cmd_optimize(args: argparse.Namespace) -> None:
    """Run (or resume) the optimization a config describes."""
    config = load_config(Path(args.config))
    configure(config.lm, args.cache_dir)
    student, optimizer, (train, val, _) = build(config)
    if config.lesson_lm:
        optimizer.note_taker.set_lm(make_lm(config.lesson_lm))
        optimizer.updater.set_lm(make_lm(config.lesson_lm))
    optimizer.compile(student, trainset=train, valset=val)
    show_run(config.run_dir)


def add_optimize_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``bineval optimize``."""
    parser = sub.add_parser("optimize", parents=[common], help="optimize a prompt from question-level feedback (TOML config)")
    parser.add_argument("config", help="run description (TOML); see README")
    parser.set_defaults(func=cmd_optimize)
