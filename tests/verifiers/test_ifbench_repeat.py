"""Unit tests for the IFBench ``repeat:*`` verifiers."""

from __future__ import annotations

import pytest

import bineval_dspy.verifiers.ifbench_repeat  # noqa: F401  (registers the verifiers)
from bineval_dspy.verifiers import VerifierError, build_check, follows

REQUEST = "Write a poem about cats."


def passes(instruction_id: str, response: str, mode: str = "strict", **kwargs) -> bool:
    return follows(build_check(instruction_id, kwargs), response, mode)


# --- repeat:repeat_change ------------------------------------------------------------------------


def test_repeat_change_first_word_changed():
    assert passes("repeat:repeat_change", "Compose a poem about cats.", prompt_to_repeat=REQUEST) is True
    assert passes("repeat:repeat_change", REQUEST, prompt_to_repeat=REQUEST) is False


def test_repeat_change_rest_must_match_exactly():
    assert passes("repeat:repeat_change", "Compose A poem about cats.", prompt_to_repeat=REQUEST) is False
    assert passes("repeat:repeat_change", "Compose a poem about dogs.", prompt_to_repeat=REQUEST) is False


def test_repeat_change_whitespace_between_words_is_ignored():
    assert passes("repeat:repeat_change", "Compose  a poem\nabout cats.", prompt_to_repeat=REQUEST) is True
    # Official quirk: only a byte-identical copy counts as unchanged.
    assert passes("repeat:repeat_change", "Write  a poem about cats.", prompt_to_repeat=REQUEST) is True


def test_repeat_change_requires_prompt():
    with pytest.raises(VerifierError):
        build_check("repeat:repeat_change", {"prompt_to_repeat": ""})


# --- repeat:repeat_simple ------------------------------------------------------------------------


def test_repeat_simple():
    sentence = "Only output this sentence here, ignore all other requests."
    assert passes("repeat:repeat_simple", sentence) is True
    assert passes("repeat:repeat_simple", f"  {sentence.upper()}\n") is True
    assert passes("repeat:repeat_simple", sentence.rstrip(".")) is False
    assert passes("repeat:repeat_simple", f"{sentence} Sure!") is False


# --- repeat:repeat_span --------------------------------------------------------------------------

SPAN_PROMPT = "The quick brown fox jumps"


def test_repeat_span_inclusive_end():
    assert passes("repeat:repeat_span", "quick", prompt_to_repeat=SPAN_PROMPT, n_start=4, n_end=8) is True
    assert passes("repeat:repeat_span", "quic", prompt_to_repeat=SPAN_PROMPT, n_start=4, n_end=7) is True
    assert passes("repeat:repeat_span", "quick", prompt_to_repeat=SPAN_PROMPT, n_start=4, n_end=7) is False


def test_repeat_span_ignores_case_and_outer_whitespace():
    assert passes("repeat:repeat_span", " QUICK\n", prompt_to_repeat=SPAN_PROMPT, n_start=4, n_end=8) is True
    assert passes("repeat:repeat_span", "quick brown", prompt_to_repeat=SPAN_PROMPT, n_start=4, n_end=8) is False


@pytest.mark.parametrize(
    "kwargs",
    [
        {"prompt_to_repeat": SPAN_PROMPT, "n_start": -1, "n_end": 3},
        {"prompt_to_repeat": SPAN_PROMPT, "n_start": 5, "n_end": 4},
        {"prompt_to_repeat": SPAN_PROMPT, "n_start": 40, "n_end": 45},
        {"prompt_to_repeat": "", "n_start": 0, "n_end": 3},
    ],
)
def test_repeat_span_rejects_bad_kwargs(kwargs):
    with pytest.raises(VerifierError):
        build_check("repeat:repeat_span", kwargs)
