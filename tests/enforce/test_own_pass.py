"""Breaks the fifth pass's own probes found in steering (issue 55, last deliverable): a case mask that let a
title-case letter through and ended a reply of CJK alone, and a user word predicate whose non-bool answer was read
as a verdict. Each reply is driven as the embedded engine drives it, then checked by its verifier."""

from __future__ import annotations

import numpy as np
import pytest

from bineval_dspy.enforce import Steering, rules, word_predicate, words
from bineval_dspy.enforce.runtime import END, Steerer
from bineval_dspy.enforce.vocabulary import Vocabulary
from bineval_dspy.verifiers import build_check
from tests.enforce.test_property import drive

pytestmark = pytest.mark.usefixtures("own_verifiers")

# title-case letters, CJK and emoji (no case), letters of both cases outside ASCII
UNICODE = [" 猫", "が", "好き", " 😀", "😀", " É", "É", " é", " straße", " STRASSE", " ǅ", "ǈ", " ß", " Σ", " σ", " İ", " i", "\u200b", " ok", ".", "\n"]


def drive_unicode(steering: Steering, seed: int, limit: int = 60) -> str:
    """``drive`` over ``UNICODE``: the end of text is the last token."""
    rng = np.random.default_rng(seed)
    end = len(UNICODE)
    steerer = Steerer(steering, Vocabulary([*UNICODE, ""], [end]), limit)
    steerer.start()
    decoded = 0
    while decoded < steerer.limit:
        token = steerer.choose(steerer.masked(rng.normal(size=end + 1).astype(np.float32)), lambda x: int(np.argmax(x)))
        if token == end:
            if steerer.ended() is None:
                break
            continue
        decoded += 1
        if steerer.accepted(token) == END:
            break
    return steerer.finish()


@pytest.mark.parametrize(("case", "instruction_id"), [("upper", "change_case:english_capital"), ("lower", "change_case:english_lowercase")])
def test_a_case_mask_keeps_title_case_letters_and_cjk_alone_out(case, instruction_id):
    for seed in range(12):
        text = drive_unicode(Steering(case=case), seed)
        assert not any(c.istitle() and not c.isupper() for c in text), text  # "ǅ" is neither case to str.isupper
        assert text.isupper() if case == "upper" else text.islower(), text  # a cased letter, of the asked case
        finding = build_check(instruction_id, {})(text)
        assert finding.passed or "reads as" in finding.detail, (text, finding)  # only langdetect's English may fail


@pytest.mark.parametrize(("name", "answer"), [("probe:none", None), ("probe:no", "no")])
def test_a_word_predicate_answering_no_bool_fails_the_reply_by_name(name, answer):
    word_predicate(name)(lambda word: answer)
    # before: None refused every word (a reply of punctuation alone) and "no" passed every word, silently
    with pytest.raises(TypeError, match=rf"word predicate {name} returned (NoneType|str) .*, not True or False"):
        drive(Steering(rules=rules(words(name))), 0)
