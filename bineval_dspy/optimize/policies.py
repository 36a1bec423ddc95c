"""The optimizer's decisions as small, replaceable objects: whether to keep a candidate, and when to stop.

``AcceptancePolicy.decide`` sees the held-out gain (with its paired bootstrap interval over held-out items) and
the prompt length of a candidate; ``StoppingRule.reason``
sees the audit after each decision. Pass your own to ``BinEvalOptimizer(acceptance=..., stopping=[...])``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from bineval_dspy.optimize.audit import Audit, Decision
from bineval_dspy.optimize.settings import OptimizerSettings
from bineval_dspy.stats.bootstrap import Interval


@runtime_checkable
class AcceptancePolicy(Protocol):
    """Keeps or rolls back one candidate prompt."""

    def decide(self, *, gain: Interval, prompt_chars: int, start_chars: int) -> Decision:
        """``gain``: held-out score of the candidate minus the best so far, with its paired interval."""
        ...


@runtime_checkable
class StoppingRule(Protocol):
    """Ends the run after a decision; the first rule that gives a reason wins."""

    def reason(self, audit: Audit) -> str | None: ...


@dataclass(frozen=True)
class BloatGuard:
    """Keep a candidate only if the held-out score rises by ``min_delta`` (and, with ``significant``, the paired
    gain's lower confidence bound is above zero: a gain noise cannot explain) and the prompt stays within budget:
    ``min(max_chars, max(start * max_growth, start + min_allowance))`` characters."""

    min_delta: float = 0.01
    max_chars: int = 4000
    max_growth: float = 4.0
    min_allowance: int = 400
    significant: bool = False

    def budget(self, start_chars: int) -> int:
        return int(min(self.max_chars, max(start_chars * self.max_growth, start_chars + self.min_allowance)))

    def decide(self, *, gain: Interval, prompt_chars: int, start_chars: int) -> Decision:
        budget = self.budget(start_chars)
        value = gain.estimate or 0.0
        problems = []
        if prompt_chars > budget:
            problems.append(f"prompt length {prompt_chars} over budget {budget}")
        if value < self.min_delta:
            problems.append(f"held-out gain {value:+.3f} below min_delta {self.min_delta}")
        if self.significant and not (gain.low is not None and gain.low > 0):
            problems.append(f"held-out gain {gain.text(signed=True)} not significant (lower bound not above 0)")
        if problems:
            return Decision(accepted=False, reason="; ".join(problems))
        return Decision(accepted=True, reason=f"held-out gain {gain.text(signed=True)} within budget ({prompt_chars}/{budget} chars)")


@dataclass(frozen=True)
class AcceptAll:
    """No guard: every candidate is kept (the BinEval paper's loop, for ablations)."""

    def decide(self, *, gain: Interval, prompt_chars: int, start_chars: int) -> Decision:
        return Decision(accepted=True, reason=f"no bloat guard: kept (held-out {gain.text(signed=True)}, {prompt_chars} chars)")


@dataclass(frozen=True)
class TargetScore:
    """Stop once the best held-out score reaches ``target``."""

    target: float

    def reason(self, audit: Audit) -> str | None:
        return f"target score {self.target} reached" if audit.best.val_score >= self.target else None


@dataclass(frozen=True)
class DimensionGapsBelow:
    """Cross-model: stop when every per-dimension gap |S_d(target) - S_d(reference)| is below ``epsilon``."""

    epsilon: float

    def reason(self, audit: Audit) -> str | None:
        gaps = audit.best.val.dimension_gaps
        if audit.mode == "cross" and gaps and max(gaps.values()) < self.epsilon:
            return f"every dimension gap below epsilon {self.epsilon}"
        return None


@dataclass(frozen=True)
class Patience:
    """Stop after ``rounds`` rolled-back candidates in a row."""

    rounds: int

    def reason(self, audit: Audit) -> str | None:
        return f"patience {self.rounds} exhausted" if audit.stale >= self.rounds else None


@dataclass(frozen=True)
class MaxIterations:
    """Stop after ``n`` iterations."""

    n: int

    def reason(self, audit: Audit) -> str | None:
        done = audit.iterations[-1].iteration if audit.iterations else 0
        return f"max iterations {self.n}" if done >= self.n else None


def default_acceptance(settings: OptimizerSettings) -> AcceptancePolicy:
    """The bloat guard from the settings, or accept-all when ``bloat_guard`` is off."""
    if not settings.bloat_guard:
        return AcceptAll()
    significant = settings.accept == "significant"
    return BloatGuard(settings.min_delta, settings.max_chars, settings.max_growth, settings.min_allowance, significant)


def default_stopping(settings: OptimizerSettings) -> list[StoppingRule]:
    """Target score, cross-model epsilon, patience and max iterations, checked in that order."""
    rules: list[StoppingRule] = []
    if settings.target_score is not None:
        rules.append(TargetScore(settings.target_score))
    rules += [DimensionGapsBelow(settings.epsilon), Patience(settings.patience), MaxIterations(settings.max_iterations)]
    return rules
