"""A program's optimizable state, and ``program.json``: the one file the optimizer writes and every command reads.

The state is what ``BinEvalOptimizer`` may change: each predictor's instructions and demonstrations and, for a
judge, its per-dimension P(yes) thresholds. ``ProgramFile`` adds what rebuilding the program needs (a generator's
token limit; a judge's options, calibration included), so ``bineval generate --program`` and ``bineval judge
--program`` run exactly the program the optimizer measured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import dspy
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_model, write_text_atomic
from bineval_dspy.core.schema import JudgeOptions
from bineval_dspy.enforce.plan import Source
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.probe import PROBE_FILE, PROGRAM_FILE, Probe, ProbeRef, read_head
from bineval_dspy.judges.standing import announce
from bineval_dspy.programs.steer import SteeringSettings
from bineval_dspy.programs.weights import Weights, attach, weights_of

SPLITS_FILE = "splits.json"  # beside it: the splits the run trained, validated and tested on
Demos = dict[str, list[dict[str, Any]]]  # predictor name -> its demonstrations (field name -> value)


def instructions_of(program: dspy.Module) -> dict[str, str]:
    """Instructions of every named predictor."""
    return {name: pred.signature.instructions for name, pred in program.named_predictors()}


def set_instructions(program: dspy.Module, texts: dict[str, str]) -> None:
    """Replace signatures (never mutate them: copies share Signature classes)."""
    for name, pred in program.named_predictors():
        if name in texts:
            pred.signature = pred.signature.with_instructions(texts[name])


def demos_of(program: dspy.Module) -> Demos:
    """Demonstrations of every named predictor that has some, as plain field dicts."""
    return {name: [dict(d) for d in pred.demos] for name, pred in program.named_predictors() if pred.demos}


def set_state(
    program: dspy.Module, instructions: dict[str, str], demos: Demos, thresholds: dict[str, float], steering: SteeringSettings | None = None
) -> None:
    """Give ``program`` one recorded state: instructions, the demonstrations of each predictor named in ``demos``
    (the others keep none), for a judge its per-dimension P(yes) thresholds and, for a generator, ``steering``
    when given (None: its own is kept)."""
    set_instructions(program, instructions)
    for name, pred in program.named_predictors():
        pred.demos = [dspy.Example(**d) for d in demos.get(name, [])]
    if hasattr(program, "thresholds"):
        program.thresholds = dict(thresholds)
    if steering is not None and isinstance(getattr(program, "steering", None), SteeringSettings):
        program.steering = steering


def steering_of(program: dspy.Module) -> SteeringSettings | None:
    """A generator's steering settings where they narrow its ``enforce`` (which ``ProgramFile`` keeps apart);
    None otherwise."""
    steering = getattr(program, "steering", None)
    return steering if isinstance(steering, SteeringSettings) and steering.limited else None


class ProgramState(BaseModel):
    """A program's learnable state, in one shape wherever it is kept: the optimizer's candidates and audit records
    (start, best) and ``program.json`` (``ProgramFile``, which adds what the program is and runs on)."""

    instructions: dict[str, str]
    demos: Demos = Field(default_factory=dict)
    thresholds: dict[str, float] = Field(default_factory=dict)  # a judge's per-dimension P(yes) thresholds
    steering: SteeringSettings | None = None  # a generator's steering (None: as the program has it)

    @classmethod
    def of(cls, program: dspy.Module) -> ProgramState:
        """``program``'s current state."""
        thresholds = dict(getattr(program, "thresholds", {}))
        return cls(instructions=instructions_of(program), demos=demos_of(program), thresholds=thresholds, steering=steering_of(program))

    def apply_to(self, program: dspy.Module) -> None:
        """Give ``program`` this state (``set_state``)."""
        set_state(program, self.instructions, self.demos, self.thresholds, self.steering)

    def size(self) -> int:
        """What the bloat guard measures of this state (``prompt_length``)."""
        return prompt_length(self.instructions, self.demos)


def prompt_length(texts: dict[str, str], demos: Demos | None = None) -> int:
    """What the bloat guard measures: instruction characters plus every character of the demonstrations' fields."""
    shown = sum(len(v if isinstance(v, str) else json.dumps(v)) for ds in (demos or {}).values() for d in ds for v in d.values())
    return sum(len(t) for t in texts.values()) + shown


