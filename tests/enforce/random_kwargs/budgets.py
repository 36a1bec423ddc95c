"""Kwargs an IFBench row could give each enforceable ``count:*`` and ``ratio:*`` id."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any


def _keywords(rng: random.Random) -> dict[str, Any]:
    words = rng.sample(["cat", "mat", "blue", "answer", "paris", "sat", "big"], 5)
    return {f"keyword{i}": word for i, word in enumerate(words, start=1)}


def _range(rng: random.Random) -> dict[str, Any]:
    low = rng.randint(5, 60)
    return {"min_words": low, "max_words": low + rng.randint(0, 10)}


MAKERS: dict[str, Callable[[random.Random], dict[str, Any]]] = {
    "count:conjunctions": lambda rng: {"small_n": rng.randint(1, 7)},
    "count:keywords_multiple": _keywords,
    "count:numbers": lambda rng: {"N": rng.randint(1, 8)},
    "count:person_names": lambda rng: {"N": rng.randint(1, 20)},
    "count:pronouns": lambda rng: {"N": rng.randint(1, 25)},
    "count:punctuation": lambda rng: {},
    "count:unique_word_count": lambda rng: {"N": rng.randint(5, 60)},
    "count:word_count_range": _range,
    "count:words_japanese": lambda rng: {"N": rng.randint(1, 8)},
    "ratio:sentence_balance": lambda rng: {},
    "ratio:sentence_type": lambda rng: {},
    "ratio:sentence_words": lambda rng: {},
    "ratio:stop_words": lambda rng: {"percentage": rng.randint(10, 60)},
}
# a pronoun, a conjunction, a name, digits that continue a number, an interrobang, a word split before its end
EXTRA_PIECES: list[str] = [" they", " it", " but", " or", " Emma", "7", " 3", "?!", " th", "e", " theory"]
