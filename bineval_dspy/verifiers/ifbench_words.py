"""IFBench ``words:*`` verifiers: constraints on the letters, lengths, syllables, order and
positions of the response's words."""

from __future__ import annotations

import re
import string
from collections import Counter

import syllapy

from bineval_dspy.core.text import (
    PUNCTUATION_AND_SPACE,
    delete_ascii_punctuation,
    split_sentences_punkt,
    word_tokenize_nltk,
)
from bineval_dspy.enforce.kinds.letters import OneLine, VowelKinds
from bineval_dspy.enforce.kinds.word_links import KeywordAt, LineEcho, SentenceChain
from bineval_dspy.enforce.kinds.word_places import LeadWord, Palindromes, SecondToLast
from bineval_dspy.enforce.kinds.words import CONSONANTS as _CONSONANTS
from bineval_dspy.enforce.kinds.words import PRIME_LENGTHS as _PRIME_LENGTHS  # IFBench's grader knows those below 100
from bineval_dspy.enforce.kinds.words import VOWELS as _VOWELS
from bineval_dspy.enforce.kinds.words import words
from bineval_dspy.enforce.rules import rules
from bineval_dspy.enforce.steering import Steering
from bineval_dspy.verifiers.kwargs import nonblank_text, whole_number
from bineval_dspy.verifiers.registry import (
    Check,
    Enforcement,
    Finding,
    ordinal,
    plural,
    quote,
    quote_list,
    register,
    tally,
)


def _plain_words(text: str) -> list[str]:
    """Lower-cased whitespace-separated words with ASCII punctuation deleted."""
    return delete_ascii_punctuation(text.lower()).split()


# --- verb detection ----------------------------------------------------------------------
# IFBench tags the first token with NLTK's perceptron POS tagger and accepts any VB* tag.
# We recognise verbs from a lexicon instead: forms of common verbs (base, -s, -ed, -ing and
# irregular forms), plus any other word ending in "-ing" or "-ed".

_IRREGULAR_VERB_FORMS = frozenset(
    """
    am is are was were be been being has have had having do does did done doing go goes went
    gone going get gets got gotten make made take took taken give gave given see saw seen come
    came know knew known think thought find found tell told say says said become became leave
    feel felt bring brought begin began begun keep kept hold held write wrote written stand
    stood hear heard let lets mean meant set meet met run ran pay paid sit sat speak spoke
    spoken lead led read grow grew grown lose lost fall fell fallen send sent build built
    understand understood draw drew drawn break broke broken spend spent cut rise rose risen
    drive drove driven buy bought wear wore worn choose chose chosen seek sought throw threw
    thrown catch caught deal dealt win won forget forgot forgotten sell sold fight fought teach
    taught eat ate eaten sing sang sung swim swam fly flew flown hide hid hidden shake shook
    steal stole stolen sleep slept shine shone shoot shot feed fed dig dug hang hung strike
    struck swing swung wake woke woken forgive forgave forgiven freeze froze frozen bite bit
    bitten blow blew blown put
    """.split()
)

_REGULAR_VERBS = frozenset(
    """
    accept achieve add adjust adopt allow analyze answer apply appreciate arrange ask assess
    assume attach avoid bake balance believe boil boost browse calculate call care celebrate
    change check chop clarify clean click climb close collect combine compare complete consider
    contact contemplate continue control convert cook count craft create cross dance decide
    define delete deliver describe design determine develop discover discuss dive embrace
    emphasize enable encourage engage enhance enjoy ensure enter envision establish estimate
    evaluate examine expand experience explain explore express fill finish focus follow gather
    greet guide handle happen heat help highlight identify ignore imagine implement improve
    include increase install introduce invest invite join jump keep kick laugh learn like list
    listen live load look love maintain manage mark measure mention minimize mix monitor move
    name navigate need note notice observe obtain offer open optimize order organize outline
    paint pause picture place plan play pour practice preheat prepare present press prevent
    print proceed protect provide pull push reach realize recall receive recognize recommend
    record reduce reflect refer relax remember remove repeat replace reply request research
    resolve respond rest return review save schedule search select separate serve share shift
    show simplify slice smile solve sort start stay step stir stop structure study submit
    suggest summarize support suppose surround talk taste test thank touch track train
    transform travel treat try turn type unleash unlock update use utilize verify visit
    visualize wait walk want warn wash watch welcome whisper wish wonder work worry
    """.split()
)

