"""Code verifiers for the IFEval instructions on case, combination, keywords and language, following google-research's
``instruction_following_eval`` semantics without NLTK (see ``text`` for the Punkt and Treebank stand-ins); the
reply's shape (content, format, length, punctuation, start and end) is checked in ``ifeval_format``."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path

from langdetect import DetectorFactory, detect
from langdetect.detector_factory import PROFILES_DIRECTORY, init_factory
from langdetect.lang_detect_exception import LangDetectException

from bineval_dspy.core.text import trim_punctuation, word_tokenize_nltk
from bineval_dspy.enforce.steering import Steering, Structure
from bineval_dspy.verifiers.kwargs import comparison, nonblank_text, single_letter, whole_number, word_list
from bineval_dspy.verifiers.registry import (
    Check,
    Enforcement,
    Finding,
    joined,
    plural,
    quote,
    quote_list,
    register,
    tally,
)

_LANGUAGE_NAMES = {
    "af": "Afrikaans", "ar": "Arabic", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan", "cs": "Czech",
    "cy": "Welsh", "da": "Danish", "de": "German", "el": "Greek", "en": "English", "es": "Spanish",
    "et": "Estonian", "fa": "Persian", "fi": "Finnish", "fr": "French", "gu": "Gujarati", "he": "Hebrew",
    "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "id": "Indonesian", "it": "Italian", "ja": "Japanese",
    "kn": "Kannada", "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "mk": "Macedonian", "ml": "Malayalam",
    "mr": "Marathi", "ne": "Nepali", "nl": "Dutch", "no": "Norwegian", "pa": "Punjabi", "pl": "Polish",
    "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak", "sl": "Slovenian", "so": "Somali",
    "sq": "Albanian", "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "th": "Thai",
    "tl": "Tagalog", "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese",
    "zh-cn": "Simplified Chinese", "zh-tw": "Traditional Chinese",
}  # fmt: skip


def compared(actual: int, relation: str, threshold: int) -> bool:
    """IFEval's two relations: 'less than' is strict, 'at least' is inclusive."""
    return actual < threshold if relation == "less than" else actual >= threshold


def fewer(relation: str) -> str:
    """The relation as English for things counted: 'fewer than', not 'less than'."""
    return "fewer than" if relation == "less than" else relation


@cache
def _langdetect_languages() -> frozenset[str]:
    """Language codes langdetect ships profiles for, to reject codes that can never match."""
    return frozenset(path.name for path in Path(PROFILES_DIRECTORY).iterdir())


_FACTORY_LOCK = threading.Lock()


def _detect_language(text: str) -> str | None:
    """langdetect's language code for ``text`` (seeded for determinism); None when undetectable.

    langdetect loads its profiles lazily into a global on the first call, unguarded: a second thread arriving while
    the first loads sees a half-filled factory and detects wrongly (responses graded in parallel got different
    verdicts in one run than in the next). The profiles are loaded once under a lock first."""
    DetectorFactory.seed = 0
    with _FACTORY_LOCK:
        init_factory()
    try:
        return detect(text)
    except LangDetectException:
        return None


def _language_name(code: str) -> str:
    """'Hindi' for 'hi'; the code itself for one without a name here."""
    return _LANGUAGE_NAMES.get(code, code)


def _words_with(response: str, has: Callable[[str], bool]) -> list[str]:
    """The whitespace words holding a character for which ``has`` holds, punctuation trimmed for quoting."""
    return [trim_punctuation(word) or word for word in response.split() if any(has(char) for char in word)]


@register(
    "change_case:capital_word_frequency",
    rule=lambda capital_frequency, capital_relation: (
        f"Use {fewer(capital_relation)} {plural(capital_frequency, 'word')} written entirely in capital letters."
    ),
)
def capital_word_frequency(capital_frequency: int, capital_relation: str) -> Check:
    threshold = whole_number("capital_frequency", capital_frequency)
    relation = comparison("capital_relation", capital_relation)

    def check(response: str) -> Finding:
        capitals = [token for token in word_tokenize_nltk(response) if token.isupper()]
        asked = f"asked for {fewer(relation)} {plural(threshold, 'all-capital word')}"
        return Finding(compared(len(capitals), relation, threshold), f"{asked}; found {tally(capitals)}")

    return check


