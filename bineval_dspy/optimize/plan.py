"""``optimize --dry-run``: the most LM work a run description can ask for, from its splits and settings, with no
call. The loop decides at run time how much it does (a failing candidate rolls back, a run stops early, the cache
answers repeats), so the plan counts every iteration in full: an upper bound, and its tokens are estimated where
they depend on outputs not yet written."""

from __future__ import annotations

from typing import Any

from bineval_dspy.lm.estimate import JUDGE_OVERHEAD_TOKENS, NOTE_TOKENS, Plan, formatted, message_tokens, token_counter


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
    return Plan(what, calls, tokens, limit, exact, lm_spec, api_base, estimated=estimated(config))


def estimated(config: Any) -> str:
    """The parts of an optimizer run's prompts that depend on text not yet written: the judge's (it sees the
    response) and the note-taker's (it sees the failures)."""
    return "note-taking and judge prompts" if config.mode == "self" and config.program.llm_questions[1] else "note-taking prompts"


def _self_costs(config: Any, student: Any, count: Any, examples: list[Any]) -> tuple[float, int, int]:
    """Mean prompt tokens a call, calls an example (its response and each LM question of its checklist) and the
    completion limit, for a generator."""
    prompts = [message_tokens(count, formatted(student.generate, student.adapter, {"prompt": ex.prompt})) for ex in examples] or [0]
    questions = config.program.llm_questions[1]
    mean_prompt = sum(prompts) / len(prompts)
    judge_prompt = mean_prompt + config.program.max_tokens + JUDGE_OVERHEAD_TOKENS
    calls = 1 + questions + (1 if questions else 0)  # the response, its LM questions, the TICK writer
    return (mean_prompt + questions * judge_prompt) / calls, calls, config.program.max_tokens


def _cross_costs(config: Any, student: Any, count: Any, examples: list[Any]) -> tuple[float, int, int]:
    """The same for a judge: one verdict an example (``samples`` of them), and the reference's when it is an LM."""
    from bineval_dspy.lm.estimate import completion_limit

    predictor, kind = student.named_predictors()[0][1], student.kind
    prompts = [
        message_tokens(count, formatted(predictor, kind.adapter, {"input": ex.input, "output": ex.output, "question": ex.question}))
        for ex in examples
    ] or [0]
    calls = kind.samples * (2 if kind.calibration == "content_free" else 1) + (1 if config.reference.lm else 0)
    return sum(prompts) / len(prompts), calls, completion_limit()


def example_costs(config: Any, lm_spec: str) -> tuple[float, int, int, tuple[int, int, int], bool]:
    """Prompt tokens a call, calls an example, the completion limit, the train/val/test sizes of a run config, and
    whether the LM's own tokenizer counted."""
    from bineval_dspy.optimize.config import build

    student, _, (train, val, test) = build(config)
    count, exact = token_counter(lm_spec)
    costs = _self_costs if config.mode == "self" else _cross_costs
    per_call, calls, limit = costs(config, student, count, [*train, *val, *test])
    return per_call, calls, limit, (len(train), len(val), len(test)), exact
