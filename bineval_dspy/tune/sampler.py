"""A sampler seeded per trial, so workers that share a study never share a random stream.

Every worker builds its sampler from the same config seed. A plain ``TPESampler(seed=0)`` in two processes draws
the same numbers, so both workers would propose the same parameters for their first trials. Here each trial
gets a fresh TPE sampler seeded by (study seed, trial number): the storage hands out each trial number once, so no
two trials share a stream, and what trial N proposes depends on the seed and the trials before it, not on which
worker drew it. TPE keeps no state between trials besides its random state (it reads the history from the
storage), and its ``constant_liar`` counts other workers' running trials as bad, so workers also spread out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler, TPESampler
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from bineval_dspy.core.fingerprint import digest


def trial_seed(seed: int, number: int) -> int:
    """The random seed of trial ``number`` of a study seeded with ``seed``."""
    return int(digest(f"{seed}:{number}"), 16) % 2**32


class TrialSeededSampler(BaseSampler):
    """Delegates each trial to ``make(trial_seed(seed, trial.number))`` (TPE by default)."""

    def __init__(self, seed: int, make: Callable[[int], BaseSampler] | None = None) -> None:
        self.seed = seed
        self.make = make or (lambda s: TPESampler(seed=s))
        self._number: int | None = None
        self._sampler: BaseSampler | None = None

    def _for(self, trial: FrozenTrial) -> BaseSampler:
        if self._sampler is None or self._number != trial.number:
            self._number, self._sampler = trial.number, self.make(trial_seed(self.seed, trial.number))
        return self._sampler

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._for(trial).before_trial(study, trial)

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self._for(trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return self._for(trial).sample_relative(study, trial, search_space)

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution) -> Any:
        return self._for(trial).sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None) -> None:
        self._for(trial).after_trial(study, trial, state, values)