@register(
    "change_case:english_capital",
    rule="Write the whole response in English, in capital letters only.",
    enforce=Enforcement("mask", lambda: Steering(case="upper")),
)
def english_capital() -> Check:
    def check(response: str) -> Finding:
        asked = "asked for English in capital letters only"
        if not response.isupper():
            lower = _words_with(response, str.islower)
            found = (
                f"{plural(len(lower), 'word')} with lowercase letters: {quote_list(lower)}" if lower else "no letters"
            )
            return Finding(False, f"{asked}; found {found}")
        # Like IFEval, text langdetect cannot classify counts as English.
        language = _detect_language(response)
        if language not in ("en", None):
            return Finding(False, f"{asked}; it reads as {_language_name(language)}")
        return Finding(True, f"{asked}; found no lowercase letters")

    return check


@register(
    "change_case:english_lowercase",
    rule="Write the whole response in English and in lowercase letters, with no capitals.",
    enforce=Enforcement("mask", lambda: Steering(case="lower")),
)
def english_lowercase() -> Check:
    def check(response: str) -> Finding:
        asked = "asked for all lowercase letters"
        if not response.islower():
            upper = _words_with(response, str.isupper)
            found = f"{plural(len(upper), 'word')} with capitals: {quote_list(upper)}" if upper else "no letters"
            return Finding(False, f"{asked}; found {found}")
        language = _detect_language(response)
        if language not in ("en", None):
            return Finding(False, f"{asked} in English; it reads as {_language_name(language)}")
        return Finding(True, f"{asked}; found no capitals")

    return check


@register(
    "combination:repeat_prompt",
    rule=lambda prompt_to_repeat: (
        f"Begin the response by repeating the request word for word, with nothing before it "
        f"({quote(prompt_to_repeat, 60)}), then answer it."
    ),
    enforce=Enforcement("forced", lambda prompt_to_repeat: Steering(lead=prompt_to_repeat.strip() + "\n")),
)
def repeat_prompt(prompt_to_repeat: str) -> Check:
    expected = nonblank_text("prompt_to_repeat", prompt_to_repeat).strip().lower()

    def check(response: str) -> Finding:
        asked = "asked to begin by repeating the request word for word"
        actual = response.strip().lower()
        if actual.startswith(expected):
            return Finding(True, f"{asked}; it does")
        same = len(os.path.commonprefix([actual, expected]))
        if not same:
            return Finding(
                False, f"{asked}; it begins {quote(actual, 25)} where the request begins {quote(expected, 25)}"
            )
        diverges = f"after {plural(same, 'matching character')} it has {quote(actual[same:], 20)}"
        return Finding(False, f"{asked}; {diverges} where the request has {quote(expected[same:], 20)}")

    return check


@register(
    "combination:two_responses",
    rule="Give two different responses, separated by six asterisks: ******.",
    enforce=Enforcement("automaton", lambda: Steering(structure=Structure(kind="two_responses", count=2))),
)
def two_responses() -> Check:
    def check(response: str) -> Finding:
        asked = "asked for two different responses separated by ******"
        parts = response.split("******")
        answers = []
        for index, part in enumerate(parts):
            if part.strip():
                answers.append(part.strip())
            elif 0 < index < len(parts) - 1:
                return Finding(False, f"{asked}; found an empty response between two ****** separators")
        if len(answers) != 2:
            separators = "" if len(parts) > 1 else " (no ****** separator)"
            return Finding(False, f"{asked}; found {plural(len(answers), 'response')}{separators}")
        if answers[0] == answers[1]:
            return Finding(False, f"{asked}; the two responses are identical")
        return Finding(True, f"{asked}; found two different ones")

    return check


