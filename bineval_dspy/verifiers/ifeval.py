"""Code verifiers for the 25 IFEval instructions, following google-research's
``instruction_following_eval`` semantics without NLTK (see ``text`` for the Punkt and Treebank stand-ins)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from langdetect import DetectorFactory, detect
from langdetect.detector_factory import PROFILES_DIRECTORY
from langdetect.lang_detect_exception import LangDetectException

from bineval_dspy.verifiers.registry import Check, register
from bineval_dspy.verifiers.text import split_sentences_punkt, word_runs, word_tokenize_nltk

_RELATIONS = ("less than", "at least")
_CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


# --------------------------------------------------------------------------- kwargs


def _count_arg(name: str, value: object, minimum: int = 0) -> int:
    """Validate an integer kwarg, so a bad suite row fails at build time rather than silently."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def _relation_arg(name: str, value: object) -> str:
    """Validate a comparison kwarg; IFEval only knows 'less than' and 'at least'."""
    if value not in _RELATIONS:
        raise ValueError(f"{name} must be one of {_RELATIONS}, got {value!r}")
    return str(value)


def _text_arg(name: str, value: object) -> str:
    """Validate a string kwarg and strip it, as IFEval strips its phrases and markers."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value.strip()


def _words_arg(name: str, value: object) -> list[str]:
    """Validate a list-of-words kwarg (a bare string would otherwise be read as letters)."""
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise ValueError(f"{name} must be a non-empty list of strings, got {value!r}")
    return [_text_arg(name, word) for word in value]


def _compare(actual: int, relation: str, threshold: int) -> bool:
    """IFEval's two relations: 'less than' is strict, 'at least' is inclusive."""
    return actual < threshold if relation == "less than" else actual >= threshold


# --------------------------------------------------------------------------- text helpers


@cache
def _langdetect_languages() -> frozenset[str]:
    """Language codes langdetect ships profiles for, to reject codes that can never match."""
    return frozenset(path.name for path in Path(PROFILES_DIRECTORY).iterdir())


def _detect_language(text: str) -> str | None:
    """langdetect's language code for ``text`` (seeded for determinism); None when undetectable."""
    DetectorFactory.seed = 0
    try:
        return detect(text)
    except LangDetectException:
        return None


def _paragraph_first_word(paragraph: str) -> str:
    """IFEval's first word of a paragraph: leading quotes dropped, cut at the first punctuation."""
    word = paragraph.split()[0].lstrip("'").lstrip('"')
    return re.split(r"""[.,?!'"]""", word, maxsplit=1)[0].lower()


# --------------------------------------------------------------------------- verifiers


@register("change_case:capital_word_frequency")
def capital_word_frequency(capital_frequency: int, capital_relation: str) -> Check:
    threshold = _count_arg("capital_frequency", capital_frequency)
    relation = _relation_arg("capital_relation", capital_relation)

    def check(response: str) -> bool:
        capitals = sum(token.isupper() for token in word_tokenize_nltk(response))
        return _compare(capitals, relation, threshold)

    return check


@register("change_case:english_capital")
def english_capital() -> Check:
    def check(response: str) -> bool:
        # Like IFEval, text langdetect cannot classify counts as English.
        return response.isupper() and _detect_language(response) in ("en", None)

    return check


@register("change_case:english_lowercase")
def english_lowercase() -> Check:
    def check(response: str) -> bool:
        return response.islower() and _detect_language(response) in ("en", None)

    return check


@register("combination:repeat_prompt")
def repeat_prompt(prompt_to_repeat: str) -> Check:
    expected = _text_arg("prompt_to_repeat", prompt_to_repeat).lower()

    def check(response: str) -> bool:
        return response.strip().lower().startswith(expected)

    return check


@register("combination:two_responses")
def two_responses() -> Check:
    def check(response: str) -> bool:
        parts = response.split("******")
        answers = []
        for index, part in enumerate(parts):
            if part.strip():
                answers.append(part.strip())
            elif 0 < index < len(parts) - 1:
                return False  # an empty answer between two separators
        return len(answers) == 2 and answers[0] != answers[1]

    return check


