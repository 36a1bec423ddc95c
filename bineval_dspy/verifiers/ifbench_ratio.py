"""IFBench ``ratio:*`` verifiers: proportions of sentence types, stop words and shared text."""

from __future__ import annotations

from bineval_dspy.verifiers.kwargs import percent
from bineval_dspy.verifiers.registry import Check, register
from bineval_dspy.verifiers.text import split_sentences_punkt, word_runs

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


@register("ratio:overlap")
def overlap(reference_text: str, percentage: float) -> Check:
    """The share of the response's character trigrams also found in ``reference_text`` is
    ``percentage`` ± 2 points (IFBench compares characters, not words)."""
    target = percent("percentage", percentage)
    reference = _character_trigrams(reference_text)

    def check(response: str) -> bool:
        trigrams = _character_trigrams(response)
        if not trigrams:
            return False
        shared = len(trigrams & reference) / len(trigrams) * 100
        return target - _OVERLAP_TOLERANCE <= shared <= target + _OVERLAP_TOLERANCE

    return check


@register("ratio:sentence_balance")
def sentence_balance() -> Check:
    """As many declarative ('.') as interrogative ('?') as exclamatory ('!') sentences.

    A sentence counts by its last character, so one that ends in a closing quote (``"stop."``) counts as none.
    """

    def check(response: str) -> bool:
        sentences = split_sentences_punkt(response)
        return _count_ending(sentences, ".") == _count_ending(sentences, "?") == _count_ending(sentences, "!")

    return check


@register("ratio:sentence_type")
def sentence_type() -> Check:
    """Exactly twice as many declarative ('.') as interrogative ('?') sentences, counted as in ``sentence_balance``."""

    def check(response: str) -> bool:
        sentences = split_sentences_punkt(response)
        return _count_ending(sentences, ".") == 2 * _count_ending(sentences, "?")

    return check


@register("ratio:sentence_words")
def sentence_words() -> Check:
    """Exactly three sentences, all of the same length in characters (surrounding whitespace
    ignored). Like IFBench's grader, the "all different words" part of the instruction is not checked."""

    def check(response: str) -> bool:
        sentences = split_sentences_punkt(response)
        return len(sentences) == 3 and len({len(sentence.strip()) for sentence in sentences}) == 1

    return check


@register("ratio:stop_words")
def stop_words(percentage: float) -> Check:
    """Stop words make up at most ``percentage`` % of the response's words."""
    limit = percent("percentage", percentage)

    def check(response: str) -> bool:
        words = word_runs(response)
        if not words:
            return False
        stops = sum(word.lower() in _STOP_WORDS for word in words)
        return stops / len(words) * 100 <= limit

    return check
