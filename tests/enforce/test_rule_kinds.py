"""The rule kinds' seam: a kind registered here is carried by a Steering as data, merged (combined or refused),
folded into the static mask, and its hooks steer the decoder."""

from __future__ import annotations

from typing import ClassVar

import pytest

from bineval_dspy.core.text import word_runs
from bineval_dspy.enforce.rules import RULE_KINDS, Reply, Rule, RuleConflict, RuleKind, rule_kind, rules
from bineval_dspy.enforce.runtime import END
from bineval_dspy.enforce.steering import Conflict, Steering, merge
from tests.enforce.test_property import VOCAB, drive


class _ShortWords(RuleKind):
    """Every word at most ``most`` letters (a test kind: the partial word is checked as it grows)."""

    name: ClassVar[str] = "test-short-words"
    how: ClassVar = "mask"
    most: int

    def combine(self, other: RuleKind) -> RuleKind:
        assert isinstance(other, _ShortWords)
        return _ShortWords(most=min(self.most, other.most))

    def allows(self, reply: Reply, piece: str) -> bool:
        return all(len(w) <= self.most for w in word_runs(reply.text[-40:] + piece))


class _NoDigits(RuleKind):
    name: ClassVar[str] = "test-no-digits"
    how: ClassVar = "mask"
    static: ClassVar[bool] = True

    def bans(self, piece: str) -> bool:
        return any(c.isdigit() for c in piece)


class _Bang(RuleKind):
    """Ends with '!', forced at the finish; at least one word first."""

    name: ClassVar[str] = "test-bang"
    how: ClassVar = "forced"

    def forced_texts(self) -> list[str]:
        return ["!"]

    def may_end(self, reply: Reply) -> bool:
        return bool(word_runs(reply.text))

    def after(self, reply: Reply, piece: str) -> str | None:
        return END if len(word_runs(reply.text)) >= 6 else None

    def finish(self, text: str) -> str:
        return text.rstrip(" .!?") + "!"



def test_rules_travel_as_data_and_merge():
    a = Steering(rules=rules(_ShortWords(most=4)))
    b = Steering(rules=rules(_ShortWords(most=3), _NoDigits()))
    merged = merge(a, b)
    assert [r.kind for r in merged.rules] == ["test-short-words", "test-no-digits"]
    assert merged.rules[0].build() == _ShortWords(most=3)
    assert Steering.model_validate_json(merged.to_json()) == merged


class _Lead(RuleKind):
    name: ClassVar[str] = "test-lead"
    how: ClassVar = "forced"
    text: str

    def forced_texts(self) -> list[str]:
        return [self.text]

    def prefix(self) -> str:
        return self.text


for _kind in (_ShortWords, _NoDigits, _Bang, _Lead):
    if _kind.name not in RULE_KINDS:
        rule_kind(_kind)


def test_two_different_rules_of_a_kind_that_does_not_combine_conflict():
    assert merge(Steering(rules=rules(_Lead(text="a"))), Steering(rules=rules(_Lead(text="a")))).rules == rules(_Lead(text="a"))
    with pytest.raises(RuleConflict):
        _Lead(text="a").combine(_Lead(text="b"))
    with pytest.raises(Conflict, match="two different test-lead"):
        merge(Steering(rules=rules(_Lead(text="a"))), Steering(rules=rules(_Lead(text="b"))))


def test_forced_text_of_a_rule_is_checked_against_the_masks():
    with pytest.raises(Conflict, match="capitals"):
        merge(Steering(case="lower"), Steering(rules=rules(_Lead(text="Hello"))))


def test_unknown_kind_or_bad_params_are_one_line():
    with pytest.raises(ValueError, match="unknown steering rule kind"):
        Rule(kind="nope").build()
    with pytest.raises(ValueError, match="test-short-words"):
        Rule(kind="test-short-words", params={"most": "many"}).build()


@pytest.mark.parametrize("seed", range(12))
def test_hooks_steer_the_decoder(seed):
    steering = Steering(rules=rules(_ShortWords(most=3), _NoDigits(), _Bang()))
    text = drive(steering, seed, sample=seed % 2 == 1)
    assert text.endswith("!")
    assert all(len(w) <= 3 for w in word_runs(text)), text
    assert not any(c.isdigit() for c in text)
    assert VOCAB.banned(steering)[VOCAB.pieces.index(" 42")]
