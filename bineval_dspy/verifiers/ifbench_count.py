"""IFBench ``count:*`` verifiers, following ``allenai/IFBench`` (``ifbench/instructions.py``).

NLTK's ``sent_tokenize``/``word_tokenize`` are replaced by the deterministic look-alikes in ``text``.
"""

from __future__ import annotations

import re

from bineval_dspy.verifiers.kwargs import nonblank_text, whole_number
from bineval_dspy.verifiers.registry import Check, register
from bineval_dspy.verifiers.text import delete_ascii_punctuation, trim_punctuation, word_runs, word_tokenize_nltk

_CONJUNCTIONS = frozenset({"and", "but", "for", "nor", "or", "so", "yet"})

# The fixed list named in the count:person_names prompt; the official grader matches exactly these.
_PERSON_NAMES = (
    "Emma", "Liam", "Sophia", "Jackson", "Olivia", "Noah", "Ava", "Lucas", "Isabella", "Mason",
    "Mia", "Ethan", "Charlotte", "Alexander", "Amelia", "Benjamin", "Harper", "Leo", "Zoe", "Daniel",
    "Chloe", "Samuel", "Lily", "Matthew", "Grace", "Owen", "Abigail", "Gabriel", "Ella", "Jacob",
    "Scarlett", "Nathan", "Victoria", "Elijah", "Layla", "Nicholas", "Audrey", "David", "Hannah", "Christopher",
    "Penelope", "Thomas", "Nora", "Andrew", "Aria", "Joseph", "Claire", "Ryan", "Stella", "Jonathan",
)  # fmt: skip
_PERSON_NAME_PATTERNS = tuple(re.compile(rf"\b{re.escape(name)}\b") for name in _PERSON_NAMES)

_PRONOUNS = frozenset(
    # personal, possessive, reflexive
    "i me we us you he him she her it they them my mine our ours your yours his hers its their theirs "
    "myself ourselves yourself yourselves himself herself itself themselves "
    # demonstrative, interrogative, relative
    "this that these those who whom whose which what whoever whomever whatever whichever "
    # indefinite
    "anybody anyone anything everybody everyone everything nobody nothing somebody someone something "
    "each either neither both all some any none".split()
)

_JAPANESE_CHAR = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")  # hiragana, katakana, CJK ideographs
_KEYWORD_TIMES = (1, 2, 3, 5, 7)  # keyword1 once, keyword2 twice, ..., keyword5 seven times


@register("count:conjunctions")
def conjunctions(small_n: float) -> Check:
    """At least ``small_n`` different coordinating conjunctions (and, but, for, nor, or, so, yet).

    As in the official grader, "different" compares the words as written (``and``, ``And`` and
    ``and,`` are three), after recognising each as a conjunction once its punctuation is trimmed.
    """
    needed = whole_number("small_n", small_n)

    def check(response: str) -> bool:
        used = {word for word in response.split() if trim_punctuation(word).lower() in _CONJUNCTIONS}
        return len(used) >= needed

    return check


@register("count:keywords_multiple")
def keywords_multiple(keyword1: str, keyword2: str, keyword3: str, keyword4: str, keyword5: str) -> Check:
    """keyword1..keyword5 occur exactly 1, 2, 3, 5 and 7 times (case-insensitive substring counts)."""
    raw = (keyword1, keyword2, keyword3, keyword4, keyword5)
    keywords = [nonblank_text(f"keyword{i}", kw).strip().lower() for i, kw in enumerate(raw, start=1)]

    def check(response: str) -> bool:
        text = response.lower()
        return all(text.count(kw) == times for kw, times in zip(keywords, _KEYWORD_TIMES))

    return check


@register("count:numbers")
def numbers(N: float) -> Check:
    """Exactly ``N`` numbers: digit runs once ASCII punctuation is deleted (so 3.14 and 1,000 are one each)."""
    expected = whole_number("N", N)

    def check(response: str) -> bool:
        return len(re.findall(r"\d+", delete_ascii_punctuation(response))) == expected

    return check


@register("count:person_names")
def person_names(N: float) -> Check:
    """At least ``N`` different names from the prompt's fixed list of 50, matched case-sensitively as whole words."""
    needed = whole_number("N", N)

    def check(response: str) -> bool:
        return sum(1 for pattern in _PERSON_NAME_PATTERNS if pattern.search(response)) >= needed

    return check


@register("count:pronouns")
def pronouns(N: float) -> Check:
    """At least ``N`` pronoun tokens (NLTK-style word tokens of the lower-cased text, '/' read as a space)."""
    needed = whole_number("N", N)

    def check(response: str) -> bool:
        tokens = word_tokenize_nltk(response.replace("/", " ").lower())
        return sum(1 for token in tokens if token in _PRONOUNS) >= needed

    return check


@register("count:punctuation")
def punctuation() -> Check:
    """An interrobang (?!, !? or ‽) plus each of . , ! ? ; : somewhere outside the first ?!/!? pair."""

    def check(response: str) -> bool:
        if not any(mark in response for mark in ("?!", "!?", "‽")):
            return False
        pair = "?!" if "?!" in response else "!?"
        rest = response.replace(pair, "", 1)
        return set(".,!?;:") <= set(rest)

    return check


@register("count:unique_word_count")
def unique_word_count(N: float) -> Check:
    """At least ``N`` distinct lower-cased whitespace words, punctuation trimmed.

    As in the official grader, a word made only of punctuation counts once, as the empty word.
    """
    needed = whole_number("N", N)

    def check(response: str) -> bool:
        return len({trim_punctuation(word) for word in response.lower().split()}) >= needed

    return check


@register("count:word_count_range")
def word_count_range(min_words: float, max_words: float) -> Check:
    """Between ``min_words`` and ``max_words`` words (both inclusive), words being ``\\w+`` runs."""
    low, high = whole_number("min_words", min_words), whole_number("max_words", max_words)
    if low > high:
        raise ValueError(f"min_words ({low}) must not exceed max_words ({high})")

    def check(response: str) -> bool:
        return low <= len(word_runs(response)) <= high

    return check


@register("count:words_japanese")
def words_japanese(N: float) -> Check:
    """Every ``N``-th whitespace word holds a Japanese character (kana or kanji); numbers are exempt."""
    step = whole_number("N", N, minimum=1)

    def check(response: str) -> bool:
        for position, raw in enumerate(response.split(), start=1):
            word = trim_punctuation(raw)
            if position % step == 0 and word and not word.isdigit() and not _JAPANESE_CHAR.search(word):
                return False
        return True

    return check
