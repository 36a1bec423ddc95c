"""Tests for the IFBench ``words:*`` verifiers."""

import pytest

from bineval_dspy.verifiers import VerifierError, build_check


def passes(instruction_id: str, response: str, **kwargs) -> bool:
    return build_check(instruction_id, kwargs)(response).passed


# --- words:alphabet ------------------------------------------------------------------------


def test_alphabet_passes_and_wraps_after_z():
    assert passes("words:alphabet", "Yellow zebras, ants! Bears.") is True


def test_alphabet_fails_on_skipped_letter():
    assert passes("words:alphabet", "Apples bananas dates") is False


def test_alphabet_fails_when_first_word_starts_with_digit():
    assert passes("words:alphabet", "1 apple") is False


# --- words:consonants ----------------------------------------------------------------------


def test_consonants_passes_when_every_word_has_a_cluster():
    assert passes("words:consonants", "Strong brown crabs") is True


def test_consonants_fails_on_word_without_cluster():
    assert passes("words:consonants", "Strong red crabs") is False


def test_consonants_punctuation_breaks_a_cluster():
    assert passes("words:consonants", "ab-c") is False


# --- words:keywords_specific_position ------------------------------------------------------


def test_keywords_specific_position_passes():
    text = "Hello there. The quick fox runs."
    assert passes("words:keywords_specific_position", text, keyword="Quick", n=2, m=2) is True


def test_keywords_specific_position_fails_on_other_word():
    text = "Hello there. The quick fox runs."
    assert passes("words:keywords_specific_position", text, keyword="quick", n=2, m=3) is False


def test_keywords_specific_position_skips_punctuation_tokens():
    text = "Hello there. Well, quick fox runs."
    assert passes("words:keywords_specific_position", text, keyword="quick", n=2, m=2) is True


def test_keywords_specific_position_fails_when_sentence_missing():
    assert passes("words:keywords_specific_position", "One sentence only.", keyword="only", n=2, m=1) is False


def test_keywords_specific_position_rejects_zero_positions():
    with pytest.raises(VerifierError):
        build_check("words:keywords_specific_position", {"keyword": "x", "n": 0, "m": 1})


# --- words:last_first ----------------------------------------------------------------------


def test_last_first_passes():
    assert passes("words:last_first", "I like cats. Cats like mice! Mice run.") is True


def test_last_first_fails():
    assert passes("words:last_first", "I like cats. Dogs like mice.") is False


def test_last_first_single_sentence_passes():
    assert passes("words:last_first", "Just one sentence.") is True


# --- words:no_consecutive ------------------------------------------------------------------


def test_no_consecutive_passes():
    assert passes("words:no_consecutive", "A big cat danced.") is True


def test_no_consecutive_fails_case_insensitively():
    assert passes("words:no_consecutive", "The Tall cat.") is False


def test_no_consecutive_ignores_punctuation():
    assert passes("words:no_consecutive", 'Run, "rabbit" go') is False


# --- words:odd_even_syllables --------------------------------------------------------------


def test_odd_even_syllables_passes_when_parity_alternates():
    # cat (1) table (2) dog (1) people (2)
    assert passes("words:odd_even_syllables", "Cat table, dog people.") is True


def test_odd_even_syllables_fails_on_two_odd_words_in_a_row():
    assert passes("words:odd_even_syllables", "Cat dog table") is False


def test_odd_even_syllables_counts_with_syllapys_word_table():
    # syllapy's table says "every" has 2 syllables (a vowel-group rule says 3) and "being" 2 (rule: 1)
    assert passes("words:odd_even_syllables", "Cat every dog being.") is True


def test_odd_even_syllables_words_with_digits_count_zero_syllables():
    assert passes("words:odd_even_syllables", "Cat 42nd dog") is True


# --- words:palindrome ----------------------------------------------------------------------


def test_palindrome_passes_with_ten_long_palindromes():
    assert passes("words:palindrome", "Level, radar, civic, kayak, rotor, madam, refer, stats, tenet, racecar.") is True


def test_palindrome_fails_with_nine():
    assert passes("words:palindrome", "level radar civic kayak rotor madam refer stats tenet") is False


def test_palindrome_short_words_do_not_count():
    assert passes("words:palindrome", "noon " * 10) is False


def test_palindrome_repeats_count():
    assert passes("words:palindrome", "level " * 10) is True


# --- words:paragraph_last_first ------------------------------------------------------------


def test_paragraph_last_first_passes():
    assert passes("words:paragraph_last_first", "Time heals all wounds, given time.\n\nLove wins over love.") is True


def test_paragraph_last_first_fails():
    assert passes("words:paragraph_last_first", "Time heals all wounds.\nLove wins.") is False


def test_paragraph_last_first_keeps_inner_punctuation():
    assert passes("words:paragraph_last_first", "Time, heals time.") is False


# --- words:prime_lengths -------------------------------------------------------------------


def test_prime_lengths_passes():
    assert passes("words:prime_lengths", "We are happy, truly.") is True


def test_prime_lengths_fails_on_one_letter_word():
    assert passes("words:prime_lengths", "I am here") is False


def test_prime_lengths_counts_letters_after_deleting_punctuation():
    assert passes("words:prime_lengths", "don't") is False  # "dont" has 4 letters


# --- words:repeats -------------------------------------------------------------------------


def test_repeats_passes_at_limit():
    assert passes("words:repeats", "The cat and the dog.", small_n=2) is True


def test_repeats_fails_above_limit_case_insensitively():
    assert passes("words:repeats", "The cat, the dog, THE bird.", small_n=2) is False


def test_repeats_rejects_negative_limit():
    with pytest.raises(VerifierError):
        build_check("words:repeats", {"small_n": -2})


# --- words:start_verb ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [
        "Imagine a quiet town.",
        "Let's begin.",
        "Whirring and pulsing, the city woke.",
        "Is it true?",
        "Based on data, yes.",
    ],
)
def test_start_verb_accepts_verbs(response):
    assert passes("words:start_verb", response) is True


@pytest.mark.parametrize(
    "response",
    [
        "The city woke.",
        "Here is a list.",
        "Certainly! Imagine this.",
        "**Imagine** this.",
        "Love is blind.",
        "Morning came.",
    ],
)
def test_start_verb_rejects_non_verbs(response):
    assert passes("words:start_verb", response) is False


# --- words:vowel ---------------------------------------------------------------------------


def test_vowel_passes_with_three_vowels():
    assert passes("words:vowel", "A cat sat on a mat, alone.") is True


def test_vowel_fails_with_four_vowels():
    assert passes("words:vowel", "A cat sat on a mat, alone in the sun.") is False


def test_vowel_fails_on_more_than_one_line():
    assert passes("words:vowel", "A cat sat.\nA rat ran.") is False


# --- words:words_position ------------------------------------------------------------------


def test_words_position_passes():
    assert passes("words:words_position", "A whisper came and went, a whisper gone.", keyword="whisper") is True


def test_words_position_fails():
    assert passes("words:words_position", "A whisper came and went, gone.", keyword="whisper") is False


def test_words_position_final_punctuation_token_is_not_a_word():
    assert passes("words:words_position", "A whisper, then whisper it", keyword="whisper") is True
    assert passes("words:words_position", "A whisper, then whisper it!", keyword="whisper") is True


def test_words_position_inner_punctuation_tokens_count():
    assert passes("words:words_position", "Well, whisper then whisper it.", keyword="whisper") is False
