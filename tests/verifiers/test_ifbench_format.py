"""Unit tests for the IFBench ``format:*`` verifiers."""

from __future__ import annotations

import pytest

import bineval_dspy.verifiers.ifbench_format  # noqa: F401  (registers the verifiers)
from bineval_dspy.verifiers import VerifierError, build_check, follows


def passes(instruction_id: str, response: str, mode: str = "strict", **kwargs) -> bool:
    return follows(build_check(instruction_id, kwargs), response, mode)


# --- format:emoji --------------------------------------------------------------------------------


def test_emoji_every_sentence():
    assert passes("format:emoji", "I love pizza 🍕. It is tasty 😋.") is True
    assert passes("format:emoji", "I love pizza 🍕. It is tasty.") is False


def test_emoji_opening_next_sentence_counts():
    assert passes("format:emoji", "I love pizza. 🍕 It is tasty 😋") is True


def test_emoji_with_variation_selector():
    assert passes("format:emoji", "Stay safe 🛡️.") is True


def test_emoji_newline_is_not_a_sentence_boundary():
    assert passes("format:emoji", "Line one\nLine two 😀") is True
    assert passes("format:emoji", "Line one 😀\nLine two") is False


def test_emoji_abbreviation_does_not_end_sentence():
    assert passes("format:emoji", "Dr. Smith is here 👋.") is True


# --- format:line_indent --------------------------------------------------------------------------


def test_line_indent_stairs():
    assert passes("format:line_indent", "Step one\n  Step two\n    Step three") is True
    assert passes("format:line_indent", "Step one\n  Step two\n  Step three") is False


def test_line_indent_blank_lines():
    assert passes("format:line_indent", "A\n\n B") is True
    # Official quirk: the second of two consecutive blank lines survives and breaks the stairs.
    assert passes("format:line_indent", "A\n\n\n B") is False


def test_line_indent_counts_spaces_only():
    assert passes("format:line_indent", "A\n\tB") is False


# --- format:list ---------------------------------------------------------------------------------


def test_list_separator_at_least_twice():
    assert passes("format:list", "SEPARATOR one SEPARATOR two", sep="SEPARATOR") is True
    assert passes("format:list", "SEPARATOR one, two", sep="SEPARATOR") is False


def test_list_separator_is_case_sensitive_and_non_overlapping():
    assert passes("format:list", "separator a separator b", sep="SEPARATOR") is False
    assert passes("format:list", "!?!?!? item", sep="!?!?") is False


def test_list_rejects_empty_separator():
    with pytest.raises(VerifierError):
        build_check("format:list", {"sep": ""})


# --- format:newline ------------------------------------------------------------------------------


def test_newline_one_word_per_line():
    assert passes("format:newline", "one\ntwo\nthree") is True
    assert passes("format:newline", "one two\nthree") is False


def test_newline_ignores_punctuation_and_empty_lines():
    assert passes("format:newline", "Hello,\n\nworld!") is True
    assert passes("format:newline", "one\n-\ntwo") is True


def test_newline_whitespace_only_line_counts_as_a_line():
    assert passes("format:newline", "one\n   \ntwo") is False


# --- format:no_bullets_bullets -------------------------------------------------------------------


def test_sentences_then_bullets():
    assert passes("format:no_bullets_bullets", "This is first. This is second.\n* a\n* b") is True
    assert passes("format:no_bullets_bullets", "Only one sentence.\n* a\n* b") is False
    assert passes("format:no_bullets_bullets", "One. Two.\n* a") is False


def test_sentences_then_bullets_blank_lines():
    assert passes("format:no_bullets_bullets", "One. Two.\n\n* a\n* b") is True
    # Official quirk: a blank line ends the prose part, so more prose after it fails.
    assert passes("format:no_bullets_bullets", "One.\n\nTwo.\n* a\n* b") is False


def test_sentences_then_bullets_nothing_after_bullets():
    assert passes("format:no_bullets_bullets", "One. Two.\n* a\n* b\nThe end.") is False
    assert passes("format:no_bullets_bullets", "One. Two.\n* a\n* b\n", "strict") is False
    assert passes("format:no_bullets_bullets", "One. Two.\n* a\n* b\n", "loose") is True


# --- format:no_whitespace ------------------------------------------------------------------------


def test_no_whitespace():
    assert passes("format:no_whitespace", "NoSpacesHere") is True
    assert passes("format:no_whitespace", "Two words") is False
    assert passes("format:no_whitespace", "tab\there") is False
    assert passes("format:no_whitespace", "non\u00a0breaking") is False


