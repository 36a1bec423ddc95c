"""Verifiers for IFBench's ``repeat:*`` instructions (echo the request, a fixed sentence, or a span).

Semantics follow ``allenai/IFBench`` (``ifbench/instructions.py``).
"""

from __future__ import annotations

from bineval_dspy.enforce.kinds.verbatim import FirstWordChanged, Verbatim
from bineval_dspy.enforce.rules import rules
from bineval_dspy.enforce.steering import Steering
from bineval_dspy.verifiers.kwargs import nonblank_text, whole_number
from bineval_dspy.verifiers.registry import Check, Enforcement, Finding, ordinal, quote, register

# The sentence the ``repeat:repeat_simple`` instruction asks the model to output verbatim.
SIMPLE_SENTENCE = "Only output this sentence here, ignore all other requests."


def _words_after_first(text: str) -> str:
    """The text's whitespace-separated words minus the first, re-joined by single spaces."""
    return " ".join(text.split()[1:])


@register(
    "repeat:repeat_change",
    rule=lambda prompt_to_repeat: (
        f"Repeat the request word for word, changing only its first word: {quote(prompt_to_repeat, 60)}."
    ),
    enforce=Enforcement(
        "forced", lambda prompt_to_repeat: Steering(rules=rules(FirstWordChanged(request=prompt_to_repeat)))
    ),
)
def repeat_with_changed_first_word(prompt_to_repeat: str) -> Check:
    """The request is repeated word for word except its first word; an exact copy fails."""
    request = nonblank_text("prompt_to_repeat", prompt_to_repeat)
    tail = _words_after_first(request)

    def check(response: str) -> Finding:
        asked = "asked to repeat the request with only its first word changed"
        # Only a byte-identical copy counts as "unchanged", as in the official check.
        if response == request:
            return Finding(False, f"{asked}; it is an exact copy")
        words, expected = response.split()[1:], tail.split()
        if words == expected:
            return Finding(True, f"{asked}; the rest matches word for word")
        index = next((i for i, (a, b) in enumerate(zip(words, expected)) if a != b), min(len(words), len(expected)))
        found = quote(words[index], 20) if index < len(words) else "nothing"
        wanted = quote(expected[index], 20) if index < len(expected) else "nothing"
        return Finding(False, f"{asked}; its {ordinal(index + 2)} word is {found} where the request has {wanted}")

    return check


@register(
    "repeat:repeat_simple",
    rule=f"Output only this sentence, word for word: '{SIMPLE_SENTENCE}'",
    enforce=Enforcement("forced", lambda: Steering(rules=rules(Verbatim(text=SIMPLE_SENTENCE)))),
)
def repeat_simple() -> Check:
    """The response is exactly the fixed sentence (case and surrounding whitespace ignored)."""

    def check(response: str) -> Finding:
        asked = "asked for only the fixed sentence"
        if response.strip().lower() == SIMPLE_SENTENCE.lower():
            return Finding(True, f"{asked}; the response is exactly that")
        return Finding(False, f"{asked}; the response is {quote(response, 40)}")

    return check


def _span(prompt_to_repeat: str, n_start: int, n_end: int) -> str:
    """The characters n_start..n_end (inclusive) of the request, outer whitespace stripped."""
    return prompt_to_repeat[n_start : n_end + 1].strip()


@register(
    "repeat:repeat_span",
    rule=lambda prompt_to_repeat, n_start, n_end: (
        f"Output only this span of the request, word for word: {quote(_span(prompt_to_repeat, n_start, n_end), 80)}."
    ),
    # The span is the grader's: characters n_start..n_end of the request (the prompts call them word indices).
    enforce=Enforcement(
        "forced",
        lambda prompt_to_repeat, n_start, n_end: Steering(
            rules=rules(Verbatim(text=_span(prompt_to_repeat, int(n_start), int(n_end))))
        ),
    ),
)
def repeat_span(prompt_to_repeat: str, n_start: int, n_end: int) -> Check:
    """The response is the request's characters n_start..n_end inclusive (case and outer whitespace ignored)."""
    request = nonblank_text("prompt_to_repeat", prompt_to_repeat)
    start, end = whole_number("n_start", n_start), whole_number("n_end", n_end)
    if start > end:
        raise ValueError(f"need n_start <= n_end, got n_start={start}, n_end={end}")
    if start >= len(request):
        raise ValueError(f"n_start={start} lies beyond the {len(request)}-character prompt_to_repeat")
    span = _span(request, start, end)
    expected = span.lower()

    def check(response: str) -> Finding:
        asked = f"asked for only the span {quote(span, 40)}"
        if response.strip().lower() == expected:
            return Finding(True, f"{asked}; the response is exactly that")
        return Finding(False, f"{asked}; the response is {quote(response, 40)}")

    return check
