"""Code verifiers for the 25 IFEval instructions, following google-research's
``instruction_following_eval`` semantics without NLTK (see ``text`` for the Punkt and Treebank stand-ins)."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from langdetect import DetectorFactory, detect
from langdetect.detector_factory import PROFILES_DIRECTORY
from langdetect.lang_detect_exception import LangDetectException

from bineval_dspy.verifiers.kwargs import comparison, nonblank_text, single_letter, whole_number, word_list
from bineval_dspy.verifiers.registry import Check, register
from bineval_dspy.verifiers.text import split_sentences_punkt, word_runs, word_tokenize_nltk

_CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


# --------------------------------------------------------------------------- helpers


def _compare(actual: int, relation: str, threshold: int) -> bool:
    """IFEval's two relations: 'less than' is strict, 'at least' is inclusive."""
    return actual < threshold if relation == "less than" else actual >= threshold


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
    threshold = whole_number("capital_frequency", capital_frequency)
    relation = comparison("capital_relation", capital_relation)

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
    expected = nonblank_text("prompt_to_repeat", prompt_to_repeat).strip().lower()

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
    minimum = whole_number("num_placeholders", num_placeholders)

    def check(response: str) -> bool:
        return len(re.findall(r"\[.*?\]", response)) >= minimum

    return check


@register("detectable_content:postscript")
def postscript(postscript_marker: str) -> Check:
    marker = nonblank_text("postscript_marker", postscript_marker).strip()
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
    header = re.compile(r"\s?" + re.escape(nonblank_text("section_spliter", section_spliter).strip()) + r"\s?\d+\s?")
    minimum = whole_number("num_sections", num_sections)

    def check(response: str) -> bool:
        return len(header.findall(response)) >= minimum

    return check


@register("detectable_format:number_bullet_lists")
def number_bullet_lists(num_bullets: int) -> Check:
    expected = whole_number("num_bullets", num_bullets)
    # As in IFEval, "\s*" may run over blank lines and "[^*]" may be the line's newline.
    star_items = re.compile(r"^\s*\*[^*].*$", re.MULTILINE)
    dash_items = re.compile(r"^\s*-.*$", re.MULTILINE)

    def check(response: str) -> bool:
        return len(star_items.findall(response)) + len(dash_items.findall(response)) == expected

    return check


@register("detectable_format:number_highlighted_sections")
def number_highlighted_sections(num_highlights: int) -> Check:
    minimum = whole_number("num_highlights", num_highlights)

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
    patterns = [re.compile(re.escape(word), re.IGNORECASE) for word in word_list("keywords", keywords)]

    def check(response: str) -> bool:
        return all(pattern.search(response) for pattern in patterns)

    return check


@register("keywords:forbidden_words")
def forbidden_words(forbidden_words: list[str]) -> Check:
    patterns = [
        re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE) for word in word_list("forbidden_words", forbidden_words)
    ]

    def check(response: str) -> bool:
        return not any(pattern.search(response) for pattern in patterns)

    return check


@register("keywords:frequency")
def keyword_frequency(keyword: str, frequency: int, relation: str) -> Check:
    # Substring occurrences, case-insensitive, as in IFEval ("cat" counts inside "category").
    pattern = re.compile(re.escape(nonblank_text("keyword", keyword).strip()), re.IGNORECASE)
    threshold = whole_number("frequency", frequency)
    relation = comparison("relation", relation)

    def check(response: str) -> bool:
        return _compare(len(pattern.findall(response)), relation, threshold)

    return check


@register("keywords:letter_frequency")
def letter_frequency(letter: str, let_frequency: int, let_relation: str) -> Check:
    target = single_letter("letter", letter).lower()
    threshold = whole_number("let_frequency", let_frequency)
    relation = comparison("let_relation", let_relation)

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
    expected_count = whole_number("num_paragraphs", num_paragraphs, minimum=1)
    nth = whole_number("nth_paragraph", nth_paragraph, minimum=1)
    if nth > expected_count:
        raise ValueError(f"nth_paragraph ({nth}) exceeds num_paragraphs ({expected_count})")
    expected_word = nonblank_text("first_word", first_word).lower()

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
    expected = whole_number("num_paragraphs", num_paragraphs)

    def check(response: str) -> bool:
        pieces = re.split(r"\s?\*\*\*\s?", response)
        for index, piece in enumerate(pieces):
            if not piece.strip() and 0 < index < len(pieces) - 1:
                return False  # two dividers with nothing between them
        return sum(1 for piece in pieces if piece.strip()) == expected

    return check


@register("length_constraints:number_sentences")
def number_sentences(num_sentences: int, relation: str) -> Check:
    threshold = whole_number("num_sentences", num_sentences)
    relation = comparison("relation", relation)

    def check(response: str) -> bool:
        return _compare(len(split_sentences_punkt(response)), relation, threshold)

    return check


@register("length_constraints:number_words")
def number_words(num_words: int, relation: str) -> Check:
    threshold = whole_number("num_words", num_words)
    relation = comparison("relation", relation)

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
    ending = nonblank_text("end_phrase", end_phrase).strip().lower()

    def check(response: str) -> bool:
        return response.strip().strip('"').lower().endswith(ending)

    return check


@register("startend:quotation")
def quotation() -> Check:
    def check(response: str) -> bool:
        text = response.strip()
        return len(text) > 1 and text.startswith('"') and text.endswith('"')

    return check
