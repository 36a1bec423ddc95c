"""``meta-eval --dry-run``: every LM method's calls on every sampled output, with no call."""

from __future__ import annotations

from typing import Any

from bineval_dspy.lm.estimate import RATING_OVERHEAD_TOKENS, Plan, formatted, message_tokens, token_counter


def meta_plan(config: Any, lm_spec: str, api_base: str | None) -> Plan:
    """Every LM method on every sampled output: BinEval each LM question (``samples`` times, with the content-free
    prior under calibration; a generated checklist at ``max_questions``, its writing besides), a holistic or
    UniEval method one call per dimension. Methods with an LM of their own are priced as the run's LM."""
    from bineval_dspy.core.jsonio import load_model
    from bineval_dspy.core.schema import Checklist
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.lm.estimate import completion_limit
    from bineval_dspy.meta.methods import BinEvalMethod, ProbeMethod
    from bineval_dspy.meta.runner import checked_rows

    rows = checked_rows(config)
    count, exact = token_counter(lm_spec)
    dimensions = config.scored_dimensions()
    judge = BinaryJudge()
    predictor = judge.named_predictors()[0][1]
    calls, tokens = 0, 0
    for method in (m for m in config.methods if m.uses_lm and not isinstance(m, ProbeMethod)):  # a probe decodes nothing
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
                    prompt = formatted(predictor, judge.kind.adapter, {"input": row.input, "output": row.output, "question": text})
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
