"""Reading P(yes) from token logprobs: the probability-mode signal of a yes/no verdict."""

from __future__ import annotations

import math
import re
from typing import Any

# The JSON key of the verdict's answer, then the opening quote of its value. Inside a JSON string (a chain of
# thought) the quotes are escaped, so reasoning that mentions "answer" never matches.
_ANSWER_KEY = re.compile(r'"answer"\s*:\s*"')


def p_yes_from_logprobs(logprobs: Any) -> float | None:
    """P(yes)/(P(yes)+P(no)) at the verdict token: the first token of the value of the last ``"answer"`` key.

    Reads the raw top candidates there, so "Yes"/"No" variants add to the mass. None when the generated text
    has no such key, or the token there is not a yes/no word.
    """
    content = logprobs.get("content") if isinstance(logprobs, dict) else logprobs
    entries = list(content or [])
    starts, text = [], ""
    for entry in entries:
        starts.append(len(text))
        text += _field(entry, "token") or ""
    matches = list(_ANSWER_KEY.finditer(text))
    if not matches:
        return None
    value_start = matches[-1].end()
    for entry, start in zip(entries, starts):
        token = _field(entry, "token") or ""
        if start + len(token) > value_start:
            return yes_share(_field(entry, "top_logprobs") or []) if _word(token) in ("yes", "no") else None
    return None


def yes_share(candidates: Any) -> float | None:
    """P(yes)/(P(yes)+P(no)) over one position's top candidates (token, logprob); None without either."""
    mass = {"yes": 0.0, "no": 0.0}
    for cand in candidates:
        word = _word(_field(cand, "token") or "")
        if word in mass:
            mass[word] += math.exp(_field(cand, "logprob"))
    total = mass["yes"] + mass["no"]
    return mass["yes"] / total if total > 0 else None


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _word(token: str) -> str:
    return token.strip().strip('"').strip().lower()