class ProgramFile(ProgramState):
    """``program.json``: a generator or judge program as the optimizer left it: its state, what it is, and what it
    runs with."""

    model_config = ConfigDict(extra="forbid")  # a hand-edited program with a misspelt key fails, never runs without it

    kind: Literal["generator", "judge", "module"]
    max_tokens: int | None = None  # generator: the token limit per response it was measured with
    enforce: Source | None = None  # generator: decodes under its prompts' constraints (``Generator.enforce``)
    judge: JudgeOptions | None = None  # judge: its options, calibration included
    weights: Weights | None = None  # fine-tuned: the base model and LoRA adapter it runs on (else the configured LM)
    probe: ProbeRef | None = None  # a probe judge: its head, read with the file (``load_program``)
    _probe: Probe | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _one_source(self) -> ProgramFile:
        if self.steering is not None and self.steering.enforce != self.enforce:
            raise ValueError(f"steering.enforce {self.steering.enforce!r} differs from enforce {self.enforce!r}")
        return self

    @classmethod
    def of(cls, program: dspy.Module) -> ProgramFile:
        """The file for ``program``'s current state."""
        from bineval_dspy.programs.generator import Generator  # here: the generator's imports lead back to this module

        state: dict[str, Any] = {
            "instructions": instructions_of(program), "demos": demos_of(program), "weights": weights_of(program), "steering": steering_of(program)
        }
        if isinstance(program, Generator):
            return cls(kind="generator", max_tokens=program.max_tokens, enforce=program.enforce, **state)
        if isinstance(program, BinaryJudge):
            spec = program.spec()
            file = cls(kind="judge", thresholds=dict(program.thresholds), judge=spec.options(), **state)
            if program.probe is not None:
                file.probe = ProbeRef(path=Path(PROBE_FILE), digest=program.probe.digest())
                file._probe = program.probe
            return file
        return cls(kind="module", **state)

    def build(self) -> dspy.Module:
        """A new generator or judge in this state (a ``module`` file is applied to your own program instead)."""
        from bineval_dspy.programs.generator import Generator

        program: dspy.Module
        if self.kind == "generator":
            program = Generator(max_tokens=self.max_tokens, enforce=self.enforce) if self.max_tokens else Generator(enforce=self.enforce)
        elif self.kind == "judge":
            program = BinaryJudge.from_spec(self.judge or JudgeOptions(), probe=self._probe)
        else:
            raise ValueError("a program file of kind 'module' has no program to build: apply() it to your own module")
        return self.apply(program)

    def apply(self, program: dspy.Module) -> dspy.Module:
        """Give ``program`` this state (instructions, demos, thresholds and, when fine-tuned, its weights) and return it."""
        self.apply_to(program)
        if self._probe is not None:
            program.probe = self._probe
        return attach(program, self.weights) if self.weights is not None else program

    def save(self, path: Path) -> None:
        """Write atomically: a kill never leaves half a program. An adapter's path is written from the file's folder."""
        path.parent.mkdir(parents=True, exist_ok=True)
        if self._probe is not None and self.probe is not None:  # the head first: a program never names a missing file
            self._probe.save(path.parent / PROBE_FILE)
            self.probe = ProbeRef(path=Path(PROBE_FILE), digest=self._probe.digest())
        state = self if self.weights is None else self.model_copy(update={"weights": self.weights.relative_to(path.parent)})
        data = state.model_dump(mode="json", exclude_none=True)
        write_text_atomic(path, json.dumps({"kind": data.pop("kind"), **data}, indent=2, ensure_ascii=False))  # what it is, first


class Splits(BaseModel):
    """The groups (suite keys, or judge examples' ``example_id``) of each split: what the run trained, validated
    and tested on."""

    group_by: str
    train: list[str]
    val: list[str]
    test: list[str] = Field(default_factory=list)

    def save(self, run_dir: Path) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_text_atomic(run_dir / SPLITS_FILE, self.model_dump_json(indent=2))

    @classmethod
    def load(cls, run_dir: Path) -> Splits:
        return load_model(run_dir / SPLITS_FILE, cls)


def run_folder(program: Path) -> Path:
    """The folder of the run a ``program`` argument (a program file or its folder) belongs to: its own, or for an
    experiment's (or fine-tuning's) arm, ``RUN_DIR/arms/NAME``, the experiment's, which holds the splits and results."""
    folder = program if program.is_dir() else program.parent
    if not (folder / SPLITS_FILE).exists() and folder.parent.name == "arms":
        return folder.parent.parent
    return folder


def program_path(path: Path) -> Path:
    """The program file a ``--program`` argument names: a run directory stands for the ``program.json`` in it."""
    return path / PROGRAM_FILE if path.is_dir() else path


def load_program(path: Path, kind: Literal["generator", "judge"] | None = None) -> ProgramFile:
    """Read ``program.json`` (a run directory stands for the file in it); a wrong kind is one located error."""
    file = program_path(path)
    program = load_model(file, ProgramFile)
    if kind is not None and program.kind != kind:
        raise InputError(f"{file}: field 'kind': a {program.kind} program, this command runs a {kind}")
    if program.weights is not None:
        program.weights = program.weights.resolved(file.parent)
        program.weights.check(str(file))
    if program.probe is not None:
        program._probe = read_head(file, program.probe)
        announce(file.parent, program._probe)  # its recorded test figures in one line, a warning when they are at chance
    return program
