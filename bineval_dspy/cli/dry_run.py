"""``optimize --dry-run``: the most LM work a run description can ask for, from its splits and settings, with no
call. Its loop decides at run time how much it does (a failing candidate rolls back, a run stops early, the cache
answers repeats), so the plan counts every iteration in full: an upper bound, and its tokens are estimated where
they depend on outputs not yet written."""

from __future__ import annotations

import math
from typing import Any

from bineval_dspy.core.errors import InputError
from bineval_dspy.lm.estimate import Plan, formatted, message_tokens, token_counter

NOTE_TOKENS = 600  # a note-taker or prompt-updater call: the instructions, one failure and the lesson so far
JUDGE_OVERHEAD_TOKENS = 450  # the judge's instructions and verdict schema (about 450 tokens with smollm2's tokenizer)
RATING_OVERHEAD_TOKENS = 300  # a holistic or UniEval prompt's instructions and definition


def optimize_plan(config: Any, lm_spec: str, api_base: str | None) -> Plan:
    """Every evaluation the optimizer may run (the start on val, each iteration's train and candidate val, the
    test at start and end, or after every step with ``test_every``), plus note-taking and prompt updates."""
    from bineval_dspy.optimize.config import build

    student, _, (train, val, test) = build(config)
    count, exact = token_counter(lm_spec)
    settings = config.optimizer
    if config.mode == "self":
        per_call, calls_per_example, limit = _self_costs(config, student, count, [*train, *val, *test])
    else:
        per_call, calls_per_example, limit = _cross_costs(config, student, count, [*train, *val, *test])
    steps = settings.max_iterations
    evaluated = len(val) + steps * (len(train) + len(val)) + len(test) * (steps + 1 if config.test_every else 2)
    notes = steps * (settings.max_failures + settings.lessons_per_iteration)
    calls = evaluated * calls_per_example + notes
    tokens = round(evaluated * calls_per_example * per_call) + notes * NOTE_TOKENS
    what = (
        f"optimize ({config.mode}) at most: {steps} iteration(s) over {len(train)} train, {len(val)} val and "
        f"{len(test)} test example(s), {calls_per_example} call(s) an example"
    )
    return Plan(what, calls, tokens, limit, exact, lm_spec, api_base, estimated=_estimated(config))


def _estimated(config: Any) -> str:
    """The parts of an optimizer run's prompts that depend on text not yet written: the judge's (it sees the
    response) and the note-taker's (it sees the failures)."""
    return "note-taking and judge prompts" if config.mode == "self" and config.program.llm_questions[1] else "note-taking prompts"


def _self_costs(config: Any, student: Any, count: Any, examples: list) -> tuple[float, int, int]:
    """Mean prompt tokens a call, calls an example (its response and each LM question of its checklist) and the
    completion limit, for a generator."""
    prompts = [message_tokens(count, formatted(student.generate, student.adapter, {"prompt": ex.prompt})) for ex in examples] or [0]
    questions = config.program.llm_questions[1]
    mean_prompt = sum(prompts) / len(prompts)
    judge_prompt = mean_prompt + config.program.max_tokens + JUDGE_OVERHEAD_TOKENS
    calls = 1 + questions + (1 if questions else 0)  # the response, its LM questions, the TICK writer
    return (mean_prompt + questions * judge_prompt) / calls, calls, config.program.max_tokens


def _cross_costs(config: Any, student: Any, count: Any, examples: list) -> tuple[float, int, int]:
    """The same for a judge: one verdict an example (``samples`` of them), and the reference's when it is an LM."""
    from bineval_dspy.lm.estimate import completion_limit

    predictor = student.named_predictors()[0][1]
    prompts = [
        message_tokens(count, formatted(predictor, student.adapter, {"input": ex.input, "output": ex.output, "question": ex.question}))
        for ex in examples
    ] or [0]
    calls = student.samples * (2 if student.calibration == "content_free" else 1) + (1 if config.reference.lm else 0)
    return sum(prompts) / len(prompts), calls, completion_limit()


def _per_example(config: Any, lm_spec: str) -> tuple[float, int, int, tuple[int, int, int], bool]:
    """Prompt tokens a call, calls an example, the completion limit, the train/val/test sizes of a run config, and
    whether the LM's own tokenizer counted."""
    from bineval_dspy.optimize.config import build

    student, _, (train, val, test) = build(config)
    count, exact = token_counter(lm_spec)
    costs = _self_costs if config.mode == "self" else _cross_costs
    per_call, calls, limit = costs(config, student, count, [*train, *val, *test])
    return per_call, calls, limit, (len(train), len(val), len(test)), exact