# Words ending in "-ing"/"-ed" that are not verb forms, and verb forms that rarely start a
# sentence as verbs (nouns, adjectives and prepositions the tagger would choose instead).
_NOT_VERBS = frozenset(
    """
    anything bed ceiling darling during everything evening hundred indeed king kindred morning
    naked nothing pudding red ring sacred seed sibling something speed spring string thing
    united wedding wicked wing
    """.split()
)

# A capitalised first word followed by one of these is a subject or a heading ("Love is ...",
# "Plan:"), not a verb.
_SUBJECT_FOLLOWERS = frozenset("is are was were has have had can could will would should may might must of :".split())


def _verb_forms(base: str) -> set[str]:
    """The -s, -ed and -ing forms of a regular English verb, with the usual spelling rules."""
    if base.endswith("e"):
        stem_ing, past = base[:-1] + "ing", base + "d"
    elif base.endswith("y") and base[-2] not in _VOWELS:
        stem_ing, past = base + "ing", base[:-1] + "ied"
    else:
        stem_ing, past = base + "ing", base + "ed"
    third = base[:-1] + "ies" if base.endswith("y") and base[-2] not in _VOWELS else base + "s"
    if base.endswith(("s", "sh", "ch", "x", "z", "o")):
        third = base + "es"
    if re.fullmatch(r"[^aeiou]*[aeiou][bdgmnprt]", base):
        stem_ing, past = base + base[-1] + "ing", base + base[-1] + "ed"
    return {base, third, past, stem_ing}


_VERB_FORMS = _IRREGULAR_VERB_FORMS | frozenset(form for base in _REGULAR_VERBS for form in _verb_forms(base))


# The first words a steered reply may open with: imperative verbs (with "words:start_verb"), and openers a keyword
# can follow as the second word (with "words:words_position": none begins another, so the first word is known to
# be complete when written).
_AUXILIARIES = frozenset("am is are was were be been being has have had having do does did done doing".split())
_LEAD_VERBS = tuple(sorted((_REGULAR_VERBS | _IRREGULAR_VERB_FORMS) - _AUXILIARIES - _NOT_VERBS))
_OPENERS = ("each", "every", "in", "its", "my", "one", "our", "some", "such", "the", "this", "your")


def _looks_like_verb(word: str, following: str | None) -> bool:
    """Whether a POS tagger would tag ``word`` (the first token) as a verb, by lexicon and suffix."""
    lower = word.lower()
    if not word.isalpha() or lower in _NOT_VERBS or (following or "").lower() in _SUBJECT_FOLLOWERS:
        return False
    return lower in _VERB_FORMS or (len(lower) > 4 and lower.endswith(("ing", "ed")))


# --- verifiers ---------------------------------------------------------------------------


@register(
    "words:alphabet",
    rule="Start each word with the letter after the previous word's first letter in the alphabet (a, b, c, …, "
    "wrapping from z to a).",
    enforce=Enforcement("mask", lambda: Steering(rules=rules(words("alphabet")))),
)
def alphabet() -> Check:
    """Word initials follow the alphabet, each word starting with the letter after the previous
    word's (wrapping from 'z' to 'a'); the first word may start with any letter."""

    def check(response: str) -> Finding:
        asked = "asked for word initials in alphabetical sequence"
        words = delete_ascii_punctuation(response).split()
        if not words or words[0][0].lower() not in string.ascii_lowercase:
            first = quote(words[0], 20) if words else "missing"
            return Finding(False, f"{asked}; the first word, {first}, does not start with a letter a-z")
        letter = words[0][0].lower()
        for position, word in enumerate(words[1:], start=2):
            letter = chr((ord(letter) - ord("a") + 1) % 26 + ord("a"))
            if word.lower()[0] != letter:
                return Finding(False, f"{asked}; word {position}, {quote(word, 20)}, should start with {letter!r}")
        return Finding(True, f"{asked}; every word follows it")

    return check


