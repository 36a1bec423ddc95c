"""Tests for the IFBench ``ratio:*`` verifiers."""

import pytest

import bineval_dspy.verifiers.ifbench_ratio  # noqa: F401  (registers the verifiers)
from bineval_dspy.verifiers import VerifierError, build_check


def passes(instruction_id: str, response: str, **kwargs) -> bool:
    return build_check(instruction_id, kwargs)(response).passed


# --- ratio:overlap -------------------------------------------------------------------------


def test_overlap_passes_for_identical_text_at_100():
    assert passes("ratio:overlap", "abcdef", reference_text="abcdef", percentage=100) is True


def test_overlap_counts_character_trigrams():
    # "abcxyz" has trigrams abc bcx cxy xyz; only "abc" is in the reference: 25 %.
    assert passes("ratio:overlap", "abcxyz", reference_text="abcdef", percentage=25) is True
    assert passes("ratio:overlap", "abcxyz", reference_text="abcdef", percentage=50) is False


def test_overlap_tolerance_is_two_points_inclusive():
    assert passes("ratio:overlap", "abcxyz", reference_text="abcdef", percentage=27) is True
    assert passes("ratio:overlap", "abcxyz", reference_text="abcdef", percentage=23) is True
    assert passes("ratio:overlap", "abcxyz", reference_text="abcdef", percentage=28) is False


def test_overlap_fails_for_text_shorter_than_a_trigram():
    assert passes("ratio:overlap", "ab", reference_text="ab", percentage=0) is False


def test_overlap_rejects_out_of_range_percentage():
    with pytest.raises(VerifierError):
        build_check("ratio:overlap", {"reference_text": "x", "percentage": 120})


# --- ratio:sentence_balance ----------------------------------------------------------------


def test_sentence_balance_passes_with_one_of_each():
    assert passes("ratio:sentence_balance", "It rains. Does it? It does!") is True


def test_sentence_balance_fails_when_unbalanced():
    assert passes("ratio:sentence_balance", "It rains. It pours. Does it? It does!") is False


def test_sentence_balance_counts_a_sentence_by_its_last_character():
    # nltk.sent_tokenize keeps the closing quote after the period, so 'He said "stop."' is not declarative.
    assert passes("ratio:sentence_balance", 'He said "stop." Why? Go!') is False
    assert passes("ratio:sentence_balance", 'He said "stop". Why? Go!') is True


# --- ratio:sentence_type -------------------------------------------------------------------


def test_sentence_type_passes_with_two_to_one():
    assert passes("ratio:sentence_type", "It rains. It pours. Why?") is True


def test_sentence_type_fails_with_one_to_one():
    assert passes("ratio:sentence_type", "It rains. Why?") is False


def test_sentence_type_exclamations_do_not_count():
    assert passes("ratio:sentence_type", "It rains. It pours. Why? Wow!") is True


def test_sentence_type_quoted_period_is_not_declarative():
    # Earlier IFBench releases split with IFEval's rule-based splitter, which moves '."' to '".' and so
    # counted the first sentence as declarative (the shared official verdict of key 163 says True).
    assert passes("ratio:sentence_type", 'We call it "paraphrasing." It helps.\n\nWhat is it?') is False


# --- ratio:sentence_words ------------------------------------------------------------------


def test_sentence_words_passes_for_three_equal_length_sentences():
    assert passes("ratio:sentence_words", "Cats nap. Dogs run. Owls fly.") is True


def test_sentence_words_fails_when_lengths_differ():
    assert passes("ratio:sentence_words", "Cats nap. Dogs run. Owls glide.") is False


def test_sentence_words_needs_exactly_three_sentences():
    assert passes("ratio:sentence_words", "Cats nap. Dogs run.") is False
    assert passes("ratio:sentence_words", "Cats nap. Dogs run. Owls fly. Bats hop.") is False


# --- ratio:stop_words ----------------------------------------------------------------------


def test_stop_words_passes_below_limit():
    # "the" and "on" are stop words: 2 of 6 words, 33.3 %.
    assert passes("ratio:stop_words", "Cats sleep on the warm mat", percentage=34) is True


def test_stop_words_fails_above_limit():
    assert passes("ratio:stop_words", "Cats sleep on the warm mat", percentage=33) is False


def test_stop_words_limit_is_inclusive():
    assert passes("ratio:stop_words", "the cat", percentage=50) is True


def test_stop_words_is_case_insensitive_and_counts_contraction_parts():
    # "Don't" gives the word tokens "Don" and "t", both stop words: 2 of 3.
    assert passes("ratio:stop_words", "Don't panic", percentage=66) is False
    assert passes("ratio:stop_words", "Don't panic", percentage=67) is True


def test_stop_words_fails_without_words():
    assert passes("ratio:stop_words", "...", percentage=100) is False
