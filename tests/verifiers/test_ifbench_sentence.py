"""Tests for the IFBench ``sentence:*`` verifiers."""

import pytest

from bineval_dspy.verifiers import VerifierError, build_check


def passes(instruction_id: str, response: str, **kwargs) -> bool:
    return build_check(instruction_id, kwargs)(response).passed


# --- sentence:alliteration_increment -------------------------------------------------------


def test_alliteration_increment_passes_when_runs_grow():
    assert passes("sentence:alliteration_increment", "Big bears roam. Silly snakes slide slowly.") is True


def test_alliteration_increment_fails_when_equal():
    assert passes("sentence:alliteration_increment", "Big bears roam. Silly snakes go.") is False


def test_alliteration_increment_ignores_leading_punctuation_and_case():
    assert passes("sentence:alliteration_increment", 'No match here. "Tiny (Tigers) tumble."') is True


def test_alliteration_increment_single_sentence_passes():
    assert passes("sentence:alliteration_increment", "Nothing alliterates here.") is True


# --- sentence:increment --------------------------------------------------------------------


def test_increment_passes_with_exact_step():
    assert passes("sentence:increment", "I run. I run fast. I run very fast.", small_n=1) is True


def test_increment_fails_when_step_differs():
    assert passes("sentence:increment", "I run. I run very fast.", small_n=1) is False


def test_increment_accepts_float_kwarg_and_ignores_punctuation_tokens():
    assert passes("sentence:increment", "Go now. Go - now, quickly: yes.", small_n=2.0) is True


def test_increment_rejects_negative_or_fractional_step():
    with pytest.raises(VerifierError):
        build_check("sentence:increment", {"small_n": -1})
    with pytest.raises(VerifierError):
        build_check("sentence:increment", {"small_n": 1.5})


# --- sentence:keyword ----------------------------------------------------------------------


def test_keyword_passes_in_the_nth_sentence_case_insensitively():
    assert passes("sentence:keyword", "First one. The Cactus blooms. Third.", word="cactus", N=2) is True


def test_keyword_fails_in_another_sentence():
    assert passes("sentence:keyword", "A cactus. Nothing here. Third.", word="cactus", N=2) is False


def test_keyword_needs_whole_word():
    assert passes("sentence:keyword", "One. Cactuses bloom.", word="cactus", N=2) is False


def test_keyword_sentences_are_cut_as_nltk_sent_tokenize_does():
    # An ellipsis before a lower-case word does not end the sentence.
    text = "Wait... the cactus blooms. Then more."
    assert passes("sentence:keyword", text, word="cactus", N=1) is True
    assert passes("sentence:keyword", text, word="cactus", N=2) is False


def test_keyword_fails_when_too_few_sentences():
    assert passes("sentence:keyword", "Only one cactus.", word="cactus", N=2) is False


def test_keyword_rejects_bad_kwargs():
    with pytest.raises(VerifierError):
        build_check("sentence:keyword", {"word": "x", "N": 0})
    with pytest.raises(VerifierError):
        build_check("sentence:keyword", {"word": "  ", "N": 1})