def experiment_plan(config: Any, lm_spec: str, api_base: str | None) -> Plan:
    """Every arm at its most: optimizer arms as ``optimize`` would run, GEPA its metric calls, Best-of-N and STICK
    their samples and rewrites, every arm's test evaluation (an upper bound, tokens estimated)."""
    from bineval_dspy.experiment.config import (
        BestOfArm,
        BinEvalArm,
        FinetuneArm,
        GepaArm,
        RefineArm,
        SelectionDemosArm,
        arm_settings,
    )
    from bineval_dspy.finetune.settings import FinetuneSettings

    per_call, per_example, limit, (n_train, n_val, n_test), exact = _per_example(config, lm_spec)
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
    return Plan(what, calls, round(tokens), limit, exact, lm_spec, api_base, estimated=_estimated(config) + " and GEPA's reflections")


def meta_plan(config: Any, lm_spec: str, api_base: str | None) -> Plan:
    """Every LM method on every sampled output: BinEval each LM question (``samples`` times, with the content-free
    prior under calibration; a generated checklist at ``max_questions``, its writing besides), a holistic or
    UniEval method one call per dimension. Methods with an LM of their own are priced as the run's LM."""
    from bineval_dspy.core.jsonio import load_model
    from bineval_dspy.core.schema import Checklist
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.lm.estimate import completion_limit
    from bineval_dspy.meta.methods import BinEvalMethod
    from bineval_dspy.meta.runner import _checked_rows

    rows = _checked_rows(config)
    count, exact = token_counter(lm_spec)
    dimensions = config.scored_dimensions()
    judge = BinaryJudge()
    predictor = judge.named_predictors()[0][1]
    calls, tokens = 0, 0
    for method in (m for m in config.methods if m.uses_lm):
        for row in rows:
            if isinstance(method, BinEvalMethod):
                if isinstance(method.checklist, str) and method.checklist == "dataset":
                    questions = [q.text for q in row.questions]
                elif isinstance(method.checklist, str):  # "generate" or "per_input": the LM writes at most max_questions
                    questions = ["Does the output meet this requirement of the task?"] * method.max_questions
                else:
                    questions = [q.text for q in load_model(method.checklist, Checklist).questions if q.verifier is None]
                times = method.samples * (2 if method.calibration == "content_free" else 1)
                for text in questions:
                    prompt = formatted(predictor, judge.adapter, {"input": row.input, "output": row.output, "question": text})
                    calls, tokens = calls + times, tokens + times * message_tokens(count, prompt)
            else:
                each = count(row.input) + count(row.output) + RATING_OVERHEAD_TOKENS
                calls, tokens = calls + len(dimensions), tokens + len(dimensions) * each
        if isinstance(method, BinEvalMethod) and method.checklist == "generate":
            calls += 1 + method.max_questions  # the writer: requirements, then questions for each
    what = f"meta-eval: {sum(m.uses_lm for m in config.methods)} LM method(s) on {len(rows)} output(s) (a resume skips finished scores)"
    generated = any(isinstance(m, BinEvalMethod) and isinstance(m.checklist, str) and m.checklist in ("generate", "per_input") for m in config.methods if m.uses_lm)
    rated = any(not isinstance(m, BinEvalMethod) for m in config.methods if m.uses_lm)
    estimated = " and ".join(part for part, present in (("written checklists' questions", generated), ("rating prompts", rated)) if present)
    return Plan(what, calls, tokens, completion_limit(), exact, lm_spec, api_base, estimated=estimated)


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
        raise InputError(f"{config.source}: field 'run.kind': --dry-run plans optimizer and checklist trials, not {config.run['kind']!r}")
    spec = lm_spec or run.get("lm", DEFAULT_LM)
    tasks = load_tasks((tuning.env.base / run["tasks"]).resolve())
    count, exact = token_counter(spec)
    per_task = {"bineval": 25, "tick": 1}.get(run.get("method", ""), 1 + 3 + 3 * 5 + 12 * 1)  # qworld: its README bound at defaults
    tokens = trials * sum(per_task * (count(task.task) + NOTE_TOKENS) for task in tasks)
    return Plan(f"tune: {trials} checklist trial(s) at most over {len(tasks)} task(s)", trials * len(tasks) * per_task, tokens,
                completion_limit(), exact, spec, api_base, estimated="the writers' prompts")