@register(
    "words:consonants",
    rule="Use only words that contain two consonants in a row, such as 'street' or 'bring'.",
    enforce=Enforcement("mask", lambda: Steering(rules=rules(words("cluster")))),
)
def consonants() -> Check:
    """Every whitespace-separated word contains two consecutive consonant letters."""

    def has_cluster(word: str) -> bool:
        return any(a in _CONSONANTS and b in _CONSONANTS for a, b in zip(word, word[1:]))

    def check(response: str) -> Finding:
        lacking = [word for word in response.lower().split() if not has_cluster(word)]
        asked = "asked for two consonants in a row in every word"
        if lacking:
            return Finding(False, f"{asked}; {plural(len(lacking), 'word')} lack them: {quote_list(lacking)}")
        return Finding(True, f"{asked}; every word has them")

    return check


@register(
    "words:keywords_specific_position",
    rule=lambda keyword, n, m: f"Make '{keyword.strip()}' the {ordinal(m)} word of the {ordinal(n)} sentence.",
    enforce=Enforcement(
        "forced",
        lambda keyword, n, m: Steering(rules=rules(KeywordAt(keyword=keyword.strip(), sentence=int(n), word=int(m)))),
    ),
)
def keywords_specific_position(keyword: str, n: float, m: float) -> Check:
    """``keyword`` is the ``m``-th word of the ``n``-th sentence (punctuation tokens not counted)."""
    target = nonblank_text("keyword", keyword).strip().lower()
    sentence_index = whole_number("n", n, minimum=1) - 1
    word_index = whole_number("m", m, minimum=1) - 1

    def check(response: str) -> Finding:
        where = f"the {ordinal(word_index + 1)} word of the {ordinal(sentence_index + 1)} sentence"
        asked = f"asked for {quote(target)} as {where}"
        sentences = split_sentences_punkt(response)
        if len(sentences) <= sentence_index:
            return Finding(False, f"{asked}; found {plural(len(sentences), 'sentence')}")
        words = [token for token in word_tokenize_nltk(sentences[sentence_index]) if any(ch.isalnum() for ch in token)]
        if len(words) <= word_index:
            return Finding(False, f"{asked}; that sentence has {plural(len(words), 'word')}")
        found = words[word_index]
        return Finding(found.lower() == target, f"{asked}; that word is {quote(found, 20)}")

    return check


@register(
    "words:last_first",
    rule="Start each sentence with the word that ended the sentence before it.",
    enforce=Enforcement("forced", lambda: Steering(rules=rules(SentenceChain()))),
)
def last_first() -> Check:
    """The last word of each sentence is the first word of the next (case-insensitive)."""

    def check(response: str) -> Finding:
        asked = "asked for each sentence to start with the previous one's last word"
        sentences = split_sentences_punkt(response)
        for number, (sentence, following) in enumerate(zip(sentences, sentences[1:]), start=2):
            last_words = sentence.rstrip(PUNCTUATION_AND_SPACE).split()
            first_words = following.lstrip(PUNCTUATION_AND_SPACE).split()
            if not last_words or not first_words:
                empty = number if last_words else number - 1
                return Finding(False, f"{asked}; the {ordinal(empty)} sentence has no words")
            if last_words[-1].lower() != first_words[0].lower():
                found = f"{quote(last_words[-1], 20)} ends one sentence, {quote(first_words[0], 20)} starts the next"
                return Finding(False, f"{asked}; {found}")
        return Finding(True, f"{asked}; every sentence does")

    return check


