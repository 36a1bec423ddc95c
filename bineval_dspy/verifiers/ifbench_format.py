"""Verifiers for IFBench's ``format:*`` instructions (layout, markup and quoting rules).

Semantics follow ``allenai/IFBench`` (``ifbench/instructions.py``), including its quirks, noted inline.
"""

from __future__ import annotations

import re
import string

import emoji

from bineval_dspy.core.text import (
    PUNCTUATION_AND_SPACE,
    delete_ascii_punctuation,
    split_sentences_punkt,
    word_tokenize_nltk,
)
from bineval_dspy.enforce.kinds.forced import (
    Brackets,
    Exact,
    Quotes,
    QuoteUnquote,
    SentenceEmoji,
    Template,
    Thesis,
    TitleCase,
)
from bineval_dspy.enforce.kinds.layout import (
    LineStart,
    NoWhitespace,
    ProseThenBullets,
    Staircase,
    SubBullets,
    WordPerLine,
)
from bineval_dspy.enforce.rules import RuleKind, rules
from bineval_dspy.enforce.steering import HOW, Steering
from bineval_dspy.verifiers.kwargs import nonblank_text
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
)


def _ruled(how: HOW, *kinds: RuleKind) -> Enforcement:
    """An enforcement by rule kinds that take none of the verifier's kwargs."""
    return Enforcement(how, lambda: Steering(rules=rules(*kinds)))


def _indent(line: str) -> int:
    """Number of leading spaces (tabs do not count, as in the official check)."""
    return len(line) - len(line.lstrip(" "))


# --- Verifiers ---------------------------------------------------------------------------------


@register("format:emoji", rule="End every sentence with an emoji.", enforce=_ruled("forced", SentenceEmoji()))
def emoji_sentences() -> Check:
    """Every sentence ends with an emoji (an emoji opening the next sentence also counts)."""

    def check(response: str) -> Finding:
        asked = "asked for an emoji at the end of every sentence"
        sentences = [delete_ascii_punctuation(s).strip() for s in split_sentences_punkt(response)]
        for index, sentence in enumerate(sentences):
            if not sentence:
                return Finding(False, f"{asked}; the {ordinal(index + 1)} sentence is only punctuation")
            # The second-to-last character is also tried, for emoji followed by a variation selector.
            if emoji.is_emoji(sentence[-1]) or emoji.is_emoji(sentence[-2:-1] or sentence[-1]):
                continue
            following = sentences[index + 1] if index + 1 < len(sentences) else ""
            if not following or not emoji.is_emoji(following[0]):
                return Finding(False, f"{asked}; the {ordinal(index + 1)} ends {quote_tail(sentence, 25)}")
        return Finding(True, f"{asked}; every sentence has one")

    return check


@register(
    "format:line_indent",
    rule="Indent every line by more spaces than the line before it, like a staircase.",
    enforce=_ruled("forced", Staircase()),
)
def line_indent() -> Check:
    """Each non-blank line is indented by more spaces than the line before it ("stairs")."""

    def check(response: str) -> Finding:
        asked = "asked for each line indented more than the one before"
        lines = response.split("\n")
        # Official quirk: blank lines are removed while iterating, so a blank line that directly
        # follows a removed one survives (and then breaks the stairs).
        index = 0
        while index < len(lines):
            if not lines[index].strip():
                lines.remove(lines[index])
            index += 1
        for upper, lower in zip(lines, lines[1:]):
            if _indent(lower) <= _indent(upper):
                found = f"{quote(lower, 20)} has {_indent(lower)} leading spaces, the line above {_indent(upper)}"
                return Finding(False, f"{asked}; {found}")
        return Finding(True, f"{asked}; every line is")

    return check


