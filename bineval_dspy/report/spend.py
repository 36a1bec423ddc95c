"""What a run cost, as ``report`` and ``show`` read it: the persisted ``usage`` blocks (``lm.usage.Cost``), typed."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import describe_validation_error
from bineval_dspy.lm.usage import Cost


def spend_of(raw: Any, where: str) -> Cost:
    """The ``usage`` block of a JSON object as a ``Cost`` (none: no cost); a malformed block is one InputError line
    naming ``where`` and the field."""
    block = raw.get("usage") if isinstance(raw, dict) else None
    if block is None:
        return Cost()
    try:
        return Cost.model_validate(block)
    except ValidationError as exc:
        raise InputError(f"{where}: in 'usage': {describe_validation_error(exc)}") from None


def spend_entries(cost: Cost) -> dict[str, float]:
    """The figures a report shows for a cost, in the block's order: every count and the dollars where known; an
    empty cost shows nothing."""
    if cost == Cost():
        return {}
    return {key: float(value) for key, value in cost.model_dump().items() if isinstance(value, int | float) and not isinstance(value, bool)}
