"""Code verifiers for the IFEval instructions on a reply's shape: detectable content and format, length, punctuation,
start and end, with ``ifeval``'s semantics (google-research's ``instruction_following_eval``, without NLTK)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from bineval_dspy.core.text import split_sentences_punkt, word_runs
from bineval_dspy.enforce.steering import Steering, Structure
from bineval_dspy.verifiers.ifeval import compared, fewer
from bineval_dspy.verifiers.kwargs import comparison, nonblank_text, whole_number
from bineval_dspy.verifiers.registry import (
    Check,
    Enforcement,
    Finding,
    ordinal,
    plural,
    quote,
    quote_list,
    quote_tail,
    register,
    tally,
)

_CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


def _bounded(unit: str, threshold: int, relation: str) -> Steering:
    """A length bound as a Steering: 'at least N' a floor, 'less than N' a ceiling, counted as the check counts."""
    if comparison("relation", relation) == "at least":
        return Steering.model_validate({f"min_{unit}": threshold})
    return Steering.model_validate({f"max_{unit}": threshold})


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
        asked = f"asked for {fewer(relation)} {plural(threshold, unit)}"
        return Finding(compared(count, relation, threshold), f"{asked}; found {count}")

    return check


@register(
    "length_constraints:number_sentences",
    rule=lambda num_sentences, relation: f"Answer with {fewer(relation)} {plural(num_sentences, 'sentence')}.",
    enforce=Enforcement(
        "automaton", lambda num_sentences, relation: _bounded("sentences", int(num_sentences), relation)
    ),
)
def number_sentences(num_sentences: int, relation: str) -> Check:
    threshold, relation = whole_number("num_sentences", num_sentences), comparison("relation", relation)
    return _counted("sentence", lambda response: len(split_sentences_punkt(response)), threshold, relation)


@register(
    "length_constraints:number_words",
    rule=lambda num_words, relation: f"Answer with {fewer(relation)} {plural(num_words, 'word')}.",
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