@register(
    "format:list",
    rule="Write a list of at least two items, each marked with the bullet '{sep}'.",
    enforce=Enforcement("forced", lambda sep: Steering(rules=rules(LineStart(text=sep.strip() + " ", min_lines=2)))),
)
def special_bullets(sep: str) -> Check:
    """The custom bullet marker ``sep`` occurs at least twice."""
    marker = nonblank_text("sep", sep)

    def check(response: str) -> Finding:
        count = response.count(marker)
        asked = f"asked for at least 2 items marked {quote(marker)}"
        return Finding(count >= 2, f"{asked}; the marker occurs {plural(count, 'time')}")

    return check


@register("format:newline", rule="Put every word on its own line.", enforce=_ruled("mask", WordPerLine()))
def word_per_line() -> Check:
    """Each word sits on its own line (punctuation ignored; empty lines allowed)."""

    def check(response: str) -> Finding:
        asked = "asked for one word per line"
        text = delete_ascii_punctuation(response)
        # Only truly empty lines are discarded; a line of spaces still counts as a line.
        lines = [line for line in text.strip().split("\n") if line != ""]
        words = len(text.split())
        if len(lines) == words:
            return Finding(True, f"{asked}; found {plural(words, 'word')} on as many lines")
        crowded = next((line for line in lines if len(line.split()) != 1), "")
        found = f"found {plural(words, 'word')} on {plural(len(lines), 'line')}"
        return Finding(False, f"{asked}; {found}, e.g. {quote(crowded, 30)}")

    return check


@register(
    "format:no_bullets_bullets",
    rule="Write at least two sentences of prose first, then a list of at least two '*' bullet points, and nothing "
    "after the list.",
    enforce=_ruled("automaton", ProseThenBullets()),
)
def sentences_then_bullets() -> Check:
    """At least two sentences first, then at least two ``*`` bullet lines and nothing else."""

    def check(response: str) -> Finding:
        asked = "asked for 2+ sentences, then 2+ '*' bullets and nothing else"
        sentence_count = 0
        bullet_count = 0
        in_prose = True
        for number, line in enumerate(response.split("\n"), start=1):
            line = line.strip()
            if line.startswith("*"):
                if sentence_count < 2:
                    return Finding(False, f"{asked}; a bullet comes after {plural(sentence_count, 'sentence')}")
                in_prose = False
                bullet_count += 1
            elif in_prose:
                sentences = split_sentences_punkt(line)
                sentence_count += len(sentences)
                # Official quirk: a blank line (no sentences) also ends the prose part.
                in_prose = bool(sentences)
            else:
                stray = quote(line, 25) if line else "blank"
                return Finding(False, f"{asked}; line {number}, after the prose ended, is {stray}, not a bullet")
        found = f"found {plural(sentence_count, 'sentence')} and {plural(bullet_count, 'bullet')}"
        return Finding(bullet_count >= 2, f"{asked}; {found}")

    return check


@register(
    "format:no_whitespace",
    rule="Write the response without any whitespace: no spaces, tabs or line breaks.",
    enforce=_ruled("mask", NoWhitespace()),
)
def no_whitespace() -> Check:
    """The response contains no whitespace character at all."""

    def check(response: str) -> Finding:
        spaces = [index for index, ch in enumerate(response) if ch.isspace()]
        if not spaces:
            return Finding(True, "asked for no whitespace; found none")
        where = quote_tail(response[: spaces[0]], 20)
        return Finding(
            False,
            f"asked for no whitespace; found {plural(len(spaces), 'whitespace character')}, the first after {where}",
        )

    return check


def _options(options: str) -> list[str]:
    """The choices ``options`` lists. Official rule: split on "/", else on the substring "or", else on ","."""
    separator = "/" if "/" in options else "or" if "or" in options else ","
    return [choice.strip() for choice in options.split(separator)]


def _one_of(options: str) -> Steering:
    """The reply fixed to one of the options; a lettered option is checked as written, so nothing may wrap it."""
    choices = tuple(c for c in _options(options) if c.strip(PUNCTUATION_AND_SPACE))
    exact = rules(Exact()) if re.match(r"\W*[aA]\W*[bB]\W*[cC]\W*", options) else ()
    return Steering(choice=choices, rules=exact)


