"""The machinery every extraction rule shares: numbers and relations in words, and a ``Rule`` that finds a
constraint only where the prompt *states* it.

A pattern alone cannot tell "Answer in at least 300 words." from "Is it true that some teachers ask for at least 300
words?" or from a limit on one part of the reply ("each bullet at most 10 words"): ``Rule.find`` skips a match that
sits in a question the prompt asks (not a request put as one, "Can you ..."), inside quoted material, or in a
sentence about what others generally ask for, and, for a rule on the whole reply (``whole_reply``), one whose clause
scopes it to a part (a field, a title, each bullet). A constraint skipped here stays with the LM writer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

_NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "twenty-five": 25, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "a hundred": 100, "one hundred": 100,
    "single": 1, "a": 1, "an": 1,
}  # fmt: skip
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9,
    "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14, "fifteenth": 15, "twentieth": 20,
}  # fmt: skip
N = r"(\d+(?:\.0+)?|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")"  # "5", "5.0" (IFBench), "five"
ORDINAL = r"(\d+)(?:\s*-?\s*(?:st|nd|rd|th))?|(" + "|".join(_ORDINALS) + r")"  # "22-nd", "3rd", "third": 2 groups
AT_LEAST = r"at least|more than|over|no less than|no fewer than|not less than|not fewer than|a minimum of|minimum of|upwards of"
LESS = r"less than|fewer than|under|below|at most|no more than|not more than|a maximum of|maximum of|up to|not exceed(?:ing)?|no longer than|shorter than"
_INCLUSIVE = r"at most|no more than|not more than|a maximum of|maximum of|up to|not exceed(?:ing)?|no longer than"
QUOTED = r"[\"'“‘]([^\"'”’\n]{1,80})[\"'”’]"
NOT = r"(?:\bnot|n't|\bcannot|\bnever|\bno|\bwithout|\bavoid(?:ing)?|\brefrain from|\bexclude|\bexcluding)"


def number(text: str) -> int:
    """'3', '3.0' or 'three' as an int."""
    text = text.strip().lower()
    if re.fullmatch(r"\d+(?:\.0+)?", text):  # exactly (a float rounds 23 digits; past 4300 digits int() refuses)
        return int(text.partition(".")[0])
    return _NUMBERS[text]


def ordinal(digits: str | None, word: str | None) -> int:
    """The two groups of ``ORDINAL`` ('22' of '22-nd', or 'third') as an int."""
    return int(digits) if digits else _ORDINALS[(word or "").lower()]


def relation(words: str) -> str:
    """IFEval's two relations: 'at least' for a floor, 'less than' for a ceiling ('at most N' is less than N + 1)."""
    return "at least" if re.fullmatch(AT_LEAST, words.lower()) else "less than"


def count(words: str, n: str) -> tuple[str, int]:
    """(relation, threshold) of 'at most 5' (less than 6), 'more than 5' (at least 6)."""
    kind = relation(words)
    value = number(n)
    if kind == "at least":
        return kind, value + 1 if re.fullmatch(r"more than|over|upwards of", words.lower()) else value
    return kind, value + 1 if re.fullmatch(_INCLUSIVE, words.lower()) else value


def items(text: str) -> list[str]:
    """The keywords of a list such as '"ocean", "wave" and "salt"' (quoted ones if any, else comma/and parts)."""
    quoted = re.findall(QUOTED, text)
    parts = quoted or re.split(r",?\s+(?:and|or|nor)\s+|,\s*", text)
    return [p.strip(" .*") for p in parts if re.search(r"\w", p) and len(p.split()) <= 3]


# --- where a match is stated, and for what -------------------------------------------------------------------------

