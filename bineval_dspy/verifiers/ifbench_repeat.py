"""Verifiers for IFBench's ``repeat:*`` instructions (echo the request, a fixed sentence, or a span).

Semantics follow ``allenai/IFBench`` (``ifbench/instructions.py``).
"""

from __future__ import annotations

from bineval_dspy.verifiers.kwargs import nonblank_text, whole_number
from bineval_dspy.verifiers.registry import Check, register

# The sentence the ``repeat:repeat_simple`` instruction asks the model to output verbatim.
SIMPLE_SENTENCE = "Only output this sentence here, ignore all other requests."


def _words_after_first(text: str) -> str:
    """The text's whitespace-separated words minus the first, re-joined by single spaces."""
    return " ".join(text.split()[1:])


@register("repeat:repeat_change")
def repeat_with_changed_first_word(prompt_to_repeat: str) -> Check:
    """The request is repeated word for word except its first word; an exact copy fails."""
    request = nonblank_text("prompt_to_repeat", prompt_to_repeat)
    tail = _words_after_first(request)

    def check(response: str) -> bool:
        # Only a byte-identical copy counts as "unchanged", as in the official check.
        return response != request and _words_after_first(response) == tail

    return check


@register("repeat:repeat_simple")
def repeat_simple() -> Check:
    """The response is exactly the fixed sentence (case and surrounding whitespace ignored)."""

    def check(response: str) -> bool:
        return response.strip().lower() == SIMPLE_SENTENCE.lower()

    return check


@register("repeat:repeat_span")
def repeat_span(prompt_to_repeat: str, n_start: int, n_end: int) -> Check:
    """The response is the request's characters n_start..n_end inclusive (case and outer whitespace ignored)."""
    request = nonblank_text("prompt_to_repeat", prompt_to_repeat)
    start, end = whole_number("n_start", n_start), whole_number("n_end", n_end)
    if start > end:
        raise ValueError(f"need n_start <= n_end, got n_start={start}, n_end={end}")
    if start >= len(request):
        raise ValueError(f"n_start={start} lies beyond the {len(request)}-character prompt_to_repeat")
    expected = request[start : end + 1].strip().lower()

    def check(response: str) -> bool:
        return response.strip().lower() == expected

    return check
