"""`bineval tune CONFIG.toml`: the study description (storage, trials, seed, search space, objectives, trial kind).

Relative paths (``dir``, a SQLite ``storage`` file, the files a ``[run]`` table names) are taken from the
config file's folder. The ``[run]`` table belongs to its ``kind`` (see ``bineval_dspy.tune.kinds``), which
validates it; this module validates the rest.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

import optuna
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bineval_dspy.core.fingerprint import digest
from bineval_dspy.core.jsonio import load_toml
from bineval_dspy.core.settings import fingerprint_of
from bineval_dspy.runs.spec import RunSpec

Direction = Literal["maximize", "minimize"]
Choice = bool | int | float | str


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IntParam(_Strict):
    """An integer from ``low`` to ``high`` inclusive, every ``step`` (or log-uniform with ``log = true``)."""

    type: Literal["int"]
    low: int
    high: int
    step: int = Field(default=1, ge=1)
    log: bool = False

    @model_validator(mode="after")
    def _range(self) -> IntParam:
        _check_range(self.low, self.high, self.log, self.step != 1)
        return self

    def suggest(self, trial: optuna.Trial, name: str) -> int:
        return trial.suggest_int(name, self.low, self.high, step=self.step, log=self.log)

    def examples(self) -> list[Choice]:
        """Values a kind checks its settings with: the range's ends."""
        return [self.low, self.high]


class FloatParam(_Strict):
    """A number from ``low`` to ``high``, continuous, every ``step``, or log-uniform with ``log = true``."""

    type: Literal["float"]
    low: float
    high: float
    step: float | None = Field(default=None, gt=0)
    log: bool = False

    @model_validator(mode="after")
    def _range(self) -> FloatParam:
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise ValueError("low and high must be finite numbers")
        _check_range(self.low, self.high, self.log, self.step is not None)
        return self

    def suggest(self, trial: optuna.Trial, name: str) -> float:
        return trial.suggest_float(name, self.low, self.high, step=self.step, log=self.log)

    def examples(self) -> list[Choice]:
        return [self.low, self.high]


class CategoricalParam(_Strict):
    """One of ``choices`` (booleans, numbers or strings)."""

    type: Literal["categorical"]
    choices: list[Choice] = Field(min_length=1)

    @field_validator("choices")
    @classmethod
    def _distinct(cls, value: list[Choice]) -> list[Choice]:
        keys = [json.dumps(c) for c in value]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise ValueError(f"{repeated[0]} is listed twice")
        return value

    def suggest(self, trial: optuna.Trial, name: str) -> Choice:
        choice = trial.suggest_categorical(name, self.choices)
        assert choice is not None  # the choices are validated to be booleans, numbers or strings
        return choice

    def examples(self) -> list[Choice]:
        return list(self.choices)


Param = Annotated[IntParam | FloatParam | CategoricalParam, Field(discriminator="type")]


def _check_range(low: float, high: float, log: bool, stepped: bool) -> None:
    if low > high:
        raise ValueError(f"low {low} is above high {high}")
    if log and stepped:
        raise ValueError("log and step cannot be combined")
    if log and low <= 0:
        raise ValueError(f"a log range needs low > 0, got {low}")


class PrunerConfig(_Strict):
    """Optuna's median rule: stop a trial whose value at a step is worse than the median of earlier trials'."""

    kind: Literal["median", "none"] = "median"
    startup_trials: int = Field(default=5, ge=0, description="trials that finish before any is pruned")
    warmup_steps: int = Field(default=0, ge=0, description="steps (optimizer iterations) a trial runs before it may be pruned")


class TuneConfig(RunSpec):
    """One study: ``trials`` trials of the ``[run]`` kind, each with parameters drawn from ``space``."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="the study's name in its storage")
    storage: str | None = Field(default=None, description="an RDB URL, or a SQLite file path; default DIR/study.db")
    dir: Path | None = Field(default=None, description="the study's folder (trial runs, LM cache, results); default runs/NAME")
    trials: int = Field(ge=1, description="finished trials (complete or pruned) the study ends with, all workers together")
    seed: int = 0
    heartbeat: int = Field(default=30, ge=1, description="seconds between a running trial's heartbeats; two missed: failed")
    objectives: dict[str, Direction] = Field(min_length=1)
    space: dict[str, Param] = Field(min_length=1)
    pruner: PrunerConfig | None = Field(default=None, description="none given: median when it can act, else none")
    run: dict[str, Any]

    @field_validator("run")
    @classmethod
    def _has_kind(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(value.get("kind"), str):
            raise ValueError("needs kind = \"optimizer\", \"checklist\" or another registered kind")
        return value

    @property
    def multi_objective(self) -> bool:
        return len(self.objectives) > 1

    @property
    def storage_url(self) -> str:
        """``storage`` as an SQLAlchemy URL (a file path becomes ``sqlite:///``); ``load_config`` resolved it."""
        assert self.storage is not None and self.dir is not None  # load_config fills both
        return self.storage if "://" in self.storage else f"sqlite:///{self.storage}"

    def fingerprint(self) -> dict[str, str]:
        """What the study's trials mean: ``StudyFingerprint``, field by field."""
        space = digest(json.dumps({k: v.model_dump() for k, v in self.space.items()}, sort_keys=True))
        return fingerprint_of(StudyFingerprint(objectives=list(self.objectives.items()), space=space, kind=str(self.run["kind"])))


class StudyFingerprint(BaseModel):
    """What a study's trials mean: its objectives in order, its search space (a digest) and the trial kind; not
    paths, not the trial count."""

    objectives: list[tuple[str, Direction]]
    space: str
    kind: str


def load_config(path: Path) -> TuneConfig:
    """Parse and validate a study config; relative paths are taken from the config's folder."""
    config = load_toml(path, TuneConfig)
    base = path.parent
    folder = (base / (config.dir or Path("runs") / config.name)).resolve()
    if config.storage is None:
        storage = str(folder / "study.db")
    else:
        storage = config.storage if "://" in config.storage else str((base / config.storage).resolve())
    return config.model_copy(update={"dir": folder, "storage": storage})