@register(
    "keywords:existence",
    rule=lambda keywords: f"Include the keywords {joined([word.strip() for word in keywords])} in the response.",
)
def existence(keywords: list[str]) -> Check:
    words = word_list("keywords", keywords)
    patterns = [re.compile(re.escape(word), re.IGNORECASE) for word in words]

    def check(response: str) -> Finding:
        missing = [word for word, pattern in zip(words, patterns) if not pattern.search(response)]
        asked = f"asked to include {quote_list(words)}"
        if missing:
            return Finding(False, f"{asked}; missing {quote_list(missing)}")
        return Finding(True, f"{asked}; all appear")

    return check


@register(
    "keywords:forbidden_words",
    rule=lambda forbidden_words: (
        f"Do not use the {'word' if len(forbidden_words) == 1 else 'words'} "
        f"{joined([word.strip() for word in forbidden_words])}."
    ),
    enforce=Enforcement(
        "mask", lambda forbidden_words: Steering(forbidden_words=tuple(w.strip() for w in forbidden_words))
    ),
)
def forbidden_words(forbidden_words: list[str]) -> Check:
    words = word_list("forbidden_words", forbidden_words)
    patterns = [re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE) for word in words]

    def check(response: str) -> Finding:
        found = [match.group() for pattern in patterns if (match := pattern.search(response))]
        asked = f"asked to avoid {quote_list(words)}"
        if found:
            return Finding(False, f"{asked}; found {quote_list(found)}")
        return Finding(True, f"{asked}; none appears")

    return check


@register(
    "keywords:frequency",
    rule=lambda keyword, frequency, relation: (
        f"Use the word '{keyword.strip()}' {fewer(relation)} {plural(frequency, 'time')}."
    ),
)
def keyword_frequency(keyword: str, frequency: int, relation: str) -> Check:
    # Substring occurrences, case-insensitive, as in IFEval ("cat" counts inside "category").
    word = nonblank_text("keyword", keyword).strip()
    pattern = re.compile(re.escape(word), re.IGNORECASE)
    threshold = whole_number("frequency", frequency)
    relation = comparison("relation", relation)

    def check(response: str) -> Finding:
        count = len(pattern.findall(response))
        asked = f"asked for {quote(word)} {fewer(relation)} {plural(threshold, 'time')}"
        return Finding(compared(count, relation, threshold), f"{asked}; it occurs {plural(count, 'time')}")

    return check


@register(
    "keywords:letter_frequency",
    rule=lambda letter, let_frequency, let_relation: (
        f"Use the letter '{letter}' {fewer(let_relation)} {plural(let_frequency, 'time')}."
    ),
)
def letter_frequency(letter: str, let_frequency: int, let_relation: str) -> Check:
    target = single_letter("letter", letter).lower()
    threshold = whole_number("let_frequency", let_frequency)
    relation = comparison("let_relation", let_relation)

    def check(response: str) -> Finding:
        count = response.lower().count(target)
        asked = f"asked for the letter {quote(target)} {fewer(relation)} {plural(threshold, 'time')}"
        return Finding(compared(count, relation, threshold), f"{asked}; it occurs {plural(count, 'time')}")

    return check


@register(
    "language:response_language",
    rule=lambda language: f"Write the whole response in {_language_name(language)}, and no other language.",
)
def response_language(language: str) -> Check:
    if language not in _langdetect_languages():
        raise ValueError(f"language must be a langdetect language code, got {language!r}")

    def check(response: str) -> Finding:
        asked = f"asked for {_language_name(language)}"
        detected = _detect_language(response)
        if detected is None:  # like IFEval, text langdetect cannot classify counts as followed
            return Finding(True, f"{asked}; the language cannot be detected, which counts as followed")
        return Finding(detected == language, f"{asked}; it reads as {_language_name(detected)}")

    return check
