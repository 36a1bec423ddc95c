"""IFBench ``count:*`` verifiers, following ``allenai/IFBench`` (``ifbench/instructions.py``).

NLTK's ``sent_tokenize``/``word_tokenize`` are replaced by the deterministic look-alikes in ``text``.
"""

from __future__ import annotations

from bineval_dspy.core.text import trim_punctuation, word_runs
from bineval_dspy.enforce.kinds.budgets import (
    FILL_WORDS,
    PERSON_NAMES,
    ExactKeywords,
    ExactNumbers,
    LeastConjunctions,
    LeastDifferentWords,
    LeastNames,
    LeastPronouns,
    count_numbers,
    different_words,
    named_people,
    pronoun_tokens,
    used_conjunctions,
)
from bineval_dspy.enforce.kinds.marks import AllMarks, EveryNthJapanese, japanese_or_exempt, missing_marks
from bineval_dspy.enforce.rules import rules
from bineval_dspy.enforce.steering import Steering
from bineval_dspy.verifiers.kwargs import nonblank_text, whole_number
from bineval_dspy.verifiers.registry import (
    Check,
    Enforcement,
    Finding,
    joined,
    ordinal,
    plural,
    quote,
    register,
    tally,
)

_KEYWORD_TIMES = (1, 2, 3, 5, 7)  # keyword1 once, keyword2 twice, ..., keyword5 seven times
_TIMES_WORDS = ("exactly once", "twice", "three times", "five times", "seven times")


def _keywords_rule(keyword1: str, keyword2: str, keyword3: str, keyword4: str, keyword5: str) -> str:
    """'Use 'a' exactly once, 'b' twice, ...': the times each keyword of count:keywords_multiple must occur."""
    raw = (keyword1, keyword2, keyword3, keyword4, keyword5)
    parts = [f"{quote(kw.strip())} {times}" for kw, times in zip(raw, _TIMES_WORDS)]
    return f"Use {', '.join(parts[:-1])} and {parts[-1]}."


def _every_nth_word(n: int) -> str:
    """'every word', 'every 2nd word'."""
    return "every word" if n == 1 else f"every {ordinal(n)} word"


@register(
    "count:conjunctions",
    rule=lambda small_n: (
        f"Use at least {plural(small_n, 'different coordinating conjunction')} (and, but, for, nor, or, so, yet)."
    ),
    enforce=Enforcement("forced", lambda small_n: Steering(rules=rules(LeastConjunctions(count=int(small_n))))),
)
def conjunctions(small_n: float) -> Check:
    """At least ``small_n`` different coordinating conjunctions (and, but, for, nor, or, so, yet).

    As in the official grader, "different" compares the words as written (``and``, ``And`` and
    ``and,`` are three), after recognising each as a conjunction once its punctuation is trimmed.
    """
    needed = whole_number("small_n", small_n)

    def check(response: str) -> Finding:
        used = used_conjunctions(response)
        asked = f"asked for at least {plural(needed, 'different coordinating conjunction')}"
        return Finding(len(used) >= needed, f"{asked}; found {tally(used)}")

    return check


def _exact_keywords(keyword1: str, keyword2: str, keyword3: str, keyword4: str, keyword5: str) -> Steering:
    """The keywords' exact counts as a budget: an occurrence too many refused, the missing ones forced."""
    keywords = tuple(kw.strip().lower() for kw in (keyword1, keyword2, keyword3, keyword4, keyword5))
    return Steering(rules=rules(ExactKeywords(keywords=keywords, times=_KEYWORD_TIMES)))


@register("count:keywords_multiple", rule=_keywords_rule, enforce=Enforcement("automaton", _exact_keywords))
def keywords_multiple(keyword1: str, keyword2: str, keyword3: str, keyword4: str, keyword5: str) -> Check:
    """keyword1..keyword5 occur exactly 1, 2, 3, 5 and 7 times (case-insensitive substring counts)."""
    raw = (keyword1, keyword2, keyword3, keyword4, keyword5)
    keywords = [nonblank_text(f"keyword{i}", kw).strip().lower() for i, kw in enumerate(raw, start=1)]

    def check(response: str) -> Finding:
        text = response.lower()
        wrong = [
            f"{quote(kw, 20)} {plural(count, 'time')}, not {times}"
            for kw, times in zip(keywords, _KEYWORD_TIMES)
            if (count := text.count(kw)) != times
        ]
        asked = "asked for the keywords 1, 2, 3, 5 and 7 times"
        if wrong:
            return Finding(False, f"{asked}; found {', '.join(wrong[:3])}{', …' if len(wrong) > 3 else ''}")
        return Finding(True, f"{asked}; each occurs as often as asked")

    return check


@register(
    "count:numbers",
    rule=lambda N: f"Use exactly {plural(N, 'number')} in the response.",
    enforce=Enforcement("automaton", lambda N: Steering(rules=rules(ExactNumbers(count=int(N))))),
)
def numbers(N: float) -> Check:
    """Exactly ``N`` numbers: digit runs once ASCII punctuation is deleted (so 3.14 and 1,000 are one each)."""
    expected = whole_number("N", N)

    def check(response: str) -> Finding:
        found = count_numbers(response)
        return Finding(len(found) == expected, f"asked for exactly {plural(expected, 'number')}; found {tally(found)}")

    return check


