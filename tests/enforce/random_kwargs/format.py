"""Kwargs an IFBench row could give each enforceable ``format:*`` id, and the pieces their rules need."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

_NONE = (
    "format:emoji",
    "format:line_indent",
    "format:newline",
    "format:no_bullets_bullets",
    "format:no_whitespace",
    "format:output_template",
    "format:parentheses",
    "format:quote_unquote",
    "format:quotes",
    "format:sub-bullets",
    "format:thesis",
    "format:title_case",
)
MAKERS: dict[str, Callable[[random.Random], dict[str, Any]]] = {i: (lambda rng: {}) for i in _NONE}
MAKERS["format:list"] = lambda rng: {"sep": rng.choice(["!?!?", "-", "SEPARATOR", "->", "§"])}
MAKERS["format:options"] = lambda rng: {
    "options": rng.choice(["I know or I don't know", "a), b), c), d)", "yes/no/maybe", "Correct, Incorrect", "Agree/Disagree"])
}
# Title Case needs capitalized words; the options need their own words in pieces; '!' and '-' for the marks.
EXTRA_PIECES: list[str] = [" The", " Cat", "Big", "I", " know", " don", "'t", "yes", "no", "a", ")", "b", "-", " -", "Agree", "Dis"]