@register(
    "format:options",
    rule="Answer with exactly one of the options {options}, and nothing else.",
    enforce=Enforcement("forced", lambda options: _one_of(options)),
)
def one_of_options(options: str) -> Check:
    """The whole response is one of the listed options (exactly, for lettered a/b/c choices)."""
    options = nonblank_text("options", options)
    lettered = re.match(r"\W*[aA]\W*[bB]\W*[cC]\W*", options) is not None
    choices = _options(options)
    trim = PUNCTUATION_AND_SPACE
    normalized = {choice.strip(trim).lower() for choice in choices}

    def check(response: str) -> Finding:
        passed = response in choices if lettered else response.strip(trim).lower() in normalized
        asked = f"asked for exactly one of {quote_list(choices, limit=4, width=20)}"
        return Finding(passed, f"{asked}; the response is {quote(response, 30)}")

    return check


_TEMPLATE_HEADERS = ("My Answer:", "My Conclusion:", "Future Outlook:")


@register(
    "format:output_template",
    rule=f"Follow the template with the headers {joined(_TEMPLATE_HEADERS)}, filling in each part.",
    enforce=_ruled("forced", Template(headers=_TEMPLATE_HEADERS)),
)
def output_template() -> Check:
    """The response contains the three template headers 'My Answer:', 'My Conclusion:', 'Future Outlook:'."""

    def check(response: str) -> Finding:
        missing = [header for header in _TEMPLATE_HEADERS if header not in response]
        asked = f"asked for the headers {quote_list(_TEMPLATE_HEADERS)}"
        if missing:
            return Finding(False, f"{asked}; missing {joined(missing)}")
        return Finding(True, f"{asked}; all appear")

    return check


@register(
    "format:parentheses",
    rule="Nest brackets ( ), [ ], {{ }} at least 5 levels deep, closing each one you open.",
    enforce=_ruled("forced", Brackets(depth=5)),
)
def nested_brackets() -> Check:
    """Brackets ( [ { nest at least 5 deep, and a matching close follows that depth."""
    pairs = {")": "(", "]": "[", "}": "{"}

    def check(response: str) -> Finding:
        asked = "asked for brackets nested 5 levels deep and closed"
        stack: list[str] = []
        deepest = most = 0
        for ch in response:
            if ch in "([{":
                stack.append(ch)
                deepest = max(deepest, len(stack))
                most = max(most, deepest)
            elif ch in pairs:
                if stack and stack[-1] == pairs[ch]:
                    stack.pop()
                    if deepest >= 5:
                        return Finding(True, f"{asked}; they reach {deepest} levels")
                else:  # a mismatched closer starts the count over
                    stack.clear()
                    deepest = 0
        if most >= 5:
            return Finding(False, f"{asked}; they reach {most} levels but are not closed back out")
        return Finding(False, f"{asked}; they nest at most {plural(most, 'level')} deep")

    return check


@register(
    "format:quote_unquote",
    rule="Follow each quotation with your own words: never put two quotation marks side by side, and do not end "
    "the response on a quotation mark.",
    enforce=_ruled("mask", QuoteUnquote()),
)
def quote_then_explanation() -> Check:
    """No two double quotes are adjacent (ignoring whitespace) and the text does not end on a quote."""
    trailing = string.digits + string.punctuation.replace('"', "")

    def check(response: str) -> Finding:
        asked = "asked for quotes followed by explanation"
        text = "".join(response.replace("'\"'", "").split())
        if '""' in text:
            return Finding(False, f"{asked}; two double quotes stand side by side (spaces ignored)")
        if text.strip(trailing).endswith('"'):
            return Finding(False, f"{asked}; the response ends on a quotation mark: {quote_tail(response, 25)}")
        return Finding(True, f"{asked}; no quotation mark ends it or stands next to another")

    return check


