"""The budget and counter kinds on real-ish partial text: a token that would break an exact count or a share is
refused (on the partial word), a floor is forced where the reply runs out, and what they force passes the
verifier that counts the same way."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from bineval_dspy.core.text import split_sentences_punkt
from bineval_dspy.enforce.kinds.budgets import (
    ExactKeywords,
    ExactNumbers,
    LeastConjunctions,
    LeastDifferentWords,
    LeastNames,
    LeastPronouns,
    StopWordShare,
)
from bineval_dspy.enforce.kinds.marks import AllMarks, EqualSentences, EveryNthJapanese, SentenceMarks
from bineval_dspy.enforce.rules import RuleKind
from bineval_dspy.enforce.runtime import END
from bineval_dspy.verifiers import build_check
from bineval_dspy.verifiers.enforcement import compile_plan

PIECES = [" the", " theory", " th", "e", "ory", " 7", "7", ".", "?", "!", " cat", " neb", "ula", " nebula", "\n"]


@dataclass
class _Reply:
    text: str
    tokens: int = 10
    limit: int = 100
    pieces: list[str] = field(default_factory=lambda: PIECES)

    @property
    def new_word(self) -> np.ndarray:
        return np.array([p[:1].isspace() for p in self.pieces])


def _allowed(kind: RuleKind, text: str) -> list[str]:
    reply = _Reply(text)
    logits = np.zeros(len(PIECES), dtype=np.float32)
    kind.mask(logits, reply)
    return [p for p, v in zip(PIECES, logits) if np.isfinite(v) and kind.allows(reply, p)]


def test_exact_numbers_refuse_one_too_many_but_let_a_number_grow():
    kind = ExactNumbers(count=2)
    assert " 7" in _allowed(ExactNumbers(count=2), "I have 3 cats")
    allowed = _allowed(kind, "I have 3 cats and 4")
    assert " 7" not in allowed and "7" not in allowed  # the mask is conservative once the count is reached
    assert "." in allowed and " cat" in allowed
    grow = ExactNumbers(count=2)
    assert grow.allows(_Reply("I have 3 cats and 4"), "7")  # 47 is still the second number
    assert not grow.allows(_Reply("I have 3 cats and 4."), " 7")
    assert grow.allows(_Reply("Pi is 3."), "7")  # '3.7' is one number once punctuation is deleted


def test_exact_keywords_refuse_the_token_that_completes_one_occurrence_too_many():
    kind = ExactKeywords(keywords=("nebula", "cat"), times=(1, 2))
    allowed = _allowed(kind, "A nebula and a neb")
    assert "ula" not in allowed and " nebula" not in allowed and " neb" in allowed and " cat" in allowed
    assert " cat" not in _allowed(ExactKeywords(keywords=("nebula", "cat"), times=(1, 2)), "cat cat")


def test_stop_word_share_refuses_a_stop_word_only_without_room_and_checks_the_partial_word():
    kind = StopWordShare(percent=20)
    text = "The river"  # 1 stop word in 2 words: no room for another (2/7 > 20%)
    allowed = _allowed(kind, text)
    assert " the" not in allowed and " theory" in allowed and " th" in allowed
    assert not StopWordShare(percent=20).allows(_Reply(text + " th"), "e")  # 'the' completed
    assert StopWordShare(percent=20).allows(_Reply(text + " th"), "ory")
    roomy = "river mountain garden window harbor lantern meadow forest candle"
    assert " the" in _allowed(StopWordShare(percent=20), roomy)


@pytest.mark.parametrize(
    ("kind", "instruction_id", "kwargs"),
    [
        (ExactNumbers(count=4), "count:numbers", {"N": 4}),
        (
            ExactKeywords(keywords=("a1", "b2", "c3", "d4", "e5"), times=(1, 2, 3, 5, 7)),
            "count:keywords_multiple",
            {f"keyword{i}": w for i, w in enumerate(["a1", "b2", "c3", "d4", "e5"], 1)},
        ),
        (LeastConjunctions(count=7), "count:conjunctions", {"small_n": 7}),
        (LeastPronouns(count=25), "count:pronouns", {"N": 25}),
        (LeastNames(count=18), "count:person_names", {"N": 18}),
        (LeastDifferentWords(count=60), "count:unique_word_count", {"N": 60}),
        (StopWordShare(percent=25), "ratio:stop_words", {"percentage": 25}),
        (AllMarks(), "count:punctuation", {}),
        (SentenceMarks(marks=".?", parts=(2, 1)), "ratio:sentence_type", {}),
        (SentenceMarks(marks=".?!", parts=(1, 1, 1)), "ratio:sentence_balance", {}),
    ],
)
@pytest.mark.parametrize(
    "text",
    [
        "The cat and the dog sat on the mat and it was 3 o'clock.",
        "So it was that they went",
        "Why? Yes. No! And so on and on. Is it",
    ],
)
def test_what_the_finish_forces_passes_the_verifier(kind, instruction_id, kwargs, text):
    check = build_check(instruction_id, kwargs)
    finished = kind.finish(text)
    assert finished.startswith(text)
    assert check(finished).passed, (finished, check(finished).detail)


def test_a_floor_is_forced_at_a_sentence_end_near_the_token_limit_and_at_the_end():
    kind = LeastNames(count=3)
    assert kind.after(_Reply("Emma met a cat.", tokens=10, limit=100), ".") is None
    forced = kind.after(_Reply("Emma met a cat.", tokens=95, limit=100), ".")
    assert forced is not None and build_check("count:person_names", {"N": 3})("Emma met a cat." + forced).passed
    assert kind.at_end(_Reply("Emma, Liam and Zoe.")) is None


def test_sentence_marks_allow_only_the_mark_most_behind():
    kind = SentenceMarks(marks=".?", parts=(2, 1))
    assert "." in _allowed(kind, "It rains")
    assert "?" not in _allowed(SentenceMarks(marks=".?", parts=(2, 1)), "It rains")
    assert "." not in _allowed(SentenceMarks(marks=".?", parts=(2, 1)), "It rains. It pours")
    assert "?" in _allowed(SentenceMarks(marks=".?", parts=(2, 1)), "It rains. It pours. Why")
    balance = SentenceMarks(marks=".?!", parts=(1, 1, 1))
    assert "!" in _allowed(balance, "It rains. Why? Oh") and "." not in _allowed(
        SentenceMarks(marks=".?!", parts=(1, 1, 1)), "It rains. Why? Oh"
    )


def test_every_nth_word_gets_a_japanese_character_as_it_begins():
    kind = EveryNthJapanese(step=3)
    assert kind.after(_Reply("one two"), "two") is None
    assert kind.after(_Reply("one two th"), " th") == "語"
    assert not EveryNthJapanese(step=3).allows(_Reply("one two"), " cat\n")  # the third word completed without it
    assert EveryNthJapanese(step=3).allows(_Reply("one two th語"), "e")
    check = build_check("count:words_japanese", {"N": 3})
    assert check("one two th語e four five 42").passed


@pytest.mark.parametrize(
    ("constraints", "reason"),
    [
        (
            [
                ("count:numbers", {"N": 2}),
                ("detectable_format:multiple_sections", {"section_spliter": "Section", "num_sections": 2}),
            ],
            "digits",
        ),
        ([("ratio:stop_words", {"percentage": 30}), ("count:pronouns", {"N": 5})], "stop words"),
        (
            [
                ("length_constraints:number_words", {"num_words": 50, "relation": "less than"}),
                ("count:person_names", {"N": 3}),
            ],
            "ceiling",
        ),
        (
            [("startend:end_checker", {"end_phrase": "Any other questions?"}), ("count:words_japanese", {"N": 3})],
            "forces words",
        ),
        (
            [("startend:end_checker", {"end_phrase": "Any other questions?"}), ("ratio:sentence_type", {})],
            "sentence end",
        ),
        ([("ratio:sentence_type", {}), ("count:conjunctions", {"small_n": 3})], "sentence end"),
        ([("punctuation:no_comma", {}), ("count:punctuation", {})], "banned"),
        ([("change_case:english_lowercase", {}), ("count:person_names", {"N": 3})], "capitals"),
    ],
)
def test_what_cannot_hold_together_is_a_named_conflict(constraints, reason):
    plan = compile_plan(constraints, "a prompt", "annotated")
    assert [d.status for d in plan.decisions] == ["enforced", "conflict"], plan.decisions
    assert reason in plan.decisions[1].reason


def test_word_count_range_is_the_word_floor_and_ceiling():
    plan = compile_plan([("count:word_count_range", {"min_words": 57, "max_words": 61})], "p", "annotated")
    assert (plan.steering.min_words, plan.steering.max_words) == (57, 62)


def test_different_words_raise_the_token_budget_and_a_pool_too_small_is_invalid():
    plan = compile_plan([("count:unique_word_count", {"N": 100})], "p", "annotated")
    assert plan.steering.min_tokens >= 150
    plan = compile_plan([("count:unique_word_count", {"N": 5000})], "p", "annotated")
    assert [d.status for d in plan.decisions] == ["invalid"]


def test_unenforceable_ids_say_why():
    plan = compile_plan([("ratio:overlap", {"reference_text": "abc def", "percentage": 50})], "p", "annotated")
    assert [(d.status, bool(d.reason)) for d in plan.decisions] == [("unenforceable", True)]


def test_equal_sentences_are_closed_at_the_exact_length_and_nothing_follows_the_last():
    kind = EqualSentences(count=2, length=30)
    assert kind.bans(".") and kind.bans("?!") and not kind.bans(" cat")
    text = "The cat sat on a"  # 16 characters: 14 left, so the sentence is closed now
    closing = kind.after(_Reply(text), " a")
    assert closing == " consequently. " and len((text + closing).strip()) == 30
    text += closing
    assert not kind.allows(_Reply(text), '"') and kind.allows(_Reply(text), " The")
    assert not kind.allows(_Reply(text + "A dog ran far and fast and"), " furthermore")  # would leave under 4
    assert kind.after(_Reply(text + "A dog"), " dog") is None and not kind.may_end(_Reply(text))
    text += "A dog ran far and fast"
    assert kind.after(_Reply(text), " fast") == END  # the last sentence: the reply ends, the finish closes it
    text = kind.finish(text)
    assert [len(s.strip()) for s in split_sentences_punkt(text)] == [30, 30]


def test_equal_sentences_the_budget_left_unwritten_are_filled_at_the_finish():
    kind = EqualSentences(count=3, length=40)
    text = kind.finish("The cat sat on the")
    assert build_check("ratio:sentence_words", {})(text).passed
    assert [len(s.strip()) for s in split_sentences_punkt(text)] == [40, 40, 40], text


def test_the_steering_codes_digest_covers_the_rule_kinds(monkeypatch):
    """A cached reply made under other rule-kind code must not be replayed: the kinds' modules are in the digest."""
    from pathlib import Path

    from bineval_dspy.enforce import steering

    steering.code_digest.cache_clear()
    before = steering.code_digest()
    read = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: read(p) + (b"#" if p.name == "budgets.py" else b""))
    steering.code_digest.cache_clear()
    try:
        assert steering.code_digest() != before
    finally:
        monkeypatch.undo()
        steering.code_digest.cache_clear()


