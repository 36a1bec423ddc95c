"""Tests for the shared text primitives: the NLTK splitters and tokenizers the verifiers mimic."""

from __future__ import annotations

import pytest

from bineval_dspy.core.text import (
    delete_ascii_punctuation,
    split_sentences_punkt,
    trim_punctuation,
    word_runs,
    word_tokenize_nltk,
)

# --- small helpers ---------------------------------------------------------------------------


def test_word_runs_are_word_character_runs() -> None:
    assert len(word_runs("Don't stop-now, 3.5 times!")) == 7  # Don t stop now 3 5 times
    assert len(word_runs("It's a well-known fact: 3.5 apples!")) == 9
    assert word_runs("  ... !!! ") == []


def test_punctuation_is_deleted_inside_and_trimmed_at_the_ends() -> None:
    assert delete_ascii_punctuation("It's 3.5 (or so)!") == "Its 35 or so"
    assert trim_punctuation(" 'quoted,' ") == "quoted"


# --- Punkt (nltk.sent_tokenize) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
        ("First line\nsecond line", ["First line\nsecond line"]),  # never at bare newlines
        ("Dr. Smith lives in the U.S. with Mr. Jones.", ["Dr. Smith lives in the U.S. with Mr. Jones."]),
        ("It is in the U.S. The capital is far.", ["It is in the U.S.", "The capital is far."]),
        ("The U.S. Army is big.", ["The U.S. Army is big."]),
        ("Use e.g. apples.", ["Use e.g.", "apples."]),  # "e.g" is not in punkt's abbreviation list
        ("Fruit, e.g. apples. The end... The real end", ["Fruit, e.g.", "apples.", "The end...", "The real end"]),
        ("Wow?! Really.", ["Wow?!", "Really."]),
        ("Hello!!! World", ["Hello!!!", "World"]),
        ('He said "Hi." Then left.', ['He said "Hi."', "Then left."]),  # the quote stays after the period
        ('He met Dr. Smith. She said "Hi." Then left!', ["He met Dr. Smith.", 'She said "Hi."', "Then left!"]),
        ('He said "Yes!" and left.', ['He said "Yes!"', "and left."]),
        ("(Done.) Next one.", ["(Done.)", "Next one."]),
        ("1. First item", ["1.", "First item"]),
        ("1. First item\n2. Second item", ["1.", "First item\n2.", "Second item"]),
        ("1. Apple\n2. banana", ["1.", "Apple\n2. banana"]),  # a number before a lowercase word
        ("Wait... the end.", ["Wait... the end."]),
        ("Wait... The end.", ["Wait...", "The end."]),
        ("Wait... what?", ["Wait... what?"]),
        ("J. Smith came. Plan B. The end.", ["J. Smith came.", "Plan B.", "The end."]),
        (
            "Mr. Smith met J. R. Tolkien. He left at 5 p.m. today. See item 2. it matters.",
            ["Mr. Smith met J. R. Tolkien.", "He left at 5 p.m. today.", "See item 2. it matters."],
        ),
        ("No.space.after.dots", ["No.space.after.dots"]),
        ("**Bold.**", ["**Bold.", "**"]),  # punkt does not keep '*' with the sentence
        ("", []),
        ("   ", []),
    ],
)
def test_split_sentences_punkt(text: str, sentences: list[str]) -> None:
    assert split_sentences_punkt(text) == sentences


# --- Treebank (nltk.word_tokenize) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        (
            "I DON'T LIKE AT&T, BUT NASA IS COOL. U.S.A. IS BIG.",
            "I DO N'T LIKE AT & T , BUT NASA IS COOL . U.S.A. IS BIG .",
        ),
        ('"CANNOT," she said (twice).', "`` CAN NOT , '' she said ( twice ) ."),
        ("A well-known **BOLD** claim", "A well-known * * BOLD * * claim"),
        ("Don't stop, it's (really) fine.", "Do n't stop , it 's ( really ) fine ."),
        ("They're here. It's mine, isn't it?", "They 're here . It 's mine , is n't it ?"),
        ("(you) cannot gimme “she” 3,000", "( you ) can not gim me “ she ” 3,000"),
        ("Done. this—that", "Done . this—that"),  # mid-text periods split only at a Punkt break
        ("use e.g. this", "use e.g . this"),  # "e.g" is no Punkt abbreviation, so its period ends a sentence
        (
            'I can\'t say "no". Dr. Lee (the boss) won\'t!',
            "I ca n't say `` no '' . Dr. Lee ( the boss ) wo n't !",
        ),
        ("code: ```lua", "code : `` ` lua"),  # NLTK pads backtick runs, then splits off a ``
    ],
)
def test_word_tokenize_nltk(text: str, tokens: str) -> None:
    assert word_tokenize_nltk(text) == tokens.split()
