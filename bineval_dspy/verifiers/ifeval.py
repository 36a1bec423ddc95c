"""Code verifiers for the 25 IFEval instructions, following google-research's
``instruction_following_eval`` semantics without NLTK (see ``text`` for the Punkt and Treebank stand-ins)."""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path

from langdetect import DetectorFactory, detect
from langdetect.detector_factory import PROFILES_DIRECTORY, init_factory
from langdetect.lang_detect_exception import LangDetectException

from bineval_dspy.core.text import split_sentences_punkt, trim_punctuation, word_runs, word_tokenize_nltk
from bineval_dspy.enforce.steering import Steering, Structure
from bineval_dspy.verifiers.kwargs import comparison, nonblank_text, single_letter, whole_number, word_list
from bineval_dspy.verifiers.registry import (
    Check,
    Enforcement,
    Finding,
    joined,
    ordinal,
    plural,
    quote,
    quote_list,
    quote_tail,
    register,
    tally,
)

_CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


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


# --------------------------------------------------------------------------- helpers


def _bounded(unit: str, threshold: int, relation: str) -> Steering:
    """A length bound as a Steering: 'at least N' a floor, 'less than N' a ceiling, counted as the check counts."""
    if comparison("relation", relation) == "at least":
        return Steering.model_validate({f"min_{unit}": threshold})
    return Steering.model_validate({f"max_{unit}": threshold})


def _compare(actual: int, relation: str, threshold: int) -> bool:
    """IFEval's two relations: 'less than' is strict, 'at least' is inclusive."""
    return actual < threshold if relation == "less than" else actual >= threshold


def _fewer(relation: str) -> str:
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


def _paragraph_first_word(paragraph: str) -> str:
    """IFEval's first word of a paragraph: leading quotes dropped, cut at the first punctuation."""
    word = paragraph.split()[0].lstrip("'").lstrip('"')
    return re.split(r"""[.,?!'"]""", word, maxsplit=1)[0].lower()


def _json_error(exc: ValueError) -> str:
    """Where and why JSON parsing stopped."""
    if not isinstance(exc, json.JSONDecodeError):
        return str(exc)
    rest = exc.doc[exc.pos :]
    where = f"near {quote(rest, 20)}" if rest.strip() else "at the end"
    return f"{exc.msg} at line {exc.lineno} column {exc.colno}, {where}"


