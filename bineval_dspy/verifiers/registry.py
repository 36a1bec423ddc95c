"""Instruction id -> code verifier, built from one suite row's kwargs.

A verifier factory takes the row's kwargs (None values dropped) and returns a
``check(response) -> bool``. Factories that declare a ``prompt`` parameter also
receive the row's prompt. Strict and loose modes follow IFEval's definitions.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, Literal

Check = Callable[[str], bool]
Factory = Callable[..., Check]
Mode = Literal["strict", "loose"]

_FACTORIES: dict[str, Factory] = {}


class VerifierError(ValueError):
    """A suite row names an unknown instruction id or gives kwargs its verifier cannot take."""


def register(*instruction_ids: str) -> Callable[[Factory], Factory]:
    """Register ``factory`` as the verifier builder for each of ``instruction_ids``."""

    def decorate(factory: Factory) -> Factory:
        for instruction_id in instruction_ids:
            if instruction_id in _FACTORIES:
                raise RuntimeError(f"verifier {instruction_id!r} registered twice")
            _FACTORIES[instruction_id] = factory
        return factory

    return decorate


def known_instruction_ids() -> list[str]:
    """All instruction ids that have a code verifier."""
    return sorted(_FACTORIES)


def build_check(instruction_id: str, kwargs: Mapping[str, Any] | None, prompt: str = "") -> Check:
    """Build the check for one instruction of one suite row."""
    factory = _FACTORIES.get(instruction_id)
    if factory is None:
        raise VerifierError(f"unknown instruction id {instruction_id!r}")
    args = {k: v for k, v in (kwargs or {}).items() if v is not None}
    params = inspect.signature(factory).parameters
    if "prompt" in params:
        args.setdefault("prompt", prompt)
    accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unexpected = sorted(set(args) - set(params)) if not accepts_any else []
    if unexpected:
        raise VerifierError(f"{instruction_id}: unexpected kwargs {', '.join(unexpected)}")
    try:
        return factory(**args)
    except (TypeError, ValueError) as exc:
        raise VerifierError(f"{instruction_id}: bad kwargs ({exc})") from None


def loose_variants(response: str) -> list[str]:
    """IFEval's loose mode: the response with first/last/both lines cut, each with and without '*'."""
    lines = response.split("\n")
    cut = [
        response,
        "\n".join(lines[1:]).strip(),
        "\n".join(lines[:-1]).strip(),
        "\n".join(lines[1:-1]).strip(),
    ]
    return cut + [text.replace("*", "") for text in cut]


def follows(check: Check, response: str, mode: Mode = "strict") -> bool:
    """Whether ``response`` passes ``check``; an empty response never passes."""
    candidates = [response] if mode == "strict" else loose_variants(response)
    return any(text.strip() and check(text) for text in candidates)