@register(
    "format:quotes",
    rule="Nest quotations at least three levels deep, alternating double and single quotation marks.",
    enforce=_ruled("forced", Quotes(depth=3)),
)
def nested_quotes() -> Check:
    """Quotes nest at least 3 levels deep; ``"`` and ``'`` (apostrophes included) both count."""

    def check(response: str) -> Finding:
        asked = "asked for quotes nested 3 levels deep"
        stack: list[str] = []
        deepest = 0
        for ch in response:
            if stack and ch == stack[-1]:
                stack.pop()
                if deepest - len(stack) >= 3:
                    return Finding(True, f"{asked}; they reach {deepest} levels")
            elif ch in "\"'":
                stack.append(ch)
                deepest = max(deepest, len(stack))
        if deepest >= 3:
            return Finding(False, f"{asked}; {deepest} quotes open but 3 levels never close")
        return Finding(False, f"{asked}; they nest at most {plural(deepest, 'level')} deep")

    return check


@register(
    "format:sub-bullets",
    rule="Give every '*' bullet point at least one '-' sub-bullet.",
    enforce=_ruled("automaton", SubBullets()),
)
def sub_bullets() -> Check:
    """Every piece of text after a ``*`` contains a ``-`` before the next ``*``."""

    def check(response: str) -> Finding:
        asked = "asked for a '-' sub-bullet under every '*' bullet"
        pieces = response.split("*")[1:]
        bare = [piece for piece in pieces if "-" not in piece]
        if bare:
            shown = [f"*{piece}" for piece in bare if piece.strip()]
            example = f", e.g. {quote_list(shown, limit=2)}" if shown else ""
            return Finding(False, f"{asked}; {len(bare)} of {len(pieces)} '*' have no '-' before the next '*'{example}")
        return Finding(True, f"{asked}; found {plural(len(pieces), 'bullet')}, each with one")

    return check


@register(
    "format:thesis",
    rule="State a thesis in HTML italics (<i>…</i>), then go on with more text after it.",
    enforce=_ruled("forced", Thesis()),
)
def italic_thesis() -> Check:
    """An HTML-italic (<i> or <em>) non-empty thesis is followed by more text."""

    def check(response: str) -> Finding:
        asked = "asked for an italic <i> thesis followed by more text"
        start = response.find("<i>")
        if start == -1:
            start = response.find("<em>")
            if start == -1:
                return Finding(False, f"{asked}; found no <i> or <em> tag")
        rest = response[start:]
        end = rest.find("</i>")
        if end == -1:
            end = rest.find("</em>")
            if end == -1:
                return Finding(False, f"{asked}; found no closing </i> or </em>")
        # Official quirk: offsets assume the 3-char "<i>" and 4-char "</i>" even for <em> tags.
        thesis = rest[3:end].strip()
        if not thesis:
            return Finding(False, f"{asked}; the italic thesis is empty")
        if not rest[end + 4 :].strip():
            return Finding(False, f"{asked}; nothing follows the thesis {quote(thesis, 25)}")
        return Finding(True, f"{asked}; found the thesis {quote(thesis, 25)} and more")

    return check


@register(
    "format:title_case",
    rule="Write in Title Case, capitalizing the first letter of every word.",
    enforce=_ruled("mask", TitleCase()),
)
def title_case() -> Check:
    """No word token is lower-case-initial with an all-lower or all-upper remainder (or a lone lower letter)."""

    def check(response: str) -> Finding:
        lower = [
            token
            for token in word_tokenize_nltk(response)
            if token[0].isalpha()
            and token[0].islower()
            and (not token[1:] or token[1:].islower() or token[1:].isupper())
        ]
        if lower:
            return Finding(
                False, f"asked for Title Case; found {plural(len(lower), 'lower-case word')}: {quote_list(lower)}"
            )
        return Finding(True, "asked for Title Case; every word is capitalized")

    return check
