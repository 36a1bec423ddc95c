"""IFBench ``sentence:*`` verifiers; like IFBench's grader they split sentences as ``nltk.sent_tokenize`` does."""

from __future__ import annotations

import re

from bineval_dspy.verifiers.kwargs import nonblank_text, whole_number
from bineval_dspy.verifiers.registry import Check, register
from bineval_dspy.verifiers.text import PUNCTUATION_AND_SPACE, delete_ascii_punctuation, split_sentences_punkt


def _alliteration_score(sentence: str) -> int:
    """Alliterative words in a sentence: each run of words sharing a first letter scores its length."""
    words = [word.lstrip(PUNCTUATION_AND_SPACE) for word in sentence.lower().split()]
    words = [word for word in words if word]
    score = 0
    in_run = False
    for word, following in zip(words, words[1:]):
        if word[0] == following[0]:
            score += 1 if in_run else 2
            in_run = True
        else:
            in_run = False
    return score


@register("sentence:alliteration_increment")
def alliteration_increment() -> Check:
    """Each sentence has more alliterative words than the one before."""

    def check(response: str) -> bool:
        scores = [_alliteration_score(sentence) for sentence in split_sentences_punkt(response)]
        return all(later > earlier for earlier, later in zip(scores, scores[1:]))

    return check


@register("sentence:increment")
def increment(small_n: float) -> Check:
    """Each sentence has exactly ``small_n`` more words than the one before."""
    step = whole_number("small_n", small_n)

    def check(response: str) -> bool:
        sentences = split_sentences_punkt(response)
        counts = [len(delete_ascii_punctuation(sentence).split()) for sentence in sentences]
        return all(later == earlier + step for earlier, later in zip(counts, counts[1:]))

    return check


@register("sentence:keyword")
def keyword(word: str, N: float) -> Check:
    """The ``N``-th sentence contains ``word`` as a whole word (case-insensitive)."""
    position = whole_number("N", N, minimum=1)
    escaped = re.escape(nonblank_text("word", word))
    pattern = re.compile(rf"\b{escaped}\b", re.IGNORECASE)

    def check(response: str) -> bool:
        sentences = split_sentences_punkt(response)
        return len(sentences) >= position and bool(pattern.search(sentences[position - 1]))

    return check
