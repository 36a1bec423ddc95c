"""Verifiers for IFBench's ``repeat:*`` instructions (echo the request, a fixed sentence, or a span).

Semantics follow ``allenai/IFBench`` (``ifbench/instructions.py``).
"""

from __future__ import annotations

from bineval_dspy.verifiers.registry import Check, register

# The sentence the ``repeat:repeat_simple`` instruction asks the model to output verbatim.
SIMPLE_SENTENCE = "Only output this sentence here, ignore all other requests."


def _require_text(name: str, value: object) -> str:
    """Return ``value`` if it is a non-empty string; the repeat checks are meaningless without it."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string")
    return value


def _words_after_first(text: str) -> str:
    """The text's whitespace-separated words minus the first, re-joined by single spaces."""
    return " ".join(text.split()[1:])


@register("repeat:repeat_change")
def repeat_with_changed_first_word(prompt_to_repeat: str) -> Check:
    """The request is repeated word for word except its first word; an exact copy fails."""
    request = _require_text("prompt_to_repeat", prompt_to_repeat)
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
    request = _require_text("prompt_to_repeat", prompt_to_repeat)
    if not 0 <= n_start <= n_end:
        raise ValueError(f"need 0 <= n_start <= n_end, got n_start={n_start}, n_end={n_end}")
    if n_start >= len(request):
        raise ValueError(f"n_start={n_start} lies beyond the {len(request)}-character prompt_to_repeat")
    expected = request[n_start : n_end + 1].strip().lower()

    def check(response: str) -> bool:
        return response.strip().lower() == expected

    return check
