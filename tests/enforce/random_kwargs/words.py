"""Kwargs an IFBench row could give each enforceable ``words:*`` id, and the pieces their rules need: a word for
every initial (the alphabet), words with consonant clusters, verbs and openers to start with."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

_BARE = (
    "words:alphabet",
    "words:consonants",
    "words:last_first",
    "words:no_consecutive",
    "words:odd_even_syllables",
    "words:palindrome",
    "words:paragraph_last_first",
    "words:prime_lengths",
    "words:start_verb",
    "words:vowel",
)
MAKERS: dict[str, Callable[[random.Random], dict[str, Any]]] = {i: (lambda rng: {}) for i in _BARE}
MAKERS |= {
    "words:repeats": lambda rng: {"small_n": float(rng.randint(1, 4))},
    "words:words_position": lambda rng: {"keyword": rng.choice(["vibrant", "whisper", "blue"])},
    "words:keywords_specific_position": lambda rng: {
        "keyword": rng.choice(["giggle", "beneath", "slowly"]),
        "n": float(rng.randint(1, 4)),
        "m": float(rng.randint(1, 8)),
    },
}
EXTRA_PIECES: list[str] = [
    *(f" {w}" for w in "apple bold crisp dry eel fox grim hat ink jar kit lamp milk nest owl pig quiz rat sun top urn vat wax xray yak zoo".split()),
    " street",
    " strong",
    " Explore",
    " BUILD",
    " make",
    "Build",
    " the",
    "ing",
]