def test_a_floor_past_what_can_be_forced_is_named_in_one_line():
    for instruction_id, kwargs in (("count:person_names", {"N": 51}), ("count:unique_word_count", {"N": 5000})):
        (decision,) = compile_plan([(instruction_id, kwargs)], "p", "annotated").decisions
        assert decision.status == "invalid" and "\n" not in decision.reason and "more than" in decision.reason


def test_conjunctions_force_capitalised_forms_only_past_seven():
    assert LeastConjunctions(count=5).forced_texts() == [" and but for nor or so yet."]
    assert "And" in LeastConjunctions(count=9).forced_texts()[0]
    text = "and but for nor or so yet"
    assert build_check("count:conjunctions", {"small_n": 9})(LeastConjunctions(count=9).finish(text)).passed


@pytest.mark.parametrize(
    "constraints",
    [
        [("format:list", {"sep": "-"}), ("count:numbers", {"N": 3})],
        [("format:sub-bullets", {}), ("ratio:stop_words", {"percentage": 40})],
        [("format:line_indent", {}), ("count:person_names", {"N": 2})],
        [("words:vowel", {}), ("count:numbers", {"N": 3})],
        [("format:line_indent", {}), ("count:words_japanese", {"N": 3})],
    ],
)
def test_a_budget_sits_beside_rules_its_forced_text_does_not_break(constraints):
    plan = compile_plan(constraints, "a prompt", "annotated")
    assert [d.status for d in plan.decisions] == ["enforced", "enforced"], plan.decisions


@pytest.mark.parametrize(
    ("constraints", "reason"),
    [
        ([("words:last_first", {}), ("count:numbers", {"N": 3})], "the chain does not link"),  # the chain names it first
        ([("words:last_first", {}), ("count:punctuation", {})], "the chain does not link"),  # the chain names it first
        ([("words:keywords_specific_position", {"keyword": "giggle", "n": 2, "m": 3}), ("count:pronouns", {"N": 4})], "before the place"),
        ([("words:last_first", {}), ("ratio:sentence_type", {})], "the chain does not link"),  # the chain names it first
        ([("format:list", {"sep": "-"}), ("count:words_japanese", {"N": 3})], "forces words"),
    ],
)
def test_a_budget_refuses_the_rules_its_forced_clause_breaks(constraints, reason):
    plan = compile_plan(constraints, "a prompt", "annotated")
    statuses = [d.status for d in plan.decisions]
    assert statuses == ["enforced", "conflict"], plan.decisions
    assert reason in plan.decisions[1].reason
