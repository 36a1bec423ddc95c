"""`bineval experiment CONFIG.toml`: arms side by side on one split of one data set, in one TOML file.

The file is an optimize run description (``mode``, ``lm``, ``[data]``, ``[program]``, ``[optimizer]``: see
``optimize.config``) plus ``[[arms]]``, each a named way of getting a program to score on the test split;
the kinds and their keys are in ``experiment.params``, each registered with how it runs in ``experiment.arms.ARMS``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_toml
from bineval_dspy.experiment.arms import ARMS, ArmConfig
from bineval_dspy.optimize.config import RunConfig, resolve_paths


class ExperimentConfig(RunConfig):
    """A run config with arms; ``baseline`` names the arm every other is compared with (default: the first)."""

    name: str = Field(default="experiment", description="the table's title (default: the config file's name)")
    baseline: str | None = None
    resamples: int = Field(default=1000, ge=0, description="bootstrap resamples over test items")
    arms: list[ArmConfig] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _not_an_eval_matrix(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("prompts" in data or "lms" in data):
            raise ValueError(
                "[[prompts]] and [[lms]] are the retired `eval` format: write each prompt on each LM as an arm, "
                '[[arms]] name = "plain@smol", kind = "start", lm = "smollm2", program = {instructions = "..."}; '
                "suite goes in [data] with train = 0 and val = 0"
            )
        return data

    @model_validator(mode="after")
    def _arms_fit(self) -> ExperimentConfig:
        names = [arm.name for arm in self.arms]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"arm name {repeated[0]!r} is used twice")
        if self.baseline is not None and self.baseline not in names:
            raise ValueError(f"baseline {self.baseline!r} is not an arm")
        for index, arm in enumerate(self.arms):
            needs = ARMS[arm.kind].needs
            if needs is not None and self.mode != needs[0]:
                raise ValueError(f"arm {arm.name!r}: kind {arm.kind!r} {needs[1]} (mode = \"{needs[0]}\")")
            arm.check_fits(names[:index], self)
        return self

    @property
    def baseline_arm(self) -> str:
        return self.baseline or self.arms[0].name

    @property
    def learns_from(self) -> tuple[str, ...]:
        return tuple(name for name in ("train", "val") if any(name in ARMS[arm.kind].learns_from for arm in self.arms))


def load_experiment(path: Path) -> ExperimentConfig:
    """Parse and validate an experiment config; relative paths are taken from its folder."""
    config = load_toml(path, ExperimentConfig)
    if not config.data.split_files and config.data.test == 0:
        raise InputError(f"{path}: field 'data.test': an experiment scores its arms on a test split; give test > 0 or a file")
    name = config.name if "name" in config.model_fields_set else path.stem
    return resolve_paths(config.model_copy(update={"name": name, "arms": [arm.resolved(path.parent) for arm in config.arms]}), path)