_BOUNDARY = re.compile(r"[.?!](?=[\s\"'”’)]|$)|\n")
_REQUEST = re.compile(r"^\W*(?:(?:can|could|would|will)\s+(?:you|u)\b|please\b|kindly\b|would\s+it\s+be\s+possible|i\s+(?:want|need|would\s+like)|make\s+sure|ensure)", re.IGNORECASE)
# what some people generally ask for or do: "some teachers ask for", "many poets never use"
_GENERIC = re.compile(r"\b(?:some|many|most|other|certain|several)\s+(?:(?!that|which|who)\w+\s+){0,2}?(?:(?:never|always|often|usually|rarely|typically|sometimes)\s+)?(?:ask|require|want|say|recommend|expect|demand|insist|prefer|suggest|use|write|avoid|need)s?\b(?:\s+(?:for|that|on))?", re.IGNORECASE)
# parts of a reply that a limit may be stated for (a genre noun such as "essay" or "summary" is the reply itself)
PART = r"(?:fields?|keys?|values?|propert(?:y|ies)|attributes?|columns?|cells?|rows?|entr(?:y|ies)|items?|bullets?(?:\s+points?)?|points?|titles?|sub-?titles?|headings?|headers?|headlines?|captions?|subject\s+lines?|taglines?|slogans?|labels?|sections?|paragraphs?|chapters?|stanzas?|verses?|lines?|sentences?|steps?|questions?|options?|parts?|descriptions?|tweets?|hashtags?|abstracts?|introductions?|intros?|conclusions?|outros?|openings?|closings?|greetings?|sign-?offs?|first\s+\w+|last\s+\w+)"
_PART_SUBJECT = re.compile(rf"\b{PART}\b(?:\s+\w+){{0,3}}?\s+(?:should|must|shall|will|can|may|is|are|has\s+to|have\s+to|needs?\s+to|ought\s+to)\b[^.;:]{{0,40}}$", re.IGNORECASE)
_PART_OF = re.compile(rf"\b(?:{PART}|names?)\s+(?:(?:\w+\s+){{0,4}}?(?:that|which)\s+(?:is|are|has|have|contains?|consists?\s+of)(?:\s+\w+){{0,2}}|of|with|containing|having|consisting\s+of)\s+$", re.IGNORECASE)
_PART_VERB = re.compile(rf"\b(?:keep|make|limit|restrict|cap|write|give)\s+(?:the|your|its|each|every|all|all\s+the)\s+(?:\w+\s+)?{PART}\s+(?:to\s+|at\s+|with\s+)?$", re.IGNORECASE)
_EACH = re.compile(r"\b(?:each|every|per|apiece)\b", re.IGNORECASE)
_EACH_LEADING = re.compile(r"^\W*(?:for|in|on|within|under)\s+(?:each|every|all)\b", re.IGNORECASE)  # "For every slide, ..."
# a situation described, not asked of the reply: "a contest where entries needed at least 500 words"
_SITUATION = re.compile(r"\b(?:where|in\s+which|whose)\s+(?:the\s+|some\s+|all\s+|many\s+|most\s+)?\w+\s+(?:needed|required|had|were|was|must|should|need|needs|require|requires|have|has)\b[^,.;]{0,40}$", re.IGNORECASE)
_PART_AFTER = re.compile(rf"^\W*(?:\w+\s+){{0,2}}?(?:in|for|of|per|within)\s+(?:each|every|the|your|its|a|one|any|all)?\s*(?:\w+\s+)?{PART}\b", re.IGNORECASE)
_EACH_AFTER = re.compile(r"^\W*(?:\w+\s+){0,2}?(?:each|apiece|per\s+\w+|for\s+(?:each|every)|in\s+(?:each|every))\b", re.IGNORECASE)


