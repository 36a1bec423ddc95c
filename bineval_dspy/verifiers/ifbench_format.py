"""Verifiers for IFBench's ``format:*`` instructions (layout, markup and quoting rules).

Semantics follow ``allenai/IFBench`` (``ifbench/instructions.py``), including its quirks, noted inline.
"""

from __future__ import annotations

import re
import string

import emoji

from bineval_dspy.verifiers.kwargs import nonblank_text
from bineval_dspy.verifiers.registry import Check, register
from bineval_dspy.verifiers.text import (
    PUNCTUATION_AND_SPACE,
    delete_ascii_punctuation,
    split_sentences_punkt,
    word_tokenize_nltk,
)


def _indent(line: str) -> int:
    """Number of leading spaces (tabs do not count, as in the official check)."""
    return len(line) - len(line.lstrip(" "))


# --- Verifiers ---------------------------------------------------------------------------------


@register("format:emoji")
def emoji_sentences() -> Check:
    """Every sentence ends with an emoji (an emoji opening the next sentence also counts)."""

    def check(response: str) -> bool:
        sentences = [delete_ascii_punctuation(s).strip() for s in split_sentences_punkt(response)]
        for index, sentence in enumerate(sentences):
            if not sentence:
                return False
            # The second-to-last character is also tried, for emoji followed by a variation selector.
            if emoji.is_emoji(sentence[-1]) or emoji.is_emoji(sentence[-2:-1] or sentence[-1]):
                continue
            following = sentences[index + 1] if index + 1 < len(sentences) else ""
            if not following or not emoji.is_emoji(following[0]):
                return False
        return True

    return check


@register("format:line_indent")
def line_indent() -> Check:
    """Each non-blank line is indented by more spaces than the line before it ("stairs")."""

    def check(response: str) -> bool:
        lines = response.split("\n")
        # Official quirk: blank lines are removed while iterating, so a blank line that directly
        # follows a removed one survives (and then breaks the stairs).
        index = 0
        while index < len(lines):
            if not lines[index].strip():
                lines.remove(lines[index])
            index += 1
        return all(_indent(lower) > _indent(upper) for upper, lower in zip(lines, lines[1:]))

    return check


@register("format:list")
def special_bullets(sep: str) -> Check:
    """The custom bullet marker ``sep`` occurs at least twice."""
    marker = nonblank_text("sep", sep)

    def check(response: str) -> bool:
        return response.count(marker) >= 2

    return check


@register("format:newline")
def word_per_line() -> Check:
    """Each word sits on its own line (punctuation ignored; empty lines allowed)."""

    def check(response: str) -> bool:
        text = delete_ascii_punctuation(response)
        # Only truly empty lines are discarded; a line of spaces still counts as a line.
        lines = [line for line in text.strip().split("\n") if line != ""]
        return len(lines) == len(text.split())

    return check


@register("format:no_bullets_bullets")
def sentences_then_bullets() -> Check:
    """At least two sentences first, then at least two ``*`` bullet lines and nothing else."""

    def check(response: str) -> bool:
        sentence_count = 0
        bullet_count = 0
        in_prose = True
        for line in response.split("\n"):
            line = line.strip()
            if line.startswith("*"):
                if sentence_count < 2:
                    return False
                in_prose = False
                bullet_count += 1
            elif in_prose:
                sentences = split_sentences_punkt(line)
                sentence_count += len(sentences)
                # Official quirk: a blank line (no sentences) also ends the prose part.
                in_prose = bool(sentences)
            else:
                return False
        return bullet_count >= 2

    return check


@register("format:no_whitespace")
def no_whitespace() -> Check:
    """The response contains no whitespace character at all."""

    def check(response: str) -> bool:
        return not any(ch.isspace() for ch in response)

    return check


@register("format:options")
def one_of_options(options: str) -> Check:
    """The whole response is one of the listed options (exactly, for lettered a/b/c choices)."""
    options = nonblank_text("options", options)
    lettered = re.match(r"\W*[aA]\W*[bB]\W*[cC]\W*", options) is not None
    # Official rule: split on "/", else on the substring "or", else on ",".
    separator = "/" if "/" in options else "or" if "or" in options else ","
    choices = [choice.strip() for choice in options.split(separator)]
    trim = PUNCTUATION_AND_SPACE
    normalized = {choice.strip(trim).lower() for choice in choices}

    def check(response: str) -> bool:
        if lettered:
            return response in choices
        return response.strip(trim).lower() in normalized

    return check


@register("format:output_template")
def output_template() -> Check:
    """The response contains the three template headers 'My Answer:', 'My Conclusion:', 'Future Outlook:'."""

    def check(response: str) -> bool:
        return all(header in response for header in ("My Answer:", "My Conclusion:", "Future Outlook:"))

    return check


@register("format:parentheses")
def nested_brackets() -> Check:
    """Brackets ( [ { nest at least 5 deep, and a matching close follows that depth."""
    pairs = {")": "(", "]": "[", "}": "{"}

    def check(response: str) -> bool:
        stack: list[str] = []
        deepest = 0
        for ch in response:
            if ch in "([{":
                stack.append(ch)
                deepest = max(deepest, len(stack))
            elif ch in pairs:
                if stack and stack[-1] == pairs[ch]:
                    stack.pop()
                    if deepest >= 5:
                        return True
                else:  # a mismatched closer starts the count over
                    stack.clear()
                    deepest = 0
        return False

    return check


@register("format:quote_unquote")
def quote_then_explanation() -> Check:
    """No two double quotes are adjacent (ignoring whitespace) and the text does not end on a quote."""
    trailing = string.digits + string.punctuation.replace('"', "")

    def check(response: str) -> bool:
        text = "".join(response.replace("'\"'", "").split())
        if '""' in text:
            return False
        tail = text.strip(trailing)
        return not tail.endswith('"')

    return check


@register("format:quotes")
def nested_quotes() -> Check:
    """Quotes nest at least 3 levels deep; ``"`` and ``'`` (apostrophes included) both count."""

    def check(response: str) -> bool:
        stack: list[str] = []
        deepest = 0
        for ch in response:
            if stack and ch == stack[-1]:
                stack.pop()
                if deepest - len(stack) >= 3:
                    return True
            elif ch in "\"'":
                stack.append(ch)
                deepest = max(deepest, len(stack))
        return False

    return check


@register("format:sub-bullets")
def sub_bullets() -> Check:
    """Every piece of text after a ``*`` contains a ``-`` before the next ``*``."""

    def check(response: str) -> bool:
        return all("-" in piece for piece in response.split("*")[1:])

    return check


@register("format:thesis")
def italic_thesis() -> Check:
    """An HTML-italic (<i> or <em>) non-empty thesis is followed by more text."""

    def check(response: str) -> bool:
        start = response.find("<i>")
        if start == -1:
            start = response.find("<em>")
            if start == -1:
                return False
        rest = response[start:]
        end = rest.find("</i>")
        if end == -1:
            end = rest.find("</em>")
            if end == -1:
                return False
        # Official quirk: offsets assume the 3-char "<i>" and 4-char "</i>" even for <em> tags.
        return bool(rest[3:end].strip()) and bool(rest[end + 4 :].strip())

    return check


@register("format:title_case")
def title_case() -> Check:
    """No word token is lower-case-initial with an all-lower or all-upper remainder (or a lone lower letter)."""

    def check(response: str) -> bool:
        for token in word_tokenize_nltk(response):
            if not token[0].isalpha() or not token[0].islower():
                continue
            rest = token[1:]
            if not rest or rest.islower() or rest.isupper():
                return False
        return True

    return check