@register("detectable_content:number_placeholders")
def number_placeholders(num_placeholders: int) -> Check:
    minimum = _count_arg("num_placeholders", num_placeholders)

    def check(response: str) -> bool:
        return len(re.findall(r"\[.*?\]", response)) >= minimum

    return check


@register("detectable_content:postscript")
def postscript(postscript_marker: str) -> Check:
    marker = _text_arg("postscript_marker", postscript_marker)
    if marker == "P.P.S":
        pattern = re.compile(r"p\.\s?p\.\s?s")
    elif marker == "P.S.":
        pattern = re.compile(r"p\.\s?s\.")
    else:
        pattern = re.compile(re.escape(marker.lower()))

    def check(response: str) -> bool:
        return pattern.search(response.lower()) is not None

    return check


@register("detectable_format:constrained_response")
def constrained_response() -> Check:
    def check(response: str) -> bool:
        return any(option in response for option in _CONSTRAINED_OPTIONS)

    return check


@register("detectable_format:json_format")
def json_format() -> Check:
    def check(response: str) -> bool:
        text = response.strip()
        for fence in ("```json", "```Json", "```JSON", "```"):
            text = text.removeprefix(fence)
        try:
            json.loads(text.removesuffix("```").strip())
        except ValueError:
            return False
        return True

    return check


@register("detectable_format:multiple_sections")
def multiple_sections(section_spliter: str, num_sections: int) -> Check:
    header = re.compile(r"\s?" + re.escape(_text_arg("section_spliter", section_spliter)) + r"\s?\d+\s?")
    minimum = _count_arg("num_sections", num_sections)

    def check(response: str) -> bool:
        return len(header.findall(response)) >= minimum

    return check


@register("detectable_format:number_bullet_lists")
def number_bullet_lists(num_bullets: int) -> Check:
    expected = _count_arg("num_bullets", num_bullets)
    # As in IFEval, "\s*" may run over blank lines and "[^*]" may be the line's newline.
    star_items = re.compile(r"^\s*\*[^*].*$", re.MULTILINE)
    dash_items = re.compile(r"^\s*-.*$", re.MULTILINE)

    def check(response: str) -> bool:
        return len(star_items.findall(response)) + len(dash_items.findall(response)) == expected

    return check


@register("detectable_format:number_highlighted_sections")
def number_highlighted_sections(num_highlights: int) -> Check:
    minimum = _count_arg("num_highlights", num_highlights)

    def check(response: str) -> bool:
        # IFEval counts *italic* and **bold** spans separately, so "**x**" counts once
        # (its single-star reading, "**", is empty) and "*x*" counts once.
        italic = [span for span in re.findall(r"\*[^\n*]*\*", response) if span.strip("*").strip()]
        bold = [span for span in re.findall(r"\*\*[^\n*]*\*\*", response) if span[2:-2].strip()]
        return len(italic) + len(bold) >= minimum

    return check


@register("detectable_format:title")
def title() -> Check:
    def check(response: str) -> bool:
        titles = re.findall(r"<<[^\n]+>>", response)
        return any(found.lstrip("<").rstrip(">").strip() for found in titles)

    return check


@register("keywords:existence")
def existence(keywords: list[str]) -> Check:
    patterns = [re.compile(re.escape(word), re.IGNORECASE) for word in _words_arg("keywords", keywords)]

    def check(response: str) -> bool:
        return all(pattern.search(response) for pattern in patterns)

    return check


@register("keywords:forbidden_words")
def forbidden_words(forbidden_words: list[str]) -> Check:
    patterns = [
        re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE) for word in _words_arg("forbidden_words", forbidden_words)
    ]

    def check(response: str) -> bool:
        return not any(pattern.search(response) for pattern in patterns)

    return check


