"""``experiment --dry-run``: every arm at its most, from the run config's splits and each arm's settings."""

from __future__ import annotations

import math
from typing import Any

from bineval_dspy.lm.estimate import NOTE_TOKENS, Plan
from bineval_dspy.optimize.plan import estimated, example_costs, optimize_plan


def experiment_plan(config: Any, lm_spec: str, api_base: str | None) -> Plan:
    """Every arm at its most: optimizer arms as ``optimize`` would run, GEPA its metric calls, Best-of-N and STICK
    their samples and rewrites, every arm's test evaluation (an upper bound, tokens estimated)."""
    from bineval_dspy.experiment.config import (
        BestOfArm,
        BinEvalArm,
        FinetuneArm,
        GepaArm,
        OwnLMArm,
        RefineArm,
        SelectionDemosArm,
        arm_settings,
    )
    from bineval_dspy.finetune.settings import FinetuneSettings

    per_call, per_example, limit, (n_train, n_val, n_test), exact = example_costs(config, lm_spec)
    calls, tokens = 0, 0.0
    optimization: dict[str, int] = {}  # each arm's planned optimization calls, for a GEPA arm's calls_like
    for arm in config.arms:
        if isinstance(arm, BinEvalArm | SelectionDemosArm):
            settings = arm_settings(config, arm)
            arm_plan = optimize_plan(config.model_copy(update={"optimizer": settings}), lm_spec, api_base)
            extra = n_train * arm.n * per_example if isinstance(arm, SelectionDemosArm) else 0
            tested = n_test * per_example * (settings.max_iterations + 1 if config.test_every else 2)  # optimize's plan counts its test too
            optimization[arm.name] = arm_plan.calls - tested + extra
            calls, tokens = calls + arm_plan.calls + extra, tokens + arm_plan.prompt_tokens + extra * per_call
            continue
        if isinstance(arm, GepaArm):  # as gepa_arm sets it: its metric calls, one reflection per 2 x minibatch of them
            m = arm.minibatch
            budget = arm.max_metric_calls or max(n_val + 2 * m, round(optimization.get(arm.calls_like or "", 0) * 2 * m / (2 * m + 1)))
            reflections = math.ceil(budget / (2 * m))
            calls, tokens = calls + reflections, tokens + reflections * NOTE_TOKENS
            examples = budget + n_test
        elif isinstance(arm, BestOfArm):
            examples = n_test * arm.n
        elif isinstance(arm, RefineArm):
            examples = n_test * (1 + 2 * arm.iterations)  # each rewrite and its judging
        elif isinstance(arm, FinetuneArm):  # the train split's samples (a train_data's rows not counted), then the test
            tune = FinetuneSettings(**arm.finetune)
            examples = n_train * (tune.samples + tune.greedy_too) + n_test
        else:
            examples = n_test
        calls, tokens = calls + examples * per_example, tokens + examples * per_example * per_call
    what = f"experiment at most: {len(config.arms)} arm(s), {n_test} test example(s), {per_example} call(s) an example (train_data rows: not counted)"
    own = [arm.lm.spec for arm in config.arms if isinstance(arm, OwnLMArm) and arm.lm is not None]
    models = " and ".join(dict.fromkeys([lm_spec, *own]))  # tokens counted with lm's tokenizer: the arms' own LMs estimated
    return Plan(what, calls, round(tokens), limit, exact and not own, models, api_base, estimated=estimated(config) + " and GEPA's reflections")
