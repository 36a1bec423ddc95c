"""Tests for the kwarg validators every verifier module shares."""

from __future__ import annotations

import pytest

from bineval_dspy.verifiers.kwargs import comparison, nonblank_text, percent, single_letter, whole_number, word_list


def test_whole_number_accepts_ints_and_integral_floats_only() -> None:
    assert whole_number("n", 3) == 3
    assert whole_number("n", 3.0) == 3
    for bad in (2.5, True, "3", None, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="n must be a whole number"):
            whole_number("n", bad)
    with pytest.raises(ValueError, match="n must be >= 1"):
        whole_number("n", 0, minimum=1)


def test_percent_lies_between_0_and_100() -> None:
    assert percent("p", 40) == 40.0
    for bad in (-1, 100.5, True, "50", float("nan")):
        with pytest.raises(ValueError, match="p must be a number between 0 and 100"):
            percent("p", bad)


def test_comparison_knows_ifevals_two_relations() -> None:
    assert comparison("r", "at least") == "at least"
    with pytest.raises(ValueError, match="r must be one of"):
        comparison("r", "at most")


def test_nonblank_text_is_returned_unchanged() -> None:
    assert nonblank_text("t", " x ") == " x "
    for bad in ("", "  ", None, 3):
        with pytest.raises(ValueError, match="t must be a non-empty string"):
            nonblank_text("t", bad)


def test_word_list_strips_each_word_and_rejects_a_bare_string() -> None:
    assert word_list("w", [" a", "b "]) == ["a", "b"]
    for bad in ("ocean", [], ["ok", " "], [3]):
        with pytest.raises(ValueError, match="w must be a non-empty"):
            word_list("w", bad)


def test_single_letter() -> None:
    assert single_letter("l", "a") == "a"
    for bad in ("ab", "#", "1", "", None):
        with pytest.raises(ValueError, match="l must be a single letter"):
            single_letter("l", bad)