@register(
    "words:no_consecutive",
    rule="Never let two consecutive words start with the same letter.",
    enforce=Enforcement("mask", lambda: Steering(rules=rules(words("new_initial")))),
)
def no_consecutive() -> Check:
    """No two consecutive words start with the same letter."""

    def check(response: str) -> Finding:
        words = _plain_words(response)
        pairs = [f"{word} {following}" for word, following in zip(words, words[1:]) if word[0] == following[0]]
        return Finding(
            not pairs, f"asked for no two neighbouring words with the same first letter; found {tally(pairs)}"
        )

    return check


@register(
    "words:odd_even_syllables",
    rule="Alternate between words with an odd and an even number of syllables.",
    enforce=Enforcement("mask", lambda: Steering(rules=rules(words("syllable_parity")))),
)
def odd_even_syllables() -> Check:
    """Words alternate between odd and even syllable counts, counted by ``syllapy`` as IFBench does."""

    def check(response: str) -> Finding:
        asked = "asked for words alternating odd and even syllable counts"
        words = _plain_words(response)
        counts = [syllapy.count(word) for word in words]
        for index, (count, following) in enumerate(zip(counts, counts[1:])):
            if count % 2 == following % 2:
                pair = f"{quote(words[index], 20)} ({count}) then {quote(words[index + 1], 20)} ({following})"
                return Finding(False, f"{asked}; found {pair}")
        return Finding(True, f"{asked}; they do")

    return check


@register(
    "words:palindrome",
    rule="Use at least 10 palindromes of five or more letters, such as 'level', 'radar' or 'racecar'.",
    enforce=Enforcement("forced", lambda: Steering(rules=rules(Palindromes(count=10, least=5)))),
)
def palindrome() -> Check:
    """At least 10 palindrome words (repeats count) of at least 5 characters."""

    def check(response: str) -> Finding:
        found = [word for word in _plain_words(response) if len(word) >= 5 and word == word[::-1]]
        return Finding(len(found) >= 10, f"asked for at least 10 palindromes of 5+ letters; found {tally(found)}")

    return check


@register(
    "words:paragraph_last_first",
    rule="End every paragraph (line) with the same word it starts with.",
    enforce=Enforcement("forced", lambda: Steering(rules=rules(LineEcho()))),
)
def paragraph_last_first() -> Check:
    """Each non-empty line ends with the word it starts with (case-insensitive; punctuation
    inside the text, e.g. a comma after the first word, still counts)."""

    def check(response: str) -> Finding:
        asked = "asked for each line to end with its first word"
        for line in response.split("\n"):
            words = line.strip().lower().strip(PUNCTUATION_AND_SPACE).split()
            if words and words[0] != words[-1]:
                found = f"{quote(line.strip(), 40)} starts {quote(words[0], 15)} but ends {quote(words[-1], 15)}"
                return Finding(False, f"{asked}; {found}")
        return Finding(True, f"{asked}; every line does")

    return check


@register(
    "words:prime_lengths",
    rule="Use only words whose length is a prime number of letters (2, 3, 5, 7, 11, …).",
    enforce=Enforcement("mask", lambda: Steering(rules=rules(words("prime_length")))),
)
def prime_lengths() -> Check:
    """Every word (ASCII punctuation deleted) has a prime number of characters."""

    def check(response: str) -> Finding:
        wrong = [word for word in delete_ascii_punctuation(response).split() if len(word) not in _PRIME_LENGTHS]
        asked = "asked for words of prime length only"
        if wrong:
            shown = ", ".join(f"{quote(word, 15)} ({len(word)})" for word in wrong[:3]) + (
                ", …" if len(wrong) > 3 else ""
            )
            return Finding(False, f"{asked}; found {plural(len(wrong), 'other word')}: {shown}")
        return Finding(True, f"{asked}; every word has one")

    return check