def _json_kind(value: object) -> str:
    """JSON's name for the type of a parsed value."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else "a number"


# --------------------------------------------------------------------------- verifiers


@register(
    "change_case:capital_word_frequency",
    rule=lambda capital_frequency, capital_relation: (
        f"Use {_fewer(capital_relation)} {plural(capital_frequency, 'word')} written entirely in capital letters."
    ),
)
def capital_word_frequency(capital_frequency: int, capital_relation: str) -> Check:
    threshold = whole_number("capital_frequency", capital_frequency)
    relation = comparison("capital_relation", capital_relation)

    def check(response: str) -> Finding:
        capitals = [token for token in word_tokenize_nltk(response) if token.isupper()]
        asked = f"asked for {_fewer(relation)} {plural(threshold, 'all-capital word')}"
        return Finding(_compare(len(capitals), relation, threshold), f"{asked}; found {tally(capitals)}")

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
    "detectable_content:number_placeholders",
    rule=lambda num_placeholders: (
        f"Include at least {plural(num_placeholders, 'placeholder')} in square brackets, such as [address]."
    ),
)
def number_placeholders(num_placeholders: int) -> Check:
    minimum = whole_number("num_placeholders", num_placeholders)

    def check(response: str) -> Finding:
        found = re.findall(r"\[.*?\]", response)
        asked = f"asked for at least {plural(minimum, 'placeholder')} in square brackets"
        return Finding(len(found) >= minimum, f"{asked}; found {tally(found)}")

    return check


@register(
    "detectable_content:postscript",
    rule=lambda postscript_marker: (
        f"End the response with a postscript starting with {postscript_marker.strip()}"
        + ("" if postscript_marker.strip().endswith(".") else ".")
    ),
    enforce=Enforcement("forced", lambda postscript_marker: Steering(postscript=postscript_marker.strip())),
)
def postscript(postscript_marker: str) -> Check:
    marker = nonblank_text("postscript_marker", postscript_marker).strip()
    if marker == "P.P.S":
        pattern = re.compile(r"p\.\s?p\.\s?s")
    elif marker == "P.S.":
        pattern = re.compile(r"p\.\s?s\.")
    else:
        pattern = re.compile(re.escape(marker.lower()))

    def check(response: str) -> Finding:
        asked = f"asked for a postscript starting with {quote(marker)}"
        text = response.lower()
        match = pattern.search(text)
        if match is None:
            return Finding(False, f"{asked}; found none")
        return Finding(True, f"{asked}; found {quote(text[match.start() :])}")

    return check


@register(
    "detectable_format:constrained_response",
    rule=f"Answer with one of these exact phrases: {', '.join(quote(option) for option in _CONSTRAINED_OPTIONS)}",
    enforce=Enforcement("forced", lambda: Steering(choice=_CONSTRAINED_OPTIONS)),
)
def constrained_response() -> Check:
    def check(response: str) -> Finding:
        found = next((option for option in _CONSTRAINED_OPTIONS if option in response), None)
        asked = f"asked for one of {quote_list(_CONSTRAINED_OPTIONS)}"
        if found is None:
            return Finding(False, f"{asked}; found none of them")
        return Finding(True, f"{asked}; found {quote(found)}")

    return check


@register(
    "detectable_format:json_format",
    rule="Format the entire response as valid JSON; wrapping it in a Markdown ```json code block is allowed.",
    enforce=Enforcement("mask", lambda: Steering(json_value=True)),
)
def json_format() -> Check:
    def check(response: str) -> Finding:
        asked = "asked for the whole response to be JSON"
        text = response.strip()
        for fence in ("```json", "```Json", "```JSON", "```"):
            text = text.removeprefix(fence)
        try:
            value = json.loads(text.removesuffix("```").strip())
        except ValueError as exc:
            return Finding(False, f"{asked}; it does not parse: {_json_error(exc)}")
        return Finding(True, f"{asked}; it parses as {_json_kind(value)}")

    return check


@register(
    "detectable_format:multiple_sections",
    rule=lambda section_spliter, num_sections: (
        f"Divide the response into at least {plural(num_sections, 'section')}, each starting with "
        f"'{section_spliter.strip()} X' where X is its number ({section_spliter.strip()} 1, "
        f"{section_spliter.strip()} 2, …)."
    ),
    enforce=Enforcement(
        "automaton",
        lambda section_spliter, num_sections: Steering(
            structure=Structure(kind="sections", count=int(num_sections), marker=section_spliter.strip())
        ),
    ),
)
def multiple_sections(section_spliter: str, num_sections: int) -> Check:
    spliter = nonblank_text("section_spliter", section_spliter).strip()
    header = re.compile(r"\s?" + re.escape(spliter) + r"\s?\d+\s?")
    minimum = whole_number("num_sections", num_sections)

    def check(response: str) -> Finding:
        found = [match.strip() for match in header.findall(response)]
        asked = f"asked for at least {plural(minimum, 'section')} marked {quote(spliter + ' X')}"
        return Finding(len(found) >= minimum, f"{asked}; found {tally(found)}")

    return check


@register(
    "detectable_format:number_bullet_lists",
    rule=lambda num_bullets: (
        f"Use exactly {plural(num_bullets, 'bullet point')}, written as Markdown bullets such as '* This is a point.'"
    ),
    enforce=Enforcement(
        "automaton", lambda num_bullets: Steering(structure=Structure(kind="bullets", count=int(num_bullets)))
    ),
)
def number_bullet_lists(num_bullets: int) -> Check:
    expected = whole_number("num_bullets", num_bullets)
    # As in IFEval, "\s*" may run over blank lines and "[^*]" may be the line's newline.
    star_items = re.compile(r"^\s*\*[^*].*$", re.MULTILINE)
    dash_items = re.compile(r"^\s*-.*$", re.MULTILINE)

    def check(response: str) -> Finding:
        items = [item.strip() for item in star_items.findall(response) + dash_items.findall(response)]
        asked = f"asked for exactly {plural(expected, 'bullet point')}"
        return Finding(len(items) == expected, f"{asked}; found {tally(items)}")

    return check


@register(
    "detectable_format:number_highlighted_sections",
    rule=lambda num_highlights: (
        f"Highlight at least {plural(num_highlights, 'section')} with Markdown, such as *highlighted section*."
    ),
)
def number_highlighted_sections(num_highlights: int) -> Check:
    minimum = whole_number("num_highlights", num_highlights)

    def check(response: str) -> Finding:
        # IFEval counts *italic* and **bold** spans separately, so "**x**" counts once
        # (its single-star reading, "**", is empty) and "*x*" counts once.
        italic = [span for span in re.findall(r"\*[^\n*]*\*", response) if span.strip("*").strip()]
        bold = [span for span in re.findall(r"\*\*[^\n*]*\*\*", response) if span[2:-2].strip()]
        asked = f"asked for at least {plural(minimum, 'highlighted section')}"
        return Finding(len(italic) + len(bold) >= minimum, f"{asked}; found {tally(italic + bold)}")

    return check


@register(
    "detectable_format:title",
    rule="Give the response a title wrapped in double angular brackets, such as <<poem of joy>>.",
    enforce=Enforcement("forced", lambda: Steering(title=True)),
)
def title() -> Check:
    def check(response: str) -> Finding:
        asked = "asked for a title in double angular brackets, such as <<title>>"
        titles = re.findall(r"<<[^\n]+>>", response)
        named = [found for found in titles if found.lstrip("<").rstrip(">").strip()]
        if named:
            return Finding(True, f"{asked}; found {quote(named[0])}")
        if titles:
            return Finding(False, f"{asked}; found only empty ones: {quote_list(titles)}")
        return Finding(False, f"{asked}; found none")

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
        f"Use the word '{keyword.strip()}' {_fewer(relation)} {plural(frequency, 'time')}."
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
        asked = f"asked for {quote(word)} {_fewer(relation)} {plural(threshold, 'time')}"
        return Finding(_compare(count, relation, threshold), f"{asked}; it occurs {plural(count, 'time')}")

    return check


@register(
    "keywords:letter_frequency",
    rule=lambda letter, let_frequency, let_relation: (
        f"Use the letter '{letter}' {_fewer(let_relation)} {plural(let_frequency, 'time')}."
    ),
)
def letter_frequency(letter: str, let_frequency: int, let_relation: str) -> Check:
    target = single_letter("letter", letter).lower()
    threshold = whole_number("let_frequency", let_frequency)
    relation = comparison("let_relation", let_relation)

    def check(response: str) -> Finding:
        count = response.lower().count(target)
        asked = f"asked for the letter {quote(target)} {_fewer(relation)} {plural(threshold, 'time')}"
        return Finding(_compare(count, relation, threshold), f"{asked}; it occurs {plural(count, 'time')}")

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


@register(
    "length_constraints:nth_paragraph_first_word",
    rule=lambda num_paragraphs, nth_paragraph, first_word: (
        f"Write exactly {plural(num_paragraphs, 'paragraph')}, separated by blank lines, and start the "
        f"{ordinal(nth_paragraph)} paragraph with the word '{first_word}'."
    ),
    enforce=Enforcement(
        "automaton",
        lambda num_paragraphs, nth_paragraph, first_word: Steering(
            structure=Structure(
                kind="paragraphs", count=int(num_paragraphs), nth=int(nth_paragraph), first_word=first_word.strip()
            )
        ),
    ),
)
def nth_paragraph_first_word(num_paragraphs: int, nth_paragraph: int, first_word: str) -> Check:
    expected_count = whole_number("num_paragraphs", num_paragraphs, minimum=1)
    nth = whole_number("nth_paragraph", nth_paragraph, minimum=1)
    if nth > expected_count:
        raise ValueError(f"nth_paragraph ({nth}) exceeds num_paragraphs ({expected_count})")
    expected_word = nonblank_text("first_word", first_word).lower()

    def check(response: str) -> Finding:
        asked = f"asked for {plural(expected_count, 'paragraph')}, the {ordinal(nth)} starting {quote(expected_word)}"
        # Paragraphs are split on "\n\n"; blank ones are not counted, yet (as in IFEval)
        # the nth paragraph is looked up among all pieces, blank ones included.
        pieces = response.split("\n\n")
        count = sum(1 for piece in pieces if piece.strip())
        if nth > count:
            return Finding(False, f"{asked}; found {plural(count, 'paragraph')}")
        if not pieces[nth - 1].strip():
            return Finding(False, f"{asked}; the {ordinal(nth)} piece between blank lines is empty")
        word = _paragraph_first_word(pieces[nth - 1])
        problems = [f"found {plural(count, 'paragraph')}"] if count != expected_count else []
        if word != expected_word:
            problems.append(f"the {ordinal(nth)} starts with {quote(word)}")
        return Finding(not problems, f"{asked}; {' and '.join(problems) or 'it has them'}")

    return check


@register(
    "length_constraints:number_paragraphs",
    rule=lambda num_paragraphs: (
        f"Write exactly {plural(num_paragraphs, 'paragraph')}, separated by the Markdown divider ***."
    ),
    enforce=Enforcement(
        "automaton", lambda num_paragraphs: Steering(structure=Structure(kind="dividers", count=int(num_paragraphs)))
    ),
)
def number_paragraphs(num_paragraphs: int) -> Check:
    expected = whole_number("num_paragraphs", num_paragraphs)

    def check(response: str) -> Finding:
        asked = f"asked for exactly {plural(expected, 'paragraph')} separated by ***"
        pieces = re.split(r"\s?\*\*\*\s?", response)
        for index, piece in enumerate(pieces):
            if not piece.strip() and 0 < index < len(pieces) - 1:
                return Finding(False, f"{asked}; found an empty paragraph between two *** dividers")
        count = sum(1 for piece in pieces if piece.strip())
        dividers = "" if len(pieces) > 1 else " (no *** divider)"
        return Finding(count == expected, f"{asked}; found {count}{dividers}")

    return check


def _counted(unit: str, count_of: Callable[[str], int], threshold: int, relation: str) -> Check:
    """The one length checker: ``count_of`` units in the response, compared with ``threshold`` by ``relation``."""

    def check(response: str) -> Finding:
        count = count_of(response)
        asked = f"asked for {_fewer(relation)} {plural(threshold, unit)}"
        return Finding(_compare(count, relation, threshold), f"{asked}; found {count}")

    return check


@register(
    "length_constraints:number_sentences",
    rule=lambda num_sentences, relation: f"Answer with {_fewer(relation)} {plural(num_sentences, 'sentence')}.",
    enforce=Enforcement(
        "automaton", lambda num_sentences, relation: _bounded("sentences", int(num_sentences), relation)
    ),
)
def number_sentences(num_sentences: int, relation: str) -> Check:
    threshold, relation = whole_number("num_sentences", num_sentences), comparison("relation", relation)
    return _counted("sentence", lambda response: len(split_sentences_punkt(response)), threshold, relation)


@register(
    "length_constraints:number_words",
    rule=lambda num_words, relation: f"Answer with {_fewer(relation)} {plural(num_words, 'word')}.",
    enforce=Enforcement("automaton", lambda num_words, relation: _bounded("words", int(num_words), relation)),
)
def number_words(num_words: int, relation: str) -> Check:
    threshold, relation = whole_number("num_words", num_words), comparison("relation", relation)
    return _counted("word", lambda response: len(word_runs(response)), threshold, relation)


@register(
    "punctuation:no_comma",
    rule="Do not use any commas in the response.",
    enforce=Enforcement("mask", lambda: Steering(banned=(",",))),
)
def no_comma() -> Check:
    def check(response: str) -> Finding:
        count = response.count(",")
        if not count:
            return Finding(True, "asked for no commas; found none")
        words = [word for word in response.split() if "," in word]
        return Finding(False, f"asked for no commas; found {plural(count, 'comma')}: {quote_list(words)}")

    return check


@register(
    "startend:end_checker",
    rule=lambda end_phrase: f"End the response with the exact phrase '{end_phrase.strip()}', with nothing after it.",
    enforce=Enforcement("forced", lambda end_phrase: Steering(end_phrase=end_phrase.strip())),
)
def end_checker(end_phrase: str) -> Check:
    phrase = nonblank_text("end_phrase", end_phrase).strip()
    ending = phrase.lower()

    def check(response: str) -> Finding:
        asked = f"asked to end with the phrase {quote(phrase, 60)}"
        text = response.strip().strip('"')
        if text.lower().endswith(ending):
            return Finding(True, f"{asked}; it does")
        return Finding(False, f"{asked}; the response ends with {quote_tail(text)}")

    return check


@register(
    "startend:quotation",
    rule="Wrap the entire response in double quotation marks.",
    enforce=Enforcement("forced", lambda: Steering(opening='"', closing='"')),
)
def quotation() -> Check:
    def check(response: str) -> Finding:
        asked = "asked for the whole response in double quotes"
        text = response.strip()
        if len(text) <= 1:
            return Finding(False, f"{asked}; it is only {quote(text)}")
        problems = [] if text.startswith('"') else [f"it starts with {quote(text, 20)}"]
        if not text.endswith('"'):
            problems.append(f"it ends with {quote_tail(text, 20)}")
        return Finding(not problems, f"{asked}; {' and '.join(problems) or 'it is'}")

    return check