def _names(needed: int) -> Steering:
    """The floor of different names, which the list of 50 bounds."""
    if needed > len(PERSON_NAMES):
        raise ValueError(f"N: {needed} different names is more than the list of {len(PERSON_NAMES)} holds")
    return Steering(rules=rules(LeastNames(count=needed)))


@register(
    "count:person_names",
    rule=lambda N: (
        f"Mention at least {plural(N, 'different name')} from the prompt's list of 50 (Emma, Liam, Sophia, …)."
    ),
    enforce=Enforcement("forced", lambda N: _names(int(N))),
)
def person_names(N: float) -> Check:
    """At least ``N`` different names from the prompt's fixed list of 50, matched case-sensitively as whole words."""
    needed = whole_number("N", N)

    def check(response: str) -> Finding:
        found = named_people(response)
        asked = f"asked for at least {plural(needed, 'different name')} from the list"
        return Finding(len(found) >= needed, f"{asked}; found {tally(found)}")

    return check


@register(
    "count:pronouns",
    rule=lambda N: f"Use at least {plural(N, 'pronoun')} (I, you, they, this, …).",
    enforce=Enforcement("forced", lambda N: Steering(rules=rules(LeastPronouns(count=int(N))))),
)
def pronouns(N: float) -> Check:
    """At least ``N`` pronoun tokens (NLTK-style word tokens of the lower-cased text, '/' read as a space)."""
    needed = whole_number("N", N)

    def check(response: str) -> Finding:
        found = pronoun_tokens(response)
        return Finding(len(found) >= needed, f"asked for at least {plural(needed, 'pronoun')}; found {tally(found)}")

    return check


@register(
    "count:punctuation",
    rule="Use every standard punctuation mark (. , ! ? ; :) and an interrobang (?! or ‽) in the response.",
    enforce=Enforcement("forced", lambda: Steering(rules=rules(AllMarks()))),
)
def punctuation() -> Check:
    """An interrobang (?!, !? or ‽) plus each of . , ! ? ; : somewhere outside the first ?!/!? pair."""

    def check(response: str) -> Finding:
        asked = "asked for an interrobang and each of . , ! ? ; :"
        found, missing = missing_marks(response)
        if not found:
            return Finding(False, f"{asked}; found no interrobang (?!, !? or ‽)")
        if missing:
            return Finding(False, f"{asked}; missing {joined(missing)}")
        return Finding(True, f"{asked}; found them all")

    return check


def _different_words(needed: int) -> Steering:
    """The floor of different words, which the decoder can guarantee up to the size of its pool of fill words."""
    if needed > len(FILL_WORDS):
        raise ValueError(f"N: {needed} different words is more than the decoder can force ({len(FILL_WORDS)} at most)")
    return Steering(rules=rules(LeastDifferentWords(count=needed)))


@register(
    "count:unique_word_count",
    rule=lambda N: f"Use at least {plural(N, 'different word')}.",
    enforce=Enforcement("forced", lambda N: _different_words(int(N))),
)
def unique_word_count(N: float) -> Check:
    """At least ``N`` distinct lower-cased whitespace words, punctuation trimmed.

    As in the official grader, a word made only of punctuation counts once, as the empty word.
    """
    needed = whole_number("N", N)

    def check(response: str) -> Finding:
        count = len(different_words(response))
        return Finding(count >= needed, f"asked for at least {plural(needed, 'different word')}; found {count}")

    return check


@register(
    "count:word_count_range",
    rule="Answer with between {min_words} and {max_words} words.",
    enforce=Enforcement(  # the word floor and ceiling the decoder counts with word_runs, as the check does
        "automaton", lambda min_words, max_words: Steering(min_words=int(min_words), max_words=int(max_words) + 1)
    ),
)
def word_count_range(min_words: float, max_words: float) -> Check:
    """Between ``min_words`` and ``max_words`` words (both inclusive), words being ``\\w+`` runs."""
    low, high = whole_number("min_words", min_words), whole_number("max_words", max_words)
    if low > high:
        raise ValueError(f"min_words ({low}) must not exceed max_words ({high})")

    def check(response: str) -> Finding:
        count = len(word_runs(response))
        return Finding(low <= count <= high, f"asked for {low} to {high} words; found {count}")

    return check


@register(
    "count:words_japanese",
    rule=lambda N: f"Write {_every_nth_word(N)} in Japanese (kana or kanji); numbers are exempt.",
    enforce=Enforcement("forced", lambda N: Steering(rules=rules(EveryNthJapanese(step=int(N))))),
)
def words_japanese(N: float) -> Check:
    """Every ``N``-th whitespace word holds a Japanese character (kana or kanji); numbers are exempt."""
    step = whole_number("N", N, minimum=1)

    def check(response: str) -> Finding:
        asked = f"asked for {_every_nth_word(step)} in Japanese"
        for position, raw in enumerate(response.split(), start=1):
            if position % step == 0 and not japanese_or_exempt(raw):
                return Finding(False, f"{asked}; word {position}, {quote(trim_punctuation(raw), 20)}, is not Japanese")
        return Finding(True, f"{asked}; they all are")

    return check
