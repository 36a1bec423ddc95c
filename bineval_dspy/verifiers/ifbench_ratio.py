"""IFBench ``ratio:*`` verifiers: proportions of sentence types, stop words and shared text."""

from __future__ import annotations

from bineval_dspy.core.text import split_sentences_punkt, word_runs
from bineval_dspy.verifiers.kwargs import percent
from bineval_dspy.verifiers.registry import Check, Finding, plural, register

# NLTK's English stop-word list, the one IFBench's ``ratio:stop_words`` grader counts.
_STOP_WORDS = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them
    their theirs themselves what which who whom this that that'll these those am is are was
    were be been being have has had having do does did doing a an the and but if or because
    as until while of at by for with about against between into through during before after
    above below to from up down in out on off over under again further then once here there
    when where why how all any both each few more most other some such no nor not only own
    same so than too very s t can will just don don't should should've now d ll m o re ve y
    ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven
    haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn
    shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
    """.split()
)

_OVERLAP_TOLERANCE = 2


def _character_trigrams(text: str) -> set[str]:
    """The distinct three-character substrings of ``text``."""
    return {text[i : i + 3] for i in range(len(text) - 2)}


def _count_ending(sentences: list[str], mark: str) -> int:
    """How many sentences end with ``mark``."""
    return sum(sentence.endswith(mark) for sentence in sentences)


def _endings(sentences: list[str], marks: str) -> str:
    """'5 ending '.', 1 ending '?'': how many sentences end with each of ``marks``."""
    return ", ".join(f"{_count_ending(sentences, mark)} ending '{mark}'" for mark in marks)


@register(
    "ratio:overlap",
    rule="Reuse the given text so that about {percentage}% of the response overlaps it (within 2 points, "
    "counting shared three-character sequences).",
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
)
def sentence_balance() -> Check:
    """As many declarative ('.') as interrogative ('?') as exclamatory ('!') sentences.

    A sentence counts by its last character, so one that ends in a closing quote (``"stop."``) counts as none.
    """

    def check(response: str) -> Finding:
        sentences = split_sentences_punkt(response)
        passed = _count_ending(sentences, ".") == _count_ending(sentences, "?") == _count_ending(sentences, "!")
        return Finding(passed, f"asked for as many '.' as '?' as '!' sentences; found {_endings(sentences, '.?!')}")

    return check


@register(
    "ratio:sentence_type",
    rule="Write twice as many declarative sentences (ending in '.') as questions (ending in '?').",
)
def sentence_type() -> Check:
    """Exactly twice as many declarative ('.') as interrogative ('?') sentences, counted as in ``sentence_balance``."""

    def check(response: str) -> Finding:
        sentences = split_sentences_punkt(response)
        passed = _count_ending(sentences, ".") == 2 * _count_ending(sentences, "?")
        return Finding(passed, f"asked for twice as many '.' as '?' sentences; found {_endings(sentences, '.?')}")

    return check


@register("ratio:sentence_words", rule="Write exactly three sentences, all of the same length in characters.")
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


@register("ratio:stop_words", rule="Keep stop words (the, a, of, and, …) to at most {percentage}% of the words.")
def stop_words(percentage: float) -> Check:
    """Stop words make up at most ``percentage`` % of the response's words."""
    limit = percent("percentage", percentage)

    def check(response: str) -> Finding:
        asked = f"asked for at most {limit:g}% stop words"
        words = word_runs(response)
        if not words:
            return Finding(False, f"{asked}; found no words")
        stops = sum(word.lower() in _STOP_WORDS for word in words)
        share = stops / len(words) * 100
        return Finding(share <= limit, f"{asked}; found {share:.1f}% ({stops} of {len(words)} words)")

    return check
