"""Validation of the kwargs IFBench suite rows give their verifiers, so a bad row fails at build time."""

from __future__ import annotations

import math


def whole_number(name: str, value: object, minimum: int = 0) -> int:
    """A count kwarg as int, at least ``minimum``; IFBench suite rows store counts as floats such as 5.0."""
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not numeric or not math.isfinite(value) or value != int(value):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)
