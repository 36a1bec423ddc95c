"""``tune --dry-run``: the study's remaining trials, each at its base settings, with no call."""

from __future__ import annotations

from typing import Any

from bineval_dspy.core.errors import InputError
from bineval_dspy.lm.estimate import NOTE_TOKENS, Plan, token_counter
from bineval_dspy.optimize.plan import optimize_plan


def tune_plan(tuning: Any, lm_spec: str | None, api_base: str | None) -> Plan:
    """The study's remaining trials, each at its base settings: an optimizer trial as ``optimize`` would run the
    config its ``[run]`` names, a checklist trial one writer run per gold task (at most, estimated)."""
    from bineval_dspy.lm.estimate import completion_limit
    from bineval_dspy.lm.specs import DEFAULT_LM
    from bineval_dspy.optimize.config import load_config
    from bineval_dspy.tune.checklist_trials import load_tasks

    config = tuning.config
    run = {k: v for k, v in config.run.items() if k != "kind"}
    trials = config.trials
    if config.run["kind"] == "optimizer":
        base = load_config((tuning.env.base / run["config"]).resolve())
        spec = lm_spec or base.lm
        each = optimize_plan(base, spec, api_base)
        return Plan(f"tune: {trials} optimizer trial(s) at most, each {each.what}", trials * each.calls, trials * each.prompt_tokens,
                    each.completion_limit, each.tokenized, spec, api_base, estimated=each.estimated)
    if config.run["kind"] != "checklist":
        raise InputError(f"{config.source}: field 'run.kind': `dry_run` plans optimizer and checklist trials, not {config.run['kind']!r}")
    spec = lm_spec or run.get("lm", DEFAULT_LM)
    tasks = load_tasks((tuning.env.base / run["tasks"]).resolve())
    count, exact = token_counter(spec)
    per_task = {"bineval": 25, "tick": 1}.get(run.get("method", ""), 1 + 3 + 3 * 5 + 12 * 1)  # qworld: its README bound at defaults
    tokens = trials * sum(per_task * (count(task.task) + NOTE_TOKENS) for task in tasks)
    return Plan(f"tune: {trials} checklist trial(s) at most over {len(tasks)} task(s)", trials * len(tasks) * per_task, tokens,
                completion_limit(), exact, spec, api_base, estimated="the writers' prompts")
