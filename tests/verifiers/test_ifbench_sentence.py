"""Tests for the IFBench ``sentence:*`` verifiers and the shared sentence/word tokenizers."""

import pytest

from bineval_dspy.verifiers import VerifierError, build_check
from bineval_dspy.verifiers.ifbench_sentence import (
    _punkt_sentences,
    _split_sentences,
    _word_tokenize,
)


def passes(instruction_id: str, response: str, **kwargs) -> bool:
    return build_check(instruction_id, kwargs)(response)


# --- rule-based sentence splitter ---------------------------------------------------------


def test_split_sentences_on_terminal_marks():
    assert _split_sentences("One two. Three?  Four!\nFive") == ["One two.", "Three?", "Four!", "Five"]


def test_split_sentences_keeps_titles_decimals_domains_and_initials():
    text = "Dr. Smith paid 3.5 dollars at shop.com today. J. R. R. Tolkien wrote it."
    assert _split_sentences(text) == [
        "Dr. Smith paid 3.5 dollars at shop.com today.",
        "J. R. R. Tolkien wrote it.",
    ]


def test_split_sentences_moves_period_outside_closing_quote():
    assert _split_sentences('We call it "paraphrasing." It helps.') == ['We call it "paraphrasing".', "It helps."]


def test_split_sentences_ends_sentence_after_ellipsis():
    assert _split_sentences("Wait... what") == ["Wait...", "what"]


def test_split_sentences_of_blank_text_is_empty():
    assert _split_sentences("   ") == []


# --- Punkt (nltk.sent_tokenize) and Treebank (nltk.word_tokenize) --------------------------


def test_punkt_keeps_known_abbreviations_and_realigns_quotes():
    assert _punkt_sentences('He met Dr. Smith. She said "Hi." Then left!') == [
        "He met Dr. Smith.",
        'She said "Hi."',
        "Then left!",
    ]


def test_punkt_breaks_after_unknown_abbreviation_and_before_capitalised_starter():
    assert _punkt_sentences("Fruit, e.g. apples. The end... The real end") == [
        "Fruit, e.g.",
        "apples.",
        "The end...",
        "The real end",
    ]


def test_punkt_numbered_list_marker_is_its_own_sentence():
    assert _punkt_sentences("1. First item") == ["1.", "First item"]


def test_word_tokenize_splits_clitics_quotes_and_final_period():
    assert _word_tokenize('I can\'t say "no". Dr. Lee (the boss) won\'t!') == [
        "I", "ca", "n't", "say", "``", "no", "''", ".",
        "Dr.", "Lee", "(", "the", "boss", ")", "wo", "n't", "!",
    ]  # fmt: skip


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


def test_keyword_fails_when_too_few_sentences():
    assert passes("sentence:keyword", "Only one cactus.", word="cactus", N=2) is False


def test_keyword_rejects_bad_kwargs():
    with pytest.raises(VerifierError):
        build_check("sentence:keyword", {"word": "x", "N": 0})
    with pytest.raises(VerifierError):
        build_check("sentence:keyword", {"word": "  ", "N": 1})
