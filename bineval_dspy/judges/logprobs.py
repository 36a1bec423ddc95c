"""Reading P(yes) from token logprobs: the probability-mode signal of a yes/no verdict."""

from __future__ import annotations

import math
import re
from typing import Any

# The JSON key of the verdict's answer, then the opening quote of its value. Inside a JSON string (a chain of
# thought) the quotes are escaped, so reasoning that mentions "answer" never matches.
_ANSWER_KEY = re.compile(r'"answer"\s*:\s*"')


def p_yes_from_logprobs(logprobs: Any, key: re.Pattern[str] = _ANSWER_KEY) -> float | None:
    """P(yes)/(P(yes)+P(no)) at the verdict token: the first token of the value of the last ``"answer"`` key (or
    the last match of ``key``: a batch reply's answer to one question).

    Reads the raw top candidates there, so "Yes"/"No" variants add to the mass. None when the generated text
    has no such key, or the token there is not a yes/no word.
    """
    entry = value_token(logprobs, key)
    if entry is None or _word(entry_field(entry, "token") or "") not in ("yes", "no"):
        return None
    return yes_share(entry_field(entry, "top_logprobs") or [])


def value_token(logprobs: Any, key: re.Pattern[str]) -> Any:
    """The logprob entry of the token where the value after the last match of ``key`` starts (a JSON key and the
    opening of its value), or None: where a judge's score or verdict was decided."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else logprobs
    entries = list(content or [])
    starts, text = [], ""
    for entry in entries:
        starts.append(len(text))
        text += entry_field(entry, "token") or ""
    matches = list(key.finditer(text))
    if not matches:
        return None
    value_start = matches[-1].end()
    for entry, start in zip(entries, starts):
        if start + len(entry_field(entry, "token") or "") > value_start:
            return entry
    return None


def yes_share(candidates: Any) -> float | None:
    """P(yes)/(P(yes)+P(no)) over one position's top candidates (token, logprob); None without either."""
    mass = {"yes": 0.0, "no": 0.0}
    for cand in candidates:
        word = _word(entry_field(cand, "token") or "")
        if word in mass:
            mass[word] += math.exp(entry_field(cand, "logprob"))
    total = mass["yes"] + mass["no"]
    return mass["yes"] / total if total > 0 else None


def entry_field(obj: Any, name: str) -> Any:
    """A logprob entry's field: DSPy gives dicts, providers' objects have attributes."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _word(token: str) -> str:
    return token.strip().strip('"').strip().lower()
