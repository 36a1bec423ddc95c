"""The trial seam: a ``TrialRunner`` turns one trial's parameters into objective values; kinds are registered by name.

The study driver owns Optuna (sampling, counting, storage); a runner knows only its parameters, the folder its
work goes to and a ``report`` function for per-step values, so a kind can be tested without a study.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ValidationError

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import Fingerprint
from bineval_dspy.core.settings import fingerprint_of
from bineval_dspy.lm.prices import check_priced
from bineval_dspy.lm.runtime import LMOptions
from bineval_dspy.lm.usage import Cost
from bineval_dspy.tune.config import Param


@dataclass(frozen=True)
class Objective:
    """One value a runner returns; ``steps``: it is also reported per step, so a pruner can judge a running trial."""

    description: str
    steps: bool = False


def never_prune(step: int, value: float) -> bool:
    """The ``report`` of a trial nobody prunes (no pruner, or a multi-objective study, which Optuna cannot prune)."""
    return False


@dataclass(frozen=True)
class TrialContext:
    """What one trial gets besides its parameters.

    ``run_dir`` is named by the parameters' digest, so a repeated parameter set finds the earlier run there (the
    driver holds a lock on it while the runner works, so two workers never write one run at once).
    ``report(step, value)`` records the value of the objective that has ``steps`` and returns True when the
    pruner says the trial is hopeless; the runner then stops cleanly and raises ``optuna.TrialPruned``.
    ``charge(cost)`` tells the driver what the runner's LM work cost (the runner measures it: an LM it configures
    during the trial would not be seen inside a measurement the driver opened around it).
    """

    run_dir: Path
    number: int = 0
    report: Callable[[int, float], bool] = field(default=never_prune)
    charge: Callable[[Cost], None] = field(default=lambda cost: None)


@dataclass(frozen=True)
class TrialEnv:
    """What every trial of a study shares: the config's folder and name, the study's folder, the command line's LM."""

    base: Path
    folder: Path
    source: str
    lm_spec: str | None = None  # --lm: replaces the LM a run config names
    lm_options: LMOptions = LMOptions()  # --api-base, --temperature, ... (its spec is replaced)
    cache_dir: Path | None = None  # --cache-dir; None: FOLDER/lm-cache
    priced: bool = False  # --max-cost: a runner's ``check`` refuses an LM without a known price

    @property
    def lm_cache(self) -> Path:
        return self.cache_dir or self.folder / "lm-cache"

    def check_priced(self, spec: str, *others: str | None) -> None:
        """Under ``--max-cost``, the run's LM ``spec`` (behind --api-base when given: then it has no price) and any
        ``others`` a runner makes as named must have a price."""
        if self.priced:
            api_base = self.lm_options.api_base
            check_priced([f"{spec}@{api_base}" if api_base else spec, *(other for other in others if other)])


@runtime_checkable
class TrialRunner(Protocol):
    """One kind of trial: parameters in, a value per objective out.

    ``objectives`` lists the values it can return (a study picks some); ``check`` refuses, in one line, a search
    space it cannot take, before any trial runs; ``fingerprint`` is what decides its results besides the
    parameters (file digests, LM), so a study is resumed only by the same runner. ``__call__`` returns every
    objective it lists; it raises ``optuna.TrialPruned`` when ``context.report`` said so. It tells
    ``context.charge`` what its LM calls cost; with ``env.priced``, ``check`` refuses LMs whose price is unknown.
    """

    objectives: Mapping[str, Objective]

    def check(self, space: Mapping[str, Param]) -> None: ...

    def fingerprint(self) -> Fingerprint: ...

    def __call__(self, params: dict[str, Any], context: TrialContext) -> dict[str, float]: ...


RunnerFactory = Callable[[dict[str, Any], TrialEnv], TrialRunner]
"""Builds a runner from the config's ``[run]`` table (``kind`` removed); raises InputError for a bad table."""


def trial_fingerprint(facts: BaseModel) -> Fingerprint:
    """A runner's ``fingerprint``: each field of ``facts`` (what decides its trials) under ``run.``, as the ``[run]``
    table names it."""
    return {f"run.{name}": value for name, value in fingerprint_of(facts).items()}


def run_settings(model: type[BaseModel], table: dict[str, Any], source: str) -> Any:
    """A ``[run]`` table as its kind's pydantic model; a bad field is one line naming ``run.FIELD``."""
    try:
        return model.model_validate(table)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(["run", *(str(part) for part in error["loc"])])
        raise InputError(f"{source}: field '{where}': {error['msg']}") from None
