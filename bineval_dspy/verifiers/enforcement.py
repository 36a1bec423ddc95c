"""A prompt's constraints compiled into one decoding spec, through the enforcements registered beside the
verifiers: the one place that decides, per constraint, enforced, unenforceable, conflicting or invalid."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from bineval_dspy.enforce.plan import Decision, Plan, Source
from bineval_dspy.enforce.steering import Conflict, Steering, merge
from bineval_dspy.verifiers.registry import VERIFIERS, VerifierError, _arguments, build_check

Refuse = Callable[[Steering], str]  # why an engine cannot execute a spec ('' when it can): ``Engine.unsteerable``


def compile_plan(
    constraints: Iterable[tuple[str, Mapping[str, Any] | None]], prompt: str, source: Source, refuse: Refuse | None = None
) -> Plan:
    """``constraints`` (instruction id, kwargs) in order: each merged into the spec when its verifier declares an
    enforcement, its kwargs are valid, it agrees with those before it and the engine that will decode (``refuse``,
    none: the embedded one, which executes every spec) can execute the result; otherwise named with the reason."""
    steering = Steering()
    decisions: list[Decision] = []
    for instruction_id, raw in constraints:
        kwargs = {k: v for k, v in (raw or {}).items() if v is not None}
        decided = Decision(instruction_id=instruction_id, kwargs=kwargs, status="unenforceable")
        registered = VERIFIERS.get(instruction_id)
        if registered is None:
            decisions.append(decided.model_copy(update={"status": "invalid", "reason": "no verifier has this id"}))
            continue
        if registered.enforce is None:
            reason = registered.unenforceable or "no enforcement is declared for this verifier"
            decisions.append(decided.model_copy(update={"reason": reason}))
            continue
        try:
            build_check(instruction_id, kwargs, prompt)
            _, args = _arguments(instruction_id, kwargs, prompt)
            part = registered.enforce.steering(**args)  # the same kwargs as the factory's (checked at registration)
        except (VerifierError, TypeError, ValueError) as exc:
            decisions.append(decided.model_copy(update={"status": "invalid", "reason": str(exc)}))
            continue
        try:
            merged = merge(steering, part)
        except Conflict as exc:
            earlier = ", ".join(d.instruction_id for d in decisions if d.status == "enforced") or "the others"
            decisions.append(decided.model_copy(update={"status": "conflict", "reason": f"with {earlier}: {exc}"}))
            continue
        refused = refuse(merged) if refuse is not None else ""
        if refused:  # left to the model, and reported so: the LM cannot execute it (with those before it)
            decisions.append(decided.model_copy(update={"reason": refused}))
            continue
        steering = merged
        decisions.append(decided.model_copy(update={"status": "enforced", "how": registered.enforce.how}))
    return Plan(source=source, decisions=decisions, steering=steering)


def enforceable_ids() -> dict[str, str]:
    """Instruction id -> how decoding enforces it, for every verifier that declares one."""
    return {i: r.enforce.how for i, r in sorted(VERIFIERS.items()) if r.enforce is not None}