@register(
    "words:repeats",
    rule=lambda small_n: f"Use no word more than {plural(small_n, 'time')}.",
    enforce=Enforcement("mask", lambda small_n: Steering(rules=rules(words("most_uses", most=int(small_n))))),
)
def repeats(small_n: float) -> Check:
    """No word (case-insensitive, punctuation deleted) occurs more than ``small_n`` times."""
    limit = whole_number("small_n", small_n)

    def check(response: str) -> Finding:
        asked = f"asked for no word more than {plural(limit, 'time')}"
        over = [(word, count) for word, count in Counter(_plain_words(response)).most_common() if count > limit]
        if over:
            shown = ", ".join(f"{quote(word, 15)} {count} times" for word, count in over[:3])
            return Finding(False, f"{asked}; found {shown}{', …' if len(over) > 3 else ''}")
        return Finding(True, f"{asked}; none is")

    return check


@register(
    "words:start_verb",
    rule="Start the response with a verb.",
    enforce=Enforcement(
        "mask", lambda: Steering(rules=rules(LeadWord(words=_LEAD_VERBS, refuse_next=tuple(sorted(_SUBJECT_FOLLOWERS)))))
    ),
)
def start_verb() -> Check:
    """The response starts with a verb (lexicon-based stand-in for IFBench's POS tagger)."""

    def check(response: str) -> Finding:
        tokens = word_tokenize_nltk(response)
        if not tokens:
            return Finding(False, "asked to start with a verb; found no words")
        first = quote(tokens[0], 20)
        if _looks_like_verb(tokens[0], tokens[1] if len(tokens) > 1 else None):
            return Finding(True, f"asked to start with a verb; it starts with {first}")
        return Finding(False, f"asked to start with a verb; it starts with {first}, not a verb")

    return check


@register(
    "words:vowel",
    rule="Write a single paragraph, with no line breaks, using no more than three different vowels.",
    enforce=Enforcement("mask", lambda: Steering(rules=rules(VowelKinds(most=3), OneLine()))),
)
def vowel() -> Check:
    """A single paragraph (no line breaks) that uses at most three distinct vowels."""

    def check(response: str) -> Finding:
        asked = "asked for one line using at most 3 different vowels"
        lines = response.strip().split("\n")
        if len(lines) != 1:
            return Finding(False, f"{asked}; found {plural(len(lines), 'line')}")
        used = sorted(_VOWELS & set(lines[0].lower()))
        return Finding(len(used) <= 3, f"{asked}; found {plural(len(used), 'vowel')}: {', '.join(used) or 'none'}")

    return check


@register(
    "words:words_position",
    rule=lambda keyword: f"Make '{keyword.strip()}' both the second word and the second-to-last word of the response.",
    enforce=Enforcement(
        "forced",
        lambda keyword: Steering(
            rules=rules(LeadWord(words=_OPENERS, then=" " + keyword.strip()), SecondToLast(keyword=keyword.strip()))
        ),
    ),
)
def words_position(keyword: str) -> Check:
    """The second word and the second-to-last word are both ``keyword`` (a final punctuation
    token is not counted as a word)."""
    target = nonblank_text("keyword", keyword).strip().lower()

    def check(response: str) -> Finding:
        asked = f"asked for {quote(target)} as the second and second-to-last word"
        tokens = word_tokenize_nltk(response)
        if tokens and tokens[-1] in string.punctuation:
            tokens = tokens[:-1]
        if len(tokens) < 2:
            return Finding(False, f"{asked}; found {plural(len(tokens), 'word')}")
        passed = tokens[1].lower() == tokens[-2].lower() == target
        return Finding(passed, f"{asked}; they are {quote(tokens[1], 20)} and {quote(tokens[-2], 20)}")

    return check
