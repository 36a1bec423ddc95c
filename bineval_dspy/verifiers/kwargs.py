"""Validation of the kwargs suite rows give the verifiers, shared by every verifier module.

A kwarg a verifier cannot use raises ValueError when the check is built, so ``build_check`` reports that
instruction as ungraded instead of grading it against a guess.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

RELATIONS = ("less than", "at least")


def whole_number(name: str, value: object, minimum: int = 0) -> int:
    """A count as int, at least ``minimum``; IFBench rows store counts as floats such as 5.0, IFEval rows as ints."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value != int(value):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)


def percent(name: str, value: object) -> float:
    """A percentage in [0, 100]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        raise ValueError(f"{name} must be a number between 0 and 100, got {value!r}")
    return float(value)


def comparison(name: str, value: object) -> str:
    """One of IFEval's two comparisons, 'less than' and 'at least'."""
    if value not in RELATIONS:
        raise ValueError(f"{name} must be one of {RELATIONS}, got {value!r}")
    return str(value)


def nonblank_text(name: str, value: object) -> str:
    """A string with some non-space character, returned unchanged: callers strip it where the grader does."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def word_list(name: str, value: object) -> list[str]:
    """A non-empty list of non-blank strings, each stripped (a bare string would otherwise be read as letters)."""
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise ValueError(f"{name} must be a non-empty list of strings, got {value!r}")
    return [nonblank_text(name, word).strip() for word in value]


def single_letter(name: str, value: object) -> str:
    """One alphabetic character."""
    if not isinstance(value, str) or len(value) != 1 or not value.isalpha():
        raise ValueError(f"{name} must be a single letter, got {value!r}")
    return value
