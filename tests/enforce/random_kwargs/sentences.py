"""Kwargs an IFBench row could give each enforceable ``sentence:*``, ``repeat:*`` and ``custom:*`` id, and the pieces
their rules need: a word for every first letter (lower and upper case, for the case masks), digits, a tab."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

_REQUESTS = [
    "Use Python code: construct a network with 8 input neurons.",
    "Write a poem about the sea, please.",
    "how to find what value in a quadratic function lands on a point.",
]


def _span(rng: random.Random) -> dict[str, Any]:
    request = rng.choice(_REQUESTS)
    start = rng.randint(0, 20)
    return {"prompt_to_repeat": request, "n_start": start, "n_end": start + rng.randint(3, 25)}


MAKERS: dict[str, Callable[[random.Random], dict[str, Any]]] = {
    "sentence:alliteration_increment": lambda rng: {},
    "sentence:increment": lambda rng: {"small_n": float(rng.randint(0, 5))},
    "sentence:keyword": lambda rng: {"word": rng.choice(["fleetness", "cactiform", "tinstuff"]), "N": float(rng.randint(1, 6))},
    "repeat:repeat_change": lambda rng: {"prompt_to_repeat": rng.choice(_REQUESTS)},
    "repeat:repeat_simple": lambda rng: {},
    "repeat:repeat_span": _span,
    "custom:csv_city": lambda rng: {},
    "custom:csv_quotes": lambda rng: {},
    "custom:csv_special_character": lambda rng: {},
    "custom:date_format_list": lambda rng: {},
    "custom:mcq_count_length": lambda rng: {},
    "custom:multiples": lambda rng: {},
    "custom:sentence_alphabet": lambda rng: {},
}

_WORDS = "apple bird cat cow dog egg fox goat hat ice jam kite lamp mat no on pen quiz red sat the up van wet xray yes zoo"
EXTRA_PIECES: list[str] = [
    *(" " + word for word in _WORDS.split()),
    *(" " + word.upper() for word in _WORDS.split()),
    *"0123456789",
    ", ",
    "\t",
    " &",
    "-",
]