# --- format:options ------------------------------------------------------------------------------


def test_options_text_choices_ignore_case_and_punctuation():
    assert passes("format:options", "Yes.", options="yes/no/maybe") is True
    assert passes("format:options", "yes, definitely", options="yes/no/maybe") is False


def test_options_split_on_or():
    assert passes("format:options", "I don't know", options="I know or I don't know") is True
    assert passes("format:options", "I do not know", options="I know or I don't know") is False


def test_options_lettered_choices_are_exact():
    assert passes("format:options", "b)", options="a), b), c), d)") is True
    assert passes("format:options", "b", options="a), b), c), d)") is False
    assert passes("format:options", "b).", options="a), b), c), d)") is False


def test_options_rejects_empty():
    with pytest.raises(VerifierError):
        build_check("format:options", {"options": "  "})


# --- format:output_template ----------------------------------------------------------------------


def test_output_template():
    good = "My Answer: yes\nMy Conclusion: fine\nFuture Outlook: good"
    assert passes("format:output_template", good) is True
    assert passes("format:output_template", "My Answer: yes\nMy Conclusion: fine") is False
    assert passes("format:output_template", good.lower()) is False


# --- format:parentheses --------------------------------------------------------------------------


def test_parentheses_five_levels():
    assert passes("format:parentheses", "(a [b {c (d [e] d) c} b] a)") is True
    assert passes("format:parentheses", "(a [b {c (d) c} b] a)") is False


def test_parentheses_mismatch_resets_and_unclosed_fails():
    assert passes("format:parentheses", "((((( ] )") is False
    assert passes("format:parentheses", "((((( text") is False
    assert passes("format:parentheses", "(((((x)") is True


# --- format:quote_unquote ------------------------------------------------------------------------


def test_quote_followed_by_explanation():
    assert passes("format:quote_unquote", '"To be" is a famous line.') is True
    assert passes("format:quote_unquote", 'He said "hello".') is False


def test_quote_unquote_adjacent_quotes_fail():
    assert passes("format:quote_unquote", '"a" "b" explained') is False


def test_quote_unquote_without_quotes_passes():
    assert passes("format:quote_unquote", "No quotes at all.") is True


# --- format:quotes -------------------------------------------------------------------------------


def test_quotes_three_levels():
    assert passes("format:quotes", "\"a 'b \"c\" b' a\"") is True
    assert passes("format:quotes", "\"a 'b' a\"") is False


def test_quotes_need_closing():
    assert passes("format:quotes", "\"a 'b \"c") is False


# --- format:sub-bullets --------------------------------------------------------------------------


def test_sub_bullets_under_each_bullet():
    assert passes("format:sub-bullets", "* Fruit\n  - apple\n* Veg\n  - kale") is True
    assert passes("format:sub-bullets", "* Fruit\n  - apple\n* Veg") is False


def test_sub_bullets_loose_mode_drops_asterisks():
    assert passes("format:sub-bullets", "* Fruit\n* Veg", "strict") is False
    assert passes("format:sub-bullets", "* Fruit\n* Veg", "loose") is True


# --- format:thesis -------------------------------------------------------------------------------


def test_thesis_in_italics_then_text():
    assert passes("format:thesis", "<i>Cats rule.</i> Here is why.") is True
    assert passes("format:thesis", "<i>Cats rule.</i>") is False
    assert passes("format:thesis", "<i> </i> Here is why.") is False
    assert passes("format:thesis", "Cats rule. Here is why.") is False


def test_thesis_em_tags():
    assert passes("format:thesis", "<em>Cats rule.</em> Here is why.") is True
    # Official quirk: "<em>" offsets are taken as for "<i>", so an empty <em></em> still passes.
    assert passes("format:thesis", "<em></em>") is True


# --- format:title_case ---------------------------------------------------------------------------


def test_title_case():
    assert passes("format:title_case", "The Quick Brown Fox") is True
    assert passes("format:title_case", "The quick Brown Fox") is False


def test_title_case_acronyms_and_mixed_case_pass():
    assert passes("format:title_case", "NASA Launches A Rocket") is True
    assert passes("format:title_case", "New iPhone Sales") is True
    assert passes("format:title_case", "Well-known Facts") is True


def test_title_case_lowercase_tokens_fail():
    assert passes("format:title_case", "Plan a Trip") is False
    assert passes("format:title_case", "(the Answer)") is False
    # nltk splits "Don't" into "Do" + "n't", and "n't" is lower-case.
    assert passes("format:title_case", "Don't Stop") is False
