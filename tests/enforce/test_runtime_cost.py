"""The steerer's per-step shortcuts decide exactly what the plain computations decide: the mask added as a float
bias, the tokens continuing a fixed phrase looked up by piece, the word count kept across steps (issue 54: a step's
steering must cost microseconds on a 49k vocabulary)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bineval_dspy.core.text import split_sentences_punkt, word_runs
from bineval_dspy.enforce.runtime import Steerer
from bineval_dspy.enforce.steering import Steering
from bineval_dspy.enforce.vocabulary import Vocabulary

PIECES = ["", " the", " The", "the", "re", "s", ".", ",", " ", "\n", "\n\n", " a", "A", " cat", "cat", "-", "1", " 2", "é", " x"]
VOCAB = Vocabulary(PIECES, [0])


def test_the_masked_logits_are_the_banned_tokens_at_minus_infinity_and_the_rest_unchanged():
    steerer = Steerer(Steering(case="lower", banned=(",",)), VOCAB, 32)
    steerer.text = "some words"
    logits = np.random.default_rng(0).normal(size=len(PIECES)).astype(np.float32)
    out = steerer.masked(logits.copy())
    banned = VOCAB.banned(steerer.s)
    assert out.dtype == np.float32
    assert np.all(np.isneginf(out[banned])) and np.array_equal(out[~banned], logits[~banned])
    assert banned[PIECES.index(" The")] and banned[PIECES.index(",")] and not banned[PIECES.index(" the")]


@pytest.mark.parametrize("more", ["", "ca", "cat"])
def test_the_tokens_continuing_a_fixed_phrase_are_those_a_scan_of_the_vocabulary_finds(more):
    steerer = Steerer(Steering(choice=("the cat sat", "the dog")), VOCAB, 32)
    steerer.start()  # writes the phrases' shared start, "the "
    steerer.text += more
    written = steerer.text[steerer.choice_at :]
    tails = [option[len(written) :] for option in steerer.s.choice if option.startswith(written)]
    scanned = [bool(p) and any(t.startswith(p) for t in tails) for p in PIECES]
    assert steerer._continuing().tolist() == scanned


def test_the_word_count_kept_across_steps_equals_counting_the_whole_text():
    rng = random.Random(7)
    steerer = Steerer(Steering(min_words=5), VOCAB, 400)
    for step in range(400):
        if step == 200:  # text rewritten, not grown: counted afresh
            steerer.text = steerer.text[: len(steerer.text) // 2] + "-"
        steerer.text += rng.choice(PIECES[1:])
        assert steerer._words() == len(word_runs(steerer.text)), repr(steerer.text)


def test_the_sentence_floor_decided_without_punkt_when_too_few_marks_agrees_with_punkt():
    rng = random.Random(3)
    pieces = [" Mr.", " Smith", " said", " it", ".", "!", "?", " e.g.", " Yes", "\n", " 3.5", " ok"]
    for floor in (1, 2, 3, 5):
        steerer = Steerer(Steering(min_sentences=floor), VOCAB, 400)
        for _ in range(120):
            steerer.text += rng.choice(pieces)
            punkt = len(split_sentences_punkt(steerer.text + " " + steerer._closing_words())) >= floor
            assert steerer._floors_met() == punkt, repr(steerer.text)
