"""What each arm kind costs at most (``experiment --dry-run``) and its smoke-test size (``--tiny``).

Kept apart from the arms themselves: both read only an arm's settings and the run description, never a run, so
``ARMS`` (``experiment.arms``) names them per kind and the plan and the CLI reach them through it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bineval_dspy.experiment.params import (
    Arm,
    BestOfArm,
    FinetuneArm,
    GepaArm,
    OwnOptimizerArm,
    ProbeArm,
    RefineArm,
    SelectionDemosArm,
)
from bineval_dspy.lm.estimate import NOTE_TOKENS
from bineval_dspy.optimize.config import RunConfig
from bineval_dspy.optimize.plan import optimize_plan


# -- what each kind costs at most (``--dry-run``) ------------------------------------------------------------
@dataclass
class PlanBasis:
    """What every arm's estimate starts from: the experiment, its LM, what a call and an example cost, the splits'
    sizes, and the optimization calls of the arms planned before (a GEPA arm's ``calls_like``)."""

    config: RunConfig
    lm_spec: str
    api_base: str | None
    per_call: float  # prompt tokens a call
    per_example: int  # calls an example
    sizes: tuple[int, int, int]  # train, val, test
    optimization: dict[str, int] = field(default_factory=dict)


@dataclass
class ArmEstimate:
    """One arm at its most: its LM calls and prompt tokens, and how many of the calls optimize (not test)."""

    calls: int
    tokens: float
    optimization: int = 0


def examples_estimate(basis: PlanBasis, examples: int) -> ArmEstimate:
    """``examples`` examples run, each its calls."""
    calls = examples * basis.per_example
    return ArmEstimate(calls, calls * basis.per_call)


def fixed_estimate(arm: Arm, basis: PlanBasis) -> ArmEstimate:
    """A fixed program: the test split only."""
    return examples_estimate(basis, basis.sizes[2])


def optimizer_estimate(arm: OwnOptimizerArm, basis: PlanBasis) -> ArmEstimate:
    """As ``optimize`` would run with the arm's settings (a selection arm: its Best-of-N on train too)."""
    config, (n_train, _, n_test) = basis.config, basis.sizes
    settings = arm.optimizer_settings(config)
    plan = optimize_plan(config.model_copy(update={"optimizer": settings}), basis.lm_spec, basis.api_base)
    extra = n_train * arm.n * basis.per_example if isinstance(arm, SelectionDemosArm) else 0
    tested = n_test * basis.per_example * (settings.max_iterations + 1 if config.test_every else 2)  # optimize's plan counts its test too
    return ArmEstimate(plan.calls + extra, plan.prompt_tokens + extra * basis.per_call, optimization=plan.calls - tested + extra)


def gepa_estimate(arm: GepaArm, basis: PlanBasis) -> ArmEstimate:
    """As ``gepa_arm`` sets it: its metric calls, one reflection per 2 x minibatch of them, then the test."""
    m, (_, n_val, n_test) = arm.minibatch, basis.sizes
    budget = arm.max_metric_calls or max(n_val + 2 * m, round(basis.optimization.get(arm.calls_like or "", 0) * 2 * m / (2 * m + 1)))
    reflections = math.ceil(budget / (2 * m))
    examples = examples_estimate(basis, budget + n_test)
    return ArmEstimate(reflections + examples.calls, reflections * NOTE_TOKENS + examples.tokens)


def best_of_estimate(arm: BestOfArm, basis: PlanBasis) -> ArmEstimate:
    return examples_estimate(basis, basis.sizes[2] * arm.n)


def refine_estimate(arm: RefineArm, basis: PlanBasis) -> ArmEstimate:
    return examples_estimate(basis, basis.sizes[2] * (1 + 2 * arm.iterations))  # each rewrite and its judging


def finetune_estimate(arm: FinetuneArm, basis: PlanBasis) -> ArmEstimate:
    """The train split's samples (a ``train_data``'s rows not counted), then the test."""
    from bineval_dspy.finetune.settings import FinetuneSettings

    tune = FinetuneSettings(**arm.finetune)
    return examples_estimate(basis, basis.sizes[0] * (tune.samples + tune.greedy_too) + basis.sizes[2])


# -- each kind at smoke-test size (``--tiny``) -----------------------------------------------------------------
TINY = {"train": 2, "val": 2, "test": 3, "max_iterations": 1, "max_tokens": 24, "n": 2, "metric_calls": 6}
TINY_FINETUNE = {"samples": 2, "max_steps": 1, "batch_size": 2}  # a finetune arm at smoke-test size: two samples, one step


def as_is(arm: Arm) -> Arm:
    return arm


def tiny_samples(arm: BestOfArm | SelectionDemosArm) -> Arm:
    return arm.model_copy(update={"n": TINY["n"]})


def tiny_refine(arm: RefineArm) -> Arm:
    return arm.model_copy(update={"iterations": 1})


def tiny_finetune(arm: FinetuneArm) -> Arm:
    return arm.model_copy(update={"finetune": {**arm.finetune, **TINY_FINETUNE}, "train_data_rows": TINY["train"]})


def tiny_probe(arm: ProbeArm) -> Arm:
    return arm.model_copy(update={"train_data_rows": TINY["train"] * 4, "folds": 2, "strengths": arm.strengths[:1]})  # few rows, two folds, one C


def tiny_gepa(arm: GepaArm) -> Arm:
    return arm.model_copy(update={"calls_like": None, "max_metric_calls": TINY["metric_calls"], "minibatch": 1})
