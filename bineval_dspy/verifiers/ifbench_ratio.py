"""IFBench ``ratio:*`` verifiers: proportions of sentence types, stop words and shared text."""

from __future__ import annotations

from bineval_dspy.core.text import split_sentences_punkt
from bineval_dspy.enforce.kinds.budgets import StopWordShare, stop_percent, stop_share
from bineval_dspy.enforce.kinds.marks import EqualSentences, SentenceMarks, ending_count
from bineval_dspy.enforce.rules import rules
from bineval_dspy.enforce.steering import Steering
from bineval_dspy.verifiers.kwargs import percent
from bineval_dspy.verifiers.registry import Check, Enforcement, Finding, plural, register

_OVERLAP_TOLERANCE = 2
_SENTENCE_LENGTH = 72  # characters per sentence the decoder writes for ratio:sentence_words (a natural length)


def _character_trigrams(text: str) -> set[str]:
    """The distinct three-character substrings of ``text``."""
    return {text[i : i + 3] for i in range(len(text) - 2)}


def _endings(sentences: list[str], marks: str) -> str:
    """'5 ending '.', 1 ending '?'': how many sentences end with each of ``marks``."""
    return ", ".join(f"{ending_count(sentences, mark)} ending '{mark}'" for mark in marks)


@register(
    "ratio:overlap",
    rule="Reuse the given text so that about {percentage}% of the response overlaps it (within 2 points, "
    "counting shared three-character sequences).",
    unenforceable="the share of the reply's character trigrams found in the given text must land within 2 points "
    "of a target, and every later character moves it: a decoder without lookahead search cannot steer it there",
)
def overlap(reference_text: str, percentage: float) -> Check:
    """The share of the response's character trigrams also found in ``reference_text`` is
    ``percentage`` ± 2 points (IFBench compares characters, not words)."""
    target = percent("percentage", percentage)
    reference = _character_trigrams(reference_text)

    def check(response: str) -> Finding:
        asked = f"asked for {target:g}% ± {_OVERLAP_TOLERANCE} overlap with the given text"
        trigrams = _character_trigrams(response)
        if not trigrams:
            return Finding(False, f"{asked}; the response is under 3 characters")
        shared = len(trigrams & reference) / len(trigrams) * 100
        passed = target - _OVERLAP_TOLERANCE <= shared <= target + _OVERLAP_TOLERANCE
        return Finding(passed, f"{asked}; found {shared:.1f}%")

    return check


@register(
    "ratio:sentence_balance",
    rule="Write equally many declarative (.), interrogative (?) and exclamatory (!) sentences.",
    enforce=Enforcement("automaton", lambda: Steering(rules=rules(SentenceMarks(marks=".?!", parts=(1, 1, 1))))),
)
def sentence_balance() -> Check:
    """As many declarative ('.') as interrogative ('?') as exclamatory ('!') sentences.

    A sentence counts by its last character, so one that ends in a closing quote (``"stop."``) counts as none.
    """

    def check(response: str) -> Finding:
        sentences = split_sentences_punkt(response)
        passed = ending_count(sentences, ".") == ending_count(sentences, "?") == ending_count(sentences, "!")
        return Finding(passed, f"asked for as many '.' as '?' as '!' sentences; found {_endings(sentences, '.?!')}")

    return check


@register(
    "ratio:sentence_type",
    rule="Write twice as many declarative sentences (ending in '.') as questions (ending in '?').",
    enforce=Enforcement("automaton", lambda: Steering(rules=rules(SentenceMarks(marks=".?", parts=(2, 1))))),
)
def sentence_type() -> Check:
    """Exactly twice as many declarative ('.') as interrogative ('?') sentences, counted as in ``sentence_balance``."""

    def check(response: str) -> Finding:
        sentences = split_sentences_punkt(response)
        passed = ending_count(sentences, ".") == 2 * ending_count(sentences, "?")
        return Finding(passed, f"asked for twice as many '.' as '?' sentences; found {_endings(sentences, '.?')}")

    return check


@register(
    "ratio:sentence_words",
    rule="Write exactly three sentences, all of the same length in characters.",
    enforce=Enforcement("automaton", lambda: Steering(rules=rules(EqualSentences(count=3, length=_SENTENCE_LENGTH)))),
)
def sentence_words() -> Check:
    """Exactly three sentences, all of the same length in characters (surrounding whitespace
    ignored). Like IFBench's grader, the "all different words" part of the instruction is not checked."""

    def check(response: str) -> Finding:
        asked = "asked for 3 sentences of equal length"
        sentences = split_sentences_punkt(response)
        if len(sentences) != 3:
            return Finding(False, f"{asked}; found {plural(len(sentences), 'sentence')}")
        lengths = [len(sentence.strip()) for sentence in sentences]
        found = f"their lengths are {', '.join(map(str, lengths))} characters"
        return Finding(len(set(lengths)) == 1, f"{asked}; {found}")

    return check


@register(
    "ratio:stop_words",
    rule="Keep stop words (the, a, of, and, …) to at most {percentage}% of the words.",
    enforce=Enforcement(
        "automaton", lambda percentage: Steering(rules=rules(StopWordShare(percent=float(percentage))))
    ),
)
def stop_words(percentage: float) -> Check:
    """Stop words make up at most ``percentage`` % of the response's words."""
    limit = percent("percentage", percentage)

    def check(response: str) -> Finding:
        asked = f"asked for at most {limit:g}% stop words"
        stops, words = stop_share(response)
        if not words:
            return Finding(False, f"{asked}; found no words")
        share = stop_percent(stops, words)
        return Finding(share <= limit, f"{asked}; found {share:.1f}% ({stops} of {words} words)")

    return check
