"""IFBench ``sentence:*`` verifiers; like IFBench's grader they split sentences as ``nltk.sent_tokenize`` does."""

from __future__ import annotations

import re

from bineval_dspy.core.text import split_sentences_punkt
from bineval_dspy.enforce.kinds.sentences import SentencePlan, alliteration_score, sentence_words
from bineval_dspy.enforce.rules import rules
from bineval_dspy.enforce.steering import Steering
from bineval_dspy.verifiers.kwargs import nonblank_text, whole_number
from bineval_dspy.verifiers.registry import Check, Enforcement, Finding, ordinal, plural, quote, register


@register(
    "sentence:alliteration_increment",
    rule="Make each sentence more alliterative than the one before it, with more words sharing first letters.",
    enforce=Enforcement("automaton", lambda: Steering(rules=rules(SentencePlan(alliteration=True)))),
)
def alliteration_increment() -> Check:
    """Each sentence has more alliterative words than the one before."""

    def check(response: str) -> Finding:
        scores = [alliteration_score(sentence) for sentence in split_sentences_punkt(response)]
        passed = all(later > earlier for earlier, later in zip(scores, scores[1:]))
        found = f"alliterative words per sentence: {', '.join(map(str, scores[:8]))}{', …' if len(scores) > 8 else ''}"
        return Finding(passed, f"asked for more alliteration in each sentence; {found}")

    return check


@register(
    "sentence:increment",
    rule=lambda small_n: f"Make each sentence exactly {plural(small_n, 'word')} longer than the one before it.",
    enforce=Enforcement("automaton", lambda small_n: Steering(rules=rules(SentencePlan(step=int(small_n))))),
)
def increment(small_n: float) -> Check:
    """Each sentence has exactly ``small_n`` more words than the one before."""
    step = whole_number("small_n", small_n)

    def check(response: str) -> Finding:
        sentences = split_sentences_punkt(response)
        counts = [sentence_words(sentence) for sentence in sentences]
        passed = all(later == earlier + step for earlier, later in zip(counts, counts[1:]))
        found = f"words per sentence: {', '.join(map(str, counts[:8]))}{', …' if len(counts) > 8 else ''}"
        return Finding(passed, f"asked for each sentence {plural(step, 'word')} longer; {found}")

    return check


@register(
    "sentence:keyword",
    rule=lambda word, N: f"Use the word '{word}' in the {ordinal(N)} sentence.",
    enforce=Enforcement("automaton", lambda word, N: Steering(rules=rules(SentencePlan(keywords=((int(N), word),))))),
)
def keyword(word: str, N: float) -> Check:
    """The ``N``-th sentence contains ``word`` as a whole word (case-insensitive)."""
    position = whole_number("N", N, minimum=1)
    word = nonblank_text("word", word)
    pattern = re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)

    def check(response: str) -> Finding:
        asked = f"asked for {quote(word)} in the {ordinal(position)} sentence"
        sentences = split_sentences_punkt(response)
        if len(sentences) < position:
            return Finding(False, f"{asked}; found {plural(len(sentences), 'sentence')}")
        sentence = sentences[position - 1]
        if pattern.search(sentence):
            return Finding(True, f"{asked}; it is there")
        return Finding(False, f"{asked}; that sentence, {quote(sentence, 40)}, lacks it")

    return check
