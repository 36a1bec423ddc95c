"""Code verifiers for any task, summaries and dialogue replies as much as instruction suites.

``grounded:*`` checks compare the response with the judged input (their factories declare ``prompt``, so
``build_check`` passes the input in); ``text:*`` checks read the response alone. Sentences and words are cut by
``text``, as in every other verifier module, so a "sentence" here is a Punkt sentence: a newline never ends one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from decimal import Decimal
from itertools import pairwise

from bineval_dspy.core.text import split_sentences_punkt, word_runs
from bineval_dspy.verifiers.kwargs import whole_number, word_list
from bineval_dspy.verifiers.registry import Check, Finding, joined, plural, quote_list, register, tally

# --------------------------------------------------------------------------- numbers

# "one" is left out: as a pronoun ("no one", "one of them") it would make most replies claim the number 1.
_NUMBER_WORDS = {
    word: value for value, word in enumerate("two three four five six seven eight nine ten eleven twelve".split(), 2)
}
_SCALES = {"hundred": 10**2, "thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_NUMBER_RE = re.compile(
    # commas group thousands only in threes ("120,000"); "4,2" is two numbers
    r"(?:(?P<digits>\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?|\d+(?:\.\d+)?)"
    # a number word stands alone: "twenty-two" and "two-thirds" are not read as 2
    rf"|(?<![\w-])(?P<word>{'|'.join(_NUMBER_WORDS)})(?![\w-]))"
    rf"(?P<scales>(?:[\s-]+(?:{'|'.join(_SCALES)})\b)*)"
    r"(?P<percent>\s*%|\s+per\s?cent\b)?",
    re.IGNORECASE,
)

# A number as a fact: its value and whether it is a percentage.
_NumberFact = tuple[Decimal, bool]


# Tokenized text (as in UniEval's copy of QAGS) spaces out a thousands comma and a decimal point: "3 , 800" is
# 3,800 and "98 . 7" is 98.7. (A sentence that ends in a number before one that opens with a digit reads as a
# decimal too; news style spells out a number that opens a sentence.)
_SPACED_SEPARATOR_RE = re.compile(r"(?<=\d) (?:(,) (?=\d{3}(?!\d))|(\.) (?=\d))")


def _numbers(text: str) -> Iterator[tuple[str, Decimal, Decimal, bool]]:
    """Each number of ``text``: as written, its value, its value with scale words applied, whether it is a percentage."""
    for match in _NUMBER_RE.finditer(_SPACED_SEPARATOR_RE.sub(r"\1\2", text)):
        digits, word = match.group("digits"), match.group("word")
        bare = Decimal(digits.replace(",", "")) if digits else Decimal(_NUMBER_WORDS[word.lower()])
        scale = math.prod(_SCALES[name] for name in re.findall(r"[a-z]+", match.group("scales").lower()))
        yield match.group(), bare, bare * scale, match.group("percent") is not None


def _supported_numbers(text: str) -> set[_NumberFact]:
    """The number facts ``text`` backs: each number as written out in full, and its bare value too.

    The bare value lets "4.2 million" or "30%" in the input support a plain "4.2" or "30" in the response.
    """
    facts: set[_NumberFact] = set()
    for _, bare, scaled, percent in _numbers(text):
        facts |= {(scaled, percent), (bare, False)}
    return facts


@register("grounded:numbers", rule="Use only numbers that appear in the input; do not invent any figure.")
def grounded_numbers(prompt: str) -> Check:
    """Every number in the response, compared by value, also occurs in the input, so no figure is invented."""
    # Digits, decimals and thousands groups, percentages, and the words two..twelve are numbers, scaled by
    # hundred..trillion: "4.2 million" and "4,200,000" are one value, "42" and "4.2" are not. Signs are not read.
    supported = _supported_numbers(prompt)

    def check(response: str) -> Finding:
        asked = "asked for numbers from the input only"
        found = list(_numbers(response))
        invented = [written for written, _, scaled, percent in found if (scaled, percent) not in supported]
        if invented:
            return Finding(False, f"{asked}; found {plural(len(invented), 'number')} not in it: {quote_list(invented)}")
        if not found:
            return Finding(True, f"{asked}; the response has none")
        return Finding(True, f"{asked}; {quote_list([number[0] for number in found])} all appear in it")

    return check


# --------------------------------------------------------------------------- names

# After these a capital opens a clause (a quotation, an explanation), so it says nothing about a name.
# An apostrophe opens a quotation only where it does not follow a letter: "town's" is one word.
_CLAUSE_OPENER_RE = re.compile(r"""[:"“‘«(]|(?<!\w)'""")


def _names(text: str) -> Iterator[str]:
    """The name words of ``text``: capitalised words that do not open a line, sentence or quoted clause, nor "I"."""
    for line in text.splitlines():
        for sentence in split_sentences_punkt(line):
            for clause in _CLAUSE_OPENER_RE.split(sentence):
                yield from (word for word in word_runs(clause)[1:] if word[0].isupper() and word != "I")


@register(
    "grounded:entities",
    rule="Name only people, places and organisations that appear in the input; do not invent any.",
)
def grounded_entities(prompt: str) -> Check:
    """Every name in the response (a capitalised word that does not open a sentence) also occurs in the input,
    case-insensitively, so no person, place or organisation is invented."""
    # Without a lexicon an opening capital cannot tell "Work starts" from "Ruiz said", so the first word of a
    # sentence, line or quoted clause is never a name; a name of several words ("Elm Street") is supported
    # word by word, which also accepts "Mayor Ruiz" for "Mayor Ana Ruiz". Title Case headings count as names.
    words = {word.casefold() for word in word_runs(prompt)}

    def check(response: str) -> Finding:
        invented = list(dict.fromkeys(name for name in _names(response) if name.casefold() not in words))
        asked = "asked for names from the input only"
        if invented:
            return Finding(False, f"{asked}; found {plural(len(invented), 'name')} not in it: {quote_list(invented)}")
        return Finding(True, f"{asked}; every name appears in it")

    return check


