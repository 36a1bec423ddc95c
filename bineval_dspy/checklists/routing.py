"""Marking the questions of a written checklist that a grounded code check answers exactly.

A tiny LM cannot be trusted to say which of its questions code can answer, so the marking is done by patterns on
the question text: a question about numbers (or names) of the output being found in the input goes to
``grounded:numbers`` (``grounded:entities``), one about sentence-initial capitals or repeated words to its ``text:``
check. Anything else stays with the LM. A question that already names a verifier is left as it is.
"""

from __future__ import annotations

import re

from bineval_dspy.core.schema import Checklist, Question

_GROUNDED = r"\b(in|from|by|with)\s+(the\s+)?(article|input|source|document|text|dialogue|fact|context|conversation)\b"
ROUTES: tuple[tuple[str, re.Pattern[str], re.Pattern[str] | None], ...] = (
    ("grounded:numbers", re.compile(r"\b(numbers?|figures?|amounts?|dates?|numeric)\b", re.I), re.compile(_GROUNDED, re.I)),
    ("grounded:entities", re.compile(r"\b(names?|named entit(y|ies)|people|persons?|places?|organi[sz]ations?)\b", re.I), re.compile(_GROUNDED, re.I)),
    ("text:sentence_capitals", re.compile(r"\b(start|begin)s?\b.*\bcapital\b", re.I), None),
    ("text:no_repeated_words", re.compile(r"\brepeated words?\b|\bwords? repeated\b", re.I), None),
)


def code_route(text: str) -> str | None:
    """The grounded check that answers this question exactly, or None (the LM answers it)."""
    for verifier, topic, grounded in ROUTES:
        if topic.search(text) and (grounded is None or grounded.search(text)):
            return verifier
    return None


def route_to_code(checklist: Checklist) -> Checklist:
    """The checklist with each positive-weight question a grounded check answers marked with that verifier (ids
    unchanged)."""
    marked: list[Question] = []
    for question in checklist.questions:
        # code answers "is it met": a negative-weight question (yes = the penalized thing is present) stays with the LM
        verifier = code_route(question.text) if question.verifier is None and question.weight > 0 else None
        marked.append(question.model_copy(update={"verifier": verifier}) if verifier else question)
    return checklist.model_copy(update={"questions": marked})
