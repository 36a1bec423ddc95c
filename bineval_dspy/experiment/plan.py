"""``experiment --dry-run``: every arm at its most, from the run config's splits and each arm's settings."""

from __future__ import annotations

from typing import Any

from bineval_dspy.lm.estimate import Plan
from bineval_dspy.optimize.plan import estimated, example_costs


def experiment_plan(config: Any, lm_spec: str, api_base: str | None) -> Plan:
    """Every arm at its most, as its kind estimates it (``ArmKind.plan``): optimizer arms as ``optimize`` would run,
    GEPA its metric calls, Best-of-N and STICK their samples and rewrites, every arm's test evaluation (an upper
    bound, tokens estimated)."""
    from bineval_dspy.experiment.arms import ARMS
    from bineval_dspy.experiment.params import OwnLMArm
    from bineval_dspy.experiment.sizes import PlanBasis

    per_call, per_example, limit, sizes, exact = example_costs(config, lm_spec)
    basis = PlanBasis(config, lm_spec, api_base, per_call, per_example, sizes)
    calls, tokens = 0, 0.0
    for arm in config.arms:
        estimate = ARMS[arm.kind].plan(arm, basis)
        basis.optimization[arm.name] = estimate.optimization
        calls, tokens = calls + estimate.calls, tokens + estimate.tokens
    what = f"experiment at most: {len(config.arms)} arm(s), {sizes[2]} test example(s), {per_example} call(s) an example (train_data rows: not counted)"
    own = [arm.lm.spec for arm in config.arms if isinstance(arm, OwnLMArm) and arm.lm is not None]
    models = " and ".join(dict.fromkeys([lm_spec, *own]))  # tokens counted with lm's tokenizer: the arms' own LMs estimated
    return Plan(what, calls, round(tokens), limit, exact and not own, models, api_base, estimated=estimated(config) + " and GEPA's reflections")