# --------------------------------------------------------------------------- counts


def _bounds(low_name: str, low: object, high_name: str, high: object) -> tuple[int, int | None]:
    """A count's bounds: minimum (0 when not given) and maximum (None when not given); not neither, low <= high."""
    if low is None and high is None:
        raise ValueError(f"give {low_name}, {high_name} or both")
    minimum = whole_number(low_name, low, minimum=1) if low is not None else 0
    maximum = whole_number(high_name, high, minimum=1) if high is not None else None
    if maximum is not None and minimum > maximum:
        raise ValueError(f"{low_name} {minimum} is above {high_name} {maximum}")
    return minimum, maximum


def _span(minimum: int, maximum: int | None, noun: str) -> str:
    """'at least 3 sentences', 'at most 5 words', 'between 2 and 4 sentences' (a minimum of 0 is no bound)."""
    if maximum is None:
        return f"at least {plural(minimum, noun)}"
    if not minimum:
        return f"at most {plural(maximum, noun)}"
    return f"between {minimum} and {plural(maximum, noun)}"


def _count_finding(count: int, minimum: int, maximum: int | None, noun: str) -> Finding:
    """Whether ``count`` lies in [minimum, maximum], and the count found."""
    passed = count >= minimum and (maximum is None or count <= maximum)
    return Finding(passed, f"asked for {_span(minimum, maximum, noun)}; found {count}")


@register(
    "text:sentence_count",
    rule=lambda min_sentences=None, max_sentences=None: (
        f"Write {_span(min_sentences or 0, max_sentences, 'sentence')}."
    ),
)
def sentence_count(min_sentences: int | None = None, max_sentences: int | None = None) -> Check:
    """The response has at least ``min_sentences`` and at most ``max_sentences`` sentences (either bound optional)."""
    minimum, maximum = _bounds("min_sentences", min_sentences, "max_sentences", max_sentences)

    def check(response: str) -> Finding:
        return _count_finding(len(split_sentences_punkt(response)), minimum, maximum, "sentence")

    return check


@register(
    "text:word_count",
    rule=lambda min_words=None, max_words=None: f"Write {_span(min_words or 0, max_words, 'word')}.",
)
def word_count(min_words: int | None = None, max_words: int | None = None) -> Check:
    """The response has at least ``min_words`` and at most ``max_words`` words, counted as IFEval counts them."""
    # Words are runs of letters and digits, so "4.2" and "Millbrook's" are two words each.
    minimum, maximum = _bounds("min_words", min_words, "max_words", max_words)

    def check(response: str) -> Finding:
        return _count_finding(len(word_runs(response)), minimum, maximum, "word")

    return check


# --------------------------------------------------------------------------- style


@register("text:sentence_capitals", rule="Start every sentence with a capital letter.")
def sentence_capitals() -> Check:
    """No sentence begins with a lower-case letter: its first letter or digit, after any quotes, brackets or
    list marks, is a capital, a digit or a letter of a script without case."""

    def check(response: str) -> Finding:
        sentences = split_sentences_punkt(response)
        openings = [next((char for char in sentence if char.isalnum()), "") for sentence in sentences]
        lower = [sentence for sentence, char in zip(sentences, openings) if char.islower()]
        asked = "asked for a capital at the start of every sentence"
        if lower:
            found = f"{plural(len(lower), 'lower-case start')}: {quote_list(lower, width=20)}"
            return Finding(False, f"{asked}; found {found}")
        return Finding(True, f"{asked}; every sentence has one")

    return check


# Grammatical repetitions: "I had had enough", "he said that that was fine".
_ALLOWED_REPEATS = frozenset({"had", "that"})


def _no_repeats_rule(allowed_words: list[str] | None = None) -> str:
    """The rule of text:no_repeated_words, naming the words allowed to repeat."""
    allowed = f" (repeating {joined(allowed_words)} is fine)" if allowed_words else ""
    return f"Never write the same word twice in a row, as in 'the the'{allowed}."


@register("text:no_repeated_words", rule=_no_repeats_rule)
def no_repeated_words(allowed_words: list[str] | None = None) -> Check:
    """No word directly follows itself within a sentence ("roads roads", "the, the"), case and punctuation
    ignored, except "had", "that" and ``allowed_words`` (for names such as "Bora Bora")."""
    # Words are whitespace tokens with their punctuation dropped, so a hyphenated "so-so" is one word and a
    # lone dash between two equal words does not separate them; digit-only tokens ("1.1 1.1") are not words.
    allowed = _ALLOWED_REPEATS
    if allowed_words is not None:
        allowed = allowed | {word.casefold() for word in word_list("allowed_words", allowed_words)}

    def repeats(sentence: str) -> list[str]:
        words = [word for word in ("".join(word_runs(token)).casefold() for token in sentence.split()) if word]
        return [
            f"{word} {following}"
            for word, following in pairwise(words)
            if word == following and not word.isdigit() and word not in allowed
        ]

    def check(response: str) -> Finding:
        found = [pair for sentence in split_sentences_punkt(response) for pair in repeats(sentence)]
        return Finding(not found, f"asked for no word repeated back to back; found {tally(found)}")

    return check