@register("keywords:frequency")
def keyword_frequency(keyword: str, frequency: int, relation: str) -> Check:
    # Substring occurrences, case-insensitive, as in IFEval ("cat" counts inside "category").
    pattern = re.compile(re.escape(_text_arg("keyword", keyword)), re.IGNORECASE)
    threshold = _count_arg("frequency", frequency)
    relation = _relation_arg("relation", relation)

    def check(response: str) -> bool:
        return _compare(len(pattern.findall(response)), relation, threshold)

    return check


@register("keywords:letter_frequency")
def letter_frequency(letter: str, let_frequency: int, let_relation: str) -> Check:
    if not isinstance(letter, str) or len(letter) != 1 or not letter.isalpha():
        raise ValueError(f"letter must be a single letter, got {letter!r}")
    target = letter.lower()
    threshold = _count_arg("let_frequency", let_frequency)
    relation = _relation_arg("let_relation", let_relation)

    def check(response: str) -> bool:
        return _compare(response.lower().count(target), relation, threshold)

    return check


@register("language:response_language")
def response_language(language: str) -> Check:
    if language not in _langdetect_languages():
        raise ValueError(f"language must be a langdetect language code, got {language!r}")

    def check(response: str) -> bool:
        # Like IFEval, text langdetect cannot classify counts as followed.
        return _detect_language(response) in (language, None)

    return check


@register("length_constraints:nth_paragraph_first_word")
def nth_paragraph_first_word(num_paragraphs: int, nth_paragraph: int, first_word: str) -> Check:
    expected_count = _count_arg("num_paragraphs", num_paragraphs, minimum=1)
    nth = _count_arg("nth_paragraph", nth_paragraph, minimum=1)
    if nth > expected_count:
        raise ValueError(f"nth_paragraph ({nth}) exceeds num_paragraphs ({expected_count})")
    if not isinstance(first_word, str) or not first_word:
        raise ValueError(f"first_word must be a non-empty string, got {first_word!r}")
    expected_word = first_word.lower()

    def check(response: str) -> bool:
        # Paragraphs are split on "\n\n"; blank ones are not counted, yet (as in IFEval)
        # the nth paragraph is looked up among all pieces, blank ones included.
        pieces = response.split("\n\n")
        count = sum(1 for piece in pieces if piece.strip())
        if nth > count or not pieces[nth - 1].strip():
            return False
        return count == expected_count and _paragraph_first_word(pieces[nth - 1]) == expected_word

    return check


@register("length_constraints:number_paragraphs")
def number_paragraphs(num_paragraphs: int) -> Check:
    expected = _count_arg("num_paragraphs", num_paragraphs)

    def check(response: str) -> bool:
        pieces = re.split(r"\s?\*\*\*\s?", response)
        for index, piece in enumerate(pieces):
            if not piece.strip() and 0 < index < len(pieces) - 1:
                return False  # two dividers with nothing between them
        return sum(1 for piece in pieces if piece.strip()) == expected

    return check


@register("length_constraints:number_sentences")
def number_sentences(num_sentences: int, relation: str) -> Check:
    threshold = _count_arg("num_sentences", num_sentences)
    relation = _relation_arg("relation", relation)

    def check(response: str) -> bool:
        return _compare(len(split_sentences_punkt(response)), relation, threshold)

    return check


@register("length_constraints:number_words")
def number_words(num_words: int, relation: str) -> Check:
    threshold = _count_arg("num_words", num_words)
    relation = _relation_arg("relation", relation)

    def check(response: str) -> bool:
        return _compare(len(word_runs(response)), relation, threshold)

    return check


@register("punctuation:no_comma")
def no_comma() -> Check:
    def check(response: str) -> bool:
        return "," not in response

    return check


@register("startend:end_checker")
def end_checker(end_phrase: str) -> Check:
    ending = _text_arg("end_phrase", end_phrase).lower()

    def check(response: str) -> bool:
        return response.strip().strip('"').lower().endswith(ending)

    return check


@register("startend:quotation")
def quotation() -> Check:
    def check(response: str) -> bool:
        text = response.strip()
        return len(text) > 1 and text.startswith('"') and text.endswith('"')

    return check
