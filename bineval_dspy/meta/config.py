"""`bineval meta-eval CONFIG.toml`: the run description (dataset, dimensions, sample, bootstrap, methods, LM).

Relative paths (data files, checklist files, ``run_dir``, ``verifiers``) are taken from the config file's folder.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bineval_dspy.core.jsonio import load_toml
from bineval_dspy.lm.specs import ServedLM
from bineval_dspy.meta.datasets import DatasetConfig
from bineval_dspy.meta.methods import BinEvalMethod, MethodConfig
from bineval_dspy.runs.spec import RunSpec
from bineval_dspy.verifiers.user import load_config_verifiers


class BootstrapConfig(BaseModel):
    """Documents resampled with replacement ``resamples`` times (0: no intervals); percentile interval."""

    model_config = ConfigDict(extra="forbid")

    resamples: int = Field(default=1000, ge=0)
    confidence: float = Field(default=0.95, gt=0, lt=1)


class MetaEvalConfig(RunSpec, ServedLM):
    """One meta-evaluation: every method scores every sampled output; each is a row of the results table."""

    run_dir: Path
    dataset: DatasetConfig
    dimensions: list[str] = Field(default_factory=list, description="empty: every dimension the dataset rates")
    limit: int | None = Field(default=None, ge=1, description="documents drawn at random (seeded), all their outputs")
    seed: int = 0
    bootstrap: BootstrapConfig = BootstrapConfig()
    methods: list[MethodConfig] = Field(min_length=1)
    verifiers: list[Path] = Field(default_factory=list, description="Python files of your own verifiers (@bineval_dspy.verifier), from this file's folder")

    @field_validator("dimensions")
    @classmethod
    def _distinct_dimensions(cls, value: list[str]) -> list[str]:
        repeated = sorted({d for d in value if value.count(d) > 1})
        if repeated:
            raise ValueError(f"{repeated[0]!r} is listed twice")
        return value

    @field_validator("methods")
    @classmethod
    def _distinct_names(cls, value: list[MethodConfig]) -> list[MethodConfig]:
        names = [m.name for m in value]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"two methods are named {repeated[0]!r}; names tell the rows of the table apart")
        return value

    def scored_dimensions(self) -> list[str]:
        """The configured dimensions, or every dimension the dataset rates."""
        return self.dimensions or list(self.dataset.dimensions)

    @property
    def uses_lm(self) -> bool:
        return any(m.uses_lm for m in self.methods)


def load_config(path: Path) -> MetaEvalConfig:
    """Parse and validate a meta-evaluation config; relative paths are taken from the config's folder."""
    config = load_toml(path, MetaEvalConfig)
    base = path.parent
    verifiers = load_config_verifiers(config.verifiers, path)  # before a checklist names their ids
    resolved = {name: (base / value).resolve() for name, value in config.dataset.paths().items()}
    methods = [
        m.model_copy(update={"checklist": (base / m.checklist).resolve()})
        if isinstance(m, BinEvalMethod) and isinstance(m.checklist, Path)
        else m
        for m in config.methods
    ]
    methods = [m.model_copy(update={"probe": (base / m.probe).resolve()}) if isinstance(m, BinEvalMethod) and m.probe is not None else m for m in methods]
    return config.model_copy(
        update={
            "run_dir": (base / config.run_dir).resolve(),
            "dataset": config.dataset.model_copy(update=resolved),
            "methods": methods,
            "verifiers": verifiers,
        }
    )
