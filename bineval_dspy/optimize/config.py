"""`bineval optimize CONFIG.toml`: a TOML run description -> data splits, student, feedback, optimizer.

Two kinds of runs:
- ``mode = "self"``: an IFBench-style suite; the student is the generator; its outputs are judged by the
  hybrid checklist (code verifiers, plus optional TICK questions).
- ``mode = "cross"``: JSON Lines of judge examples (``input``, ``output``, ``question``, ``dimension``,
  ``question_id``, ``example_id`` and optionally ``reference`` yes/no); the student is a BinaryJudge on the
  target LM; the reference is the recorded answers, or a reference judge on ``[reference] lm``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Literal

import dspy
from pydantic import BaseModel, ConfigDict, Field, field_validator

from bineval_dspy.checklists.hybrid import hybrid_checklist
from bineval_dspy.checklists.tick import TickQuestionWriter
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import Fingerprint, file_digest
from bineval_dspy.core.jsonio import load_toml, read_jsonl
from bineval_dspy.core.schema import Checklist
from bineval_dspy.judges.binary import BinaryJudge, hybrid_judge
from bineval_dspy.lm.specs import DEFAULT_LM, make_lm
from bineval_dspy.optimize.feedback import CrossModelFeedback, FeedbackSource, SelfUpdateFeedback
from bineval_dspy.optimize.optimizer import BinEvalOptimizer
from bineval_dspy.optimize.settings import OptimizerSettings
from bineval_dspy.programs.generator import Generator
from bineval_dspy.suites.rows import SuiteRow, load_suite

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
    threads: int = Field(default=1, ge=1, description="examples run at once (an in-process model batches them)")

    @field_validator("llm_questions")
    @classmethod
    def _bounds(cls, value: tuple[int, int]) -> tuple[int, int]:
        low, high = value
        if value != (0, 0) and not 1 <= low <= high:
            raise ValueError(f"must be [low, high] with 1 <= low <= high, or [0, 0] for none; got [{low}, {high}]")
        return value


class ReferenceConfig(_Strict):
    lm: str | None = None


class RunConfig(_Strict):
    source: str = Field(default="", exclude=True, description="the config file, for error messages")
    mode: Literal["self", "cross"]
    lm: str = DEFAULT_LM
    lesson_lm: str | None = None
    run_dir: Path
    data: DataConfig
    program: ProgramConfig = ProgramConfig()
    reference: ReferenceConfig = ReferenceConfig()
    optimizer: OptimizerSettings = OptimizerSettings()


def load_config(path: Path) -> RunConfig:
    """Parse and validate a run config; relative paths are taken from the config's folder."""
    config = load_toml(path, RunConfig)
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
    feedback: FeedbackSource
    if config.mode == "self":
        assert config.data.suite is not None  # load_config requires it
        rows = load_suite(config.data.suite)
        splits = split([r.to_example() for r in rows], config.data, config.source, group=lambda ex: ex.key)
        writer = TickQuestionWriter(config.program.llm_questions) if config.program.llm_questions != (0, 0) else None
        checklists: dict[str, Checklist] = {}

        def checklist_for(example: dspy.Example) -> Checklist:
            if example.key not in checklists:
                row = SuiteRow.from_example(example)
                checklists[example.key] = hybrid_checklist(row, generator=writer, n_llm_questions=config.program.llm_questions)
            return checklists[example.key]

        feedback = SelfUpdateFeedback(hybrid_judge(), checklist_for, threads=config.program.threads)
        student: dspy.Module = Generator(config.program.instructions, max_tokens=config.program.max_tokens)
    else:
        assert config.data.examples is not None  # load_config requires it
        examples = load_judge_examples(config.data.examples)
        splits = split(examples, config.data, config.source, group=lambda ex: ex.example_id)
        if config.reference.lm:
            feedback = CrossModelFeedback(BinaryJudge(), make_lm(config.reference.lm, source=f"{config.source}: field 'reference.lm' ="))
        else:
            missing = [ex.question_id for ex in examples if ex.get("reference") is None]
            if missing:
                raise InputError(f"{config.data.examples}: example {missing[0]} has no 'reference' and no [reference] lm is set")
            feedback = CrossModelFeedback()
        student = BinaryJudge(probability=settings.thresholds)  # thresholds are fitted on the P(yes) it reads
        if config.program.instructions:
            student.answer.signature = student.answer.signature.with_instructions(config.program.instructions)
    if "seed" not in settings.model_fields_set:
        settings = settings.model_copy(update={"seed": config.data.seed})
    optimizer = BinEvalOptimizer(feedback, settings=settings, run_dir=config.run_dir)
    return student, optimizer, splits


def run_fingerprint(config: RunConfig, lm_identity: str) -> Fingerprint:
    """What decides an optimize run's results: every config setting, the data file's bytes and the LM."""
    data_path = config.data.suite if config.mode == "self" else config.data.examples
    assert data_path is not None  # load_config requires it
    settings = config.model_dump(mode="json", exclude={"run_dir", "optimizer"})
    return {
        "config": json.dumps(settings, sort_keys=True),
        "data_file": file_digest(data_path),
        "lm": lm_identity,
    }