def sentence_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence around text[start:end]: from after the last boundary before it to the first boundary after it
    (the boundary kept)."""
    before = [m.end() for m in _BOUNDARY.finditer(text, 0, start)]
    after = _BOUNDARY.search(text, end)
    return (before[-1] if before else 0), (after.end() if after else len(text))


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    """Spans inside quotation marks: double ones (straight ones paired in order, curly ones by their direction), and
    single ones that open and close outside a word (an apostrophe, "don't", never pairs)."""
    spans = [(m.start() + 1, m.end() - 1) for m in re.finditer(r"“[^”]*”|‘[^’\n]*’|(?<![\w'])'[^'\n]{2,200}?'(?![\w'])", text)]
    straight = [i for i, ch in enumerate(text) if ch == '"']
    spans += [(straight[k] + 1, straight[k + 1]) for k in range(0, len(straight) - 1, 2)]
    return spans


def mentioned(text: str, start: int, end: int) -> bool:
    """Whether the match text[start:end] is only mentioned: in a question the prompt asks, inside quoted
    material, or in a statement of what some people generally ask for."""
    if any(a <= start and end <= b for a, b in _quoted_spans(text)):
        return True
    s_start, s_end = sentence_span(text, start, end)
    sentence = text[s_start:s_end].strip()
    asks = sentence.endswith("?") and text.rfind("?", 0, s_end) >= end  # an end phrase's own "?" asks nothing
    if asks and not _REQUEST.search(sentence):
        return True
    generic = any(m.start() < start for m in _GENERIC.finditer(text, s_start, end))  # "some poets [never use] capitals"
    return generic or bool(_SITUATION.search(text[s_start:start]))


def part_scoped(text: str, start: int, end: int) -> bool:
    """Whether the clause around the match states it for a part of the reply (a field, a title, each bullet)
    rather than for the whole reply."""
    s_start, s_end = sentence_span(text, start, end)
    before = text[s_start:start]
    clauses = re.split(r"[,;:(]|\band\b|\bthen\b", before)
    clause = clauses[-1]
    # "the summary field is one sentence, at most 25 words": an apposition belongs to the clause before it
    subject = ", ".join(clauses[-2:]) if not clause.strip() else clause
    after = text[end:s_end]
    if _EACH.search(clause) or _EACH_LEADING.match(before) or _PART_SUBJECT.search(subject) or _PART_OF.search(clause) or _PART_VERB.search(clause):
        return True
    return bool(_PART_AFTER.match(after) or _EACH_AFTER.match(after))


@dataclass(frozen=True)
class Rule:
    """One checkable constraint: the verifier, the pattern that finds it in a prompt, and from its match the kwargs
    (given the prompt without the sentences that state constraints: the text a reference-text rule compares with) and
    the question asked."""

    verifier: str
    pattern: re.Pattern[str]
    kwargs: Callable[[re.Match[str], str], dict[str, Any]]
    question: Callable[[dict[str, Any]], str]
    unless: re.Pattern[str] | None = None  # the match's sentence says something else (a negation, another rule)
    whole_reply: bool = False  # a limit on the whole reply: a clause naming a part of it is not this constraint
    literal: bool = False  # the match is the task's own text (a request to repeat): no mention or quote check

    def stated(self, task: str) -> Iterator[re.Match[str]]:
        """The matches the prompt states, in order: not only mentioned, not ruled out by ``unless``, and, for a rule
        on the whole reply, not scoped to a part of it."""
        for match in self.pattern.finditer(task):
            start, end = sentence_span(task, match.start(), match.end())
            if self.unless is not None and self.unless.search(task[start:end]):
                continue
            if not self.literal and mentioned(task, match.start(), match.end()):
                continue
            if self.whole_reply and part_scoped(task, match.start(), match.end()):
                continue
            yield match


def rule(
    verifier: str,
    pattern: str,
    question: str | Callable[[dict[str, Any]], str],
    kwargs: Callable[[re.Match[str]], dict[str, Any]] | None = None,
    *,
    unless: str | None = None,
    whole_reply: bool = False,
    literal: bool = False,
    rest: Callable[[re.Match[str], str], dict[str, Any]] | None = None,
    flags: int = 0,
) -> Rule:
    """A ``Rule`` from its pattern (case-insensitive) and its kwargs from the match (``kwargs``) or from the match
    and the rest of the prompt (``rest``)."""
    ask = question if callable(question) else (lambda kw, text=question: text.format(**kw))
    of_match = kwargs or (lambda m: {})
    read = rest or (lambda m, _rest: of_match(m))
    unless_pattern = re.compile(unless, re.IGNORECASE) if unless else None
    return Rule(verifier, re.compile(pattern, re.IGNORECASE | flags), read, ask, unless_pattern, whole_reply, literal)
