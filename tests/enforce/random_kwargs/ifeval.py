"""Kwargs an IFEval row could give each enforceable IFEval id."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any


def _kwargs(instruction_id: str, rng: random.Random) -> dict[str, Any]:
    n = rng.randint(1, 5)
    return {
        "change_case:english_lowercase": {}, "change_case:english_capital": {}, "punctuation:no_comma": {},
        "startend:quotation": {}, "detectable_format:title": {}, "detectable_format:json_format": {},
        "detectable_format:constrained_response": {}, "combination:two_responses": {},
        "combination:repeat_prompt": {"prompt_to_repeat": rng.choice(["Write about cats.", "tell me a story", "Is it big?"])},
        "detectable_content:postscript": {"postscript_marker": rng.choice(["P.S.", "P.P.S"])},
        "detectable_format:multiple_sections": {"section_spliter": rng.choice(["Section", "SECTION", "PART"]), "num_sections": n},
        "detectable_format:number_bullet_lists": {"num_bullets": n},
        "keywords:forbidden_words": {"forbidden_words": rng.sample(["blue", "cat", "paris", "mat"], 2)},
        "length_constraints:nth_paragraph_first_word": {"num_paragraphs": n + 1, "nth_paragraph": rng.randint(1, n + 1), "first_word": rng.choice(["however", "first", "then"])},
        "length_constraints:number_paragraphs": {"num_paragraphs": n},
        "length_constraints:number_sentences": {"num_sentences": rng.randint(2, 8), "relation": rng.choice(["at least", "less than"])},
        "length_constraints:number_words": {"num_words": rng.randint(5, 120), "relation": rng.choice(["at least", "less than"])},
        "startend:end_checker": {"end_phrase": rng.choice(["Is there anything else I can help with?", "any other questions?", "Peace."])},
    }[instruction_id]  # fmt: skip


IDS = (
    "change_case:english_lowercase",
    "change_case:english_capital",
    "punctuation:no_comma",
    "startend:quotation",
    "detectable_format:title",
    "detectable_format:json_format",
    "detectable_format:constrained_response",
    "combination:two_responses",
    "combination:repeat_prompt",
    "detectable_content:postscript",
    "detectable_format:multiple_sections",
    "detectable_format:number_bullet_lists",
    "keywords:forbidden_words",
    "length_constraints:nth_paragraph_first_word",
    "length_constraints:number_paragraphs",
    "length_constraints:number_sentences",
    "length_constraints:number_words",
    "startend:end_checker",
)
MAKERS: dict[str, Callable[[random.Random], dict[str, Any]]] = {i: (lambda rng, i=i: _kwargs(i, rng)) for i in IDS}
EXTRA_PIECES: list[str] = []
