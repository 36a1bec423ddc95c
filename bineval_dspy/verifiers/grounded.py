"""Code verifiers for any task, summaries and dialogue replies as much as instruction suites.

``grounded:*`` checks compare the response with the judged input (their factories declare ``prompt``, so
``build_check`` passes the input in); ``text:*`` checks read the response alone. Sentences and words are cut by
``text``, as in every other verifier module, so a "sentence" here is a Punkt sentence: a newline never ends one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from decimal import Decimal
from itertools import pairwise

from bineval_dspy.verifiers.kwargs import whole_number, word_list
from bineval_dspy.verifiers.registry import Check, register
from bineval_dspy.verifiers.text import split_sentences_punkt, word_runs

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


def _numbers(text: str) -> Iterator[tuple[Decimal, Decimal, bool]]:
    """Each number of ``text``: its value as written, its value with scale words applied, whether it is a percentage."""
    for match in _NUMBER_RE.finditer(text):
        digits, word = match.group("digits"), match.group("word")
        bare = Decimal(digits.replace(",", "")) if digits else Decimal(_NUMBER_WORDS[word.lower()])
        scale = math.prod(_SCALES[name] for name in re.findall(r"[a-z]+", match.group("scales").lower()))
        yield bare, bare * scale, match.group("percent") is not None


def _supported_numbers(text: str) -> set[_NumberFact]:
    """The number facts ``text`` backs: each number as written out in full, and its bare value too.

    The bare value lets "4.2 million" or "30%" in the input support a plain "4.2" or "30" in the response.
    """
    facts: set[_NumberFact] = set()
    for bare, scaled, percent in _numbers(text):
        facts |= {(scaled, percent), (bare, False)}
    return facts


@register("grounded:numbers")
def grounded_numbers(prompt: str) -> Check:
    """Every number in the response, compared by value, also occurs in the input, so no figure is invented."""
    # Digits, decimals and thousands groups, percentages, and the words two..twelve are numbers, scaled by
    # hundred..trillion: "4.2 million" and "4,200,000" are one value, "42" and "4.2" are not. Signs are not read.
    supported = _supported_numbers(prompt)

    def check(response: str) -> bool:
        return all((scaled, percent) in supported for _, scaled, percent in _numbers(response))

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


@register("grounded:entities")
def grounded_entities(prompt: str) -> Check:
    """Every name in the response (a capitalised word that does not open a sentence) also occurs in the input,
    case-insensitively, so no person, place or organisation is invented."""
    # Without a lexicon an opening capital cannot tell "Work starts" from "Ruiz said", so the first word of a
    # sentence, line or quoted clause is never a name; a name of several words ("Elm Street") is supported
    # word by word, which also accepts "Mayor Ruiz" for "Mayor Ana Ruiz". Title Case headings count as names.
    words = {word.casefold() for word in word_runs(prompt)}

    def check(response: str) -> bool:
        return all(name.casefold() in words for name in _names(response))

    return check


# --------------------------------------------------------------------------- counts


def _within(low_name: str, low: object, high_name: str, high: object) -> Callable[[int], bool]:
    """A test that a count lies in [low, high]; either bound may be None, not both, and low <= high."""
    if low is None and high is None:
        raise ValueError(f"give {low_name}, {high_name} or both")
    minimum = whole_number(low_name, low, minimum=1) if low is not None else 0
    maximum = whole_number(high_name, high, minimum=1) if high is not None else None
    if maximum is not None and minimum > maximum:
        raise ValueError(f"{low_name} {minimum} is above {high_name} {maximum}")
    return lambda count: count >= minimum and (maximum is None or count <= maximum)


@register("text:sentence_count")
def sentence_count(min_sentences: int | None = None, max_sentences: int | None = None) -> Check:
    """The response has at least ``min_sentences`` and at most ``max_sentences`` sentences (either bound optional)."""
    within = _within("min_sentences", min_sentences, "max_sentences", max_sentences)

    def check(response: str) -> bool:
        return within(len(split_sentences_punkt(response)))

    return check


@register("text:word_count")
def word_count(min_words: int | None = None, max_words: int | None = None) -> Check:
    """The response has at least ``min_words`` and at most ``max_words`` words, counted as IFEval counts them."""
    # Words are runs of letters and digits, so "4.2" and "Millbrook's" are two words each.
    within = _within("min_words", min_words, "max_words", max_words)

    def check(response: str) -> bool:
        return within(len(word_runs(response)))

    return check


# --------------------------------------------------------------------------- style


@register("text:sentence_capitals")
def sentence_capitals() -> Check:
    """No sentence begins with a lower-case letter: its first letter or digit, after any quotes, brackets or
    list marks, is a capital, a digit or a letter of a script without case."""

    def check(response: str) -> bool:
        sentences = split_sentences_punkt(response)
        openings = (next((char for char in sentence if char.isalnum()), "") for sentence in sentences)
        return not any(char.islower() for char in openings)

    return check


# Grammatical repetitions: "I had had enough", "he said that that was fine".
_ALLOWED_REPEATS = frozenset({"had", "that"})


@register("text:no_repeated_words")
def no_repeated_words(allowed_words: list[str] | None = None) -> Check:
    """No word directly follows itself within a sentence ("roads roads", "the, the"), case and punctuation
    ignored, except "had", "that" and ``allowed_words`` (for names such as "Bora Bora")."""
    # Words are whitespace tokens with their punctuation dropped, so a hyphenated "so-so" is one word and a
    # lone dash between two equal words does not separate them; digit-only tokens ("1.1 1.1") are not words.
    allowed = _ALLOWED_REPEATS
    if allowed_words is not None:
        allowed = allowed | {word.casefold() for word in word_list("allowed_words", allowed_words)}

    def repeats(sentence: str) -> bool:
        words = [word for word in ("".join(word_runs(token)).casefold() for token in sentence.split()) if word]
        return any(
            word == following and not word.isdigit() and word not in allowed for word, following in pairwise(words)
        )

    def check(response: str) -> bool:
        return not any(repeats(sentence) for sentence in split_sentences_punkt(response))

    return check
