"""The line, whitespace and forced-text rule kinds (``enforce.kinds.layout`` and ``enforce.kinds.forced``) on
real-ish partial words, and two constraints no built-in id has, declared by a verifier of the test's own."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest

from bineval_dspy.core.text import split_sentences_punkt
from bineval_dspy.enforce.kinds.forced import (
    Brackets,
    Quotes,
    QuoteUnquote,
    SentenceEmoji,
    SentenceMark,
    Thesis,
    TitleCase,
)
from bineval_dspy.enforce.kinds.layout import LineStart, NoWhitespace, Staircase, SubBullets, WordPerLine
from bineval_dspy.enforce.rules import rules
from bineval_dspy.enforce.steering import Steering
from bineval_dspy.verifiers import build_check
from bineval_dspy.verifiers.enforcement import compile_plan
from bineval_dspy.verifiers.registry import VERIFIERS, Enforcement, Finding, register
from tests.enforce.test_property import drive

PIECES = ["\n", " cat", "cat", " the", " The", "s", "'t", "not", " (", ".", "!", "?", " big", "a b", " ", "\n the", "]", ")", '"']


@dataclass
class _Reply:
    text: str = ""
    tokens: int = 0
    limit: int = 100
    pieces: list[str] = field(default_factory=lambda: PIECES)

    @property
    def new_word(self) -> np.ndarray:
        return np.array([p[:1].isspace() for p in self.pieces])


def _masked(rule, text: str) -> set[str]:
    logits = np.zeros(len(PIECES), dtype=np.float32)
    rule.mask(logits, _Reply(text))
    return {p for p, x in zip(PIECES, logits) if not np.isfinite(x)}


def test_a_new_word_on_a_line_with_one_becomes_a_newline():
    rule = WordPerLine()
    logits = np.zeros(len(PIECES), dtype=np.float32)
    rule.mask(logits, _Reply("The\ncat"))
    assert not np.isfinite(logits[PIECES.index(" cat")]) and not np.isfinite(logits[PIECES.index(" big")])
    assert logits[PIECES.index("\n")] > 1.0  # the new words' probability went to the newline
    assert np.isfinite(logits[PIECES.index("s")]) and not np.isfinite(logits[PIECES.index(" (")])  # a word follows a blank
    assert _masked(rule, "The\n") == set()  # a line with no word yet takes one
    assert not rule.allows(_Reply("The\n ("), "\n") and not rule.allows(_Reply("The\n("), "\n")  # no line without a word
    assert rule.allows(_Reply("The\n(cat"), "\n")
    assert [p for p in PIECES if rule.bans(p)] == ["a b", " ", "\n the"]


def test_title_case_refuses_a_lower_case_word_start_as_the_tokenizer_sees_it():
    rule = TitleCase()
    assert rule.bans(" the") and rule.bans("\n the") and not rule.bans(" The") and not rule.bans("cat")
    assert "cat" in _masked(rule, "The ") and "cat" not in _masked(rule, "The C")  # "Ccat" continues a word
    assert not rule.allows(_Reply("Don"), "'t") and not rule.allows(_Reply("The Can"), "not")  # nltk: "n't", "not"
    assert rule.allows(_Reply("The Can"), " Not")
    assert rule.conflict(Steering(end_phrase="Write it down.")) and not rule.conflict(Steering(end_phrase="Write It Down."))


def test_brackets_refuse_a_closing_that_does_not_match_until_one_closed_at_full_depth():
    rule = Brackets(depth=5)
    assert rule.prefix() == "([{(["
    reply = _Reply("([{([ cats")
    assert not rule.allows(reply, ")") and rule.allows(reply, "]") and rule.allows(reply, " (")
    assert not rule.allows(_Reply("([{(["), "]")  # words come between brackets
    rule.after(reply, "]")
    assert rule.allows(reply, "}")  # it holds now, whatever follows
    fresh = Brackets(depth=5)
    fresh.prefix()
    assert fresh.finish("([{([ text (a)") == "([{([ text (a)])}])"


@pytest.mark.parametrize("seed", range(30))
def test_quotes_close_to_the_full_depth_whatever_the_model_wrote(seed: int):
    rng = random.Random(seed)
    text = Quotes(depth=3).prefix() + "".join(rng.choice(["a", " ", "'", '"', "don't "]) for _ in range(20))
    assert build_check("format:quotes", {}, "p")(Quotes(depth=3).finish(text)).passed


def test_quote_unquote_refuses_two_quotes_side_by_side_and_an_ending_on_one():
    rule = QuoteUnquote()
    assert not rule.allows(_Reply('He said "hi" '), '"')
    assert rule.allows(_Reply('He said "hi'), '"') and not rule.may_end(_Reply('He said "hi".'))
    assert not rule.allows(_Reply('He said "hi', tokens=99), '"')  # the last token may not end on one


def test_an_emoji_follows_each_sentence_end_and_a_sentence_of_marks_is_refused():
    rule = SentenceEmoji()
    assert rule.after(_Reply("It is big."), ".") == " 😊" and rule.after(_Reply("It is big"), " big") is None
    assert not rule.allows(_Reply("It is big. 😊"), "!")
    logits = np.zeros(len(PIECES) + 1, dtype=np.float32)
    rule.mask(logits, _Reply("It is big", pieces=[*PIECES, ".\n"]))
    assert not np.isfinite(logits[-1]) and logits[PIECES.index(".")] > 0.5  # the newline comes after the emoji
    assert rule.finish("It is big. 😊 And more") == "It is big. 😊 And more 😊"
    assert rule.finish("It is big. 😊 And more.") == "It is big. 😊 And more 😊."
    assert split_sentences_punkt("It is big. 😊 And more") == ["It is big.", "😊 And more"]  # the sentences stay apart


def test_a_staircase_forces_one_more_space_than_the_line_above():
    rule = Staircase()
    assert rule.after(_Reply("A\n  B\n"), "\n") == "   "
    assert not rule.allows(_Reply("A\n  "), "\n") and rule.bans("\n\n") and rule.bans("\nNext")


def test_line_rules_refuse_each_other_and_whitespace_refuses_forced_spaces():
    plan = compile_plan([("format:sub-bullets", {}), ("format:line_indent", {}), ("format:no_whitespace", {}), ("format:output_template", {})], "p", "annotated")
    assert [d.status for d in plan.decisions] == ["enforced", "conflict", "conflict", "conflict"]
    assert NoWhitespace().bans(" x") and SubBullets().bans("**")
    ceiling = ("length_constraints:number_sentences", {"num_sentences": 2, "relation": "less than"})
    for instruction_id in ("format:sub-bullets", "format:no_bullets_bullets", "format:list", "format:thesis"):
        kwargs = {"sep": "-"} if instruction_id == "format:list" else {}
        plan = compile_plan([ceiling, (instruction_id, kwargs)], "p", "annotated")
        assert [d.status for d in plan.decisions] == ["enforced", "conflict"], instruction_id  # text written at the end


def test_a_thesis_is_closed_at_its_first_sentence_end_and_text_must_follow():
    rule = Thesis()
    reply = _Reply("<i>Cats are the best pets.", tokens=5)
    assert rule.after(reply, ".") == "</i>" and not rule.may_end(_Reply(reply.text + "</i>"))
    assert rule.may_end(_Reply(reply.text + "</i> So"))


# --- constraints no built-in id has, declared by a verifier of the test's own -----------------------------


@pytest.fixture
def own_verifiers() -> Iterator[None]:
    """Two verifiers of the kind a user's file declares, registered with their enforcement for this test only."""

    @register("test:numbered_lines", rule="Start every line with its number.", enforce=Enforcement("forced", lambda: Steering(rules=rules(LineStart(text="{n}. ", min_lines=3)))))
    def numbered_lines():
        def check(response: str) -> Finding:
            lines = response.split("\n")
            ok = len(lines) >= 3 and all(line.split(".")[0] == str(n) for n, line in enumerate(lines, start=1))
            return Finding(ok, f"lines: {lines!r}")

        return check

    @register("test:digit_lines", rule="Start every line with a digit.", enforce=Enforcement("mask", lambda: Steering(rules=rules(LineStart(chars="0123456789", min_lines=2)))))
    def digit_lines():
        return lambda response: Finding(all(line.lstrip()[:1].isdigit() for line in response.split("\n")), response)

    @register("test:bang", rule="End every sentence with '!'.", enforce=Enforcement("mask", lambda: Steering(rules=rules(SentenceMark(mark="!")))))
    def bang():
        def check(response: str) -> Finding:
            sentences = split_sentences_punkt(response)
            return Finding(bool(sentences) and all(s.rstrip("\"')]").endswith("!") for s in sentences), f"{sentences!r}")

        return check

    yield
    for instruction_id in ("test:numbered_lines", "test:digit_lines", "test:bang"):
        VERIFIERS.pop(instruction_id, None)


@pytest.mark.parametrize("instruction_id", ["test:numbered_lines", "test:digit_lines", "test:bang"])
@pytest.mark.parametrize("seed", range(8))
def test_a_verifiers_own_enforcement_makes_it_pass(own_verifiers: None, instruction_id: str, seed: int):
    plan = compile_plan([(instruction_id, {}), ("punctuation:no_comma", {})], "p", "annotated")
    assert [d.status for d in plan.decisions] == ["enforced", "enforced"]
    text = drive(plan.steering, seed, sample=seed % 2 == 1)
    assert build_check(instruction_id, {}, "p")(text).passed, text
    assert "," not in text


def test_the_mark_redirects_the_other_end_marks_probability():
    logits = np.zeros(len(PIECES), dtype=np.float32)
    SentenceMark(mark="!").mask(logits, _Reply("It is big"))
    assert not np.isfinite(logits[PIECES.index(".")]) and not np.isfinite(logits[PIECES.index("?")])
    assert logits[PIECES.index("!")] > 1.0
    assert SentenceMark(mark="!").finish("It is big! And small") == "It is big! And small!"


def test_every_format_id_is_enforced_or_says_why_not():
    ids = [i for i in VERIFIERS if i.startswith("format:")]
    assert len(ids) >= 14
    assert [i for i in ids if VERIFIERS[i].enforce is None and not VERIFIERS[i].unenforceable] == []


def test_the_steering_codes_digest_covers_the_rule_kinds(monkeypatch: pytest.MonkeyPatch):
    """A reply cached under another version of a rule kind is not replayed: the kinds' modules join the digest."""
    from pathlib import Path

    from bineval_dspy.enforce import steering

    kinds = Path(steering.__file__).parent / "kinds" / "layout.py"
    before = steering.code_digest()
    steering.code_digest.cache_clear()
    original = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: original(self) + (b"#" if self == kinds else b""))
    try:
        assert steering.code_digest() != before
    finally:
        steering.code_digest.cache_clear()


@pytest.mark.parametrize(
    ("constraints", "reason"),
    [
        ([("sentence:keyword", {"word": "cactiform", "N": 2.0}), ("format:newline", {})], "sentences puts several words"),
        ([("custom:sentence_alphabet", {}), ("format:no_whitespace", {})], "need whitespace between them"),
        ([("words:last_first", {}), ("format:no_bullets_bullets", {})], "the chain does not link"),  # the chain names it first
    ],
)
def test_line_rules_refuse_the_sentence_rules_they_break(constraints, reason):
    plan = compile_plan(constraints, "p", "annotated")
    assert [d.status for d in plan.decisions] == ["enforced", "conflict"], plan.decisions
    assert reason in plan.decisions[1].reason


@pytest.mark.parametrize("seed", range(6))
def test_a_sentence_floor_is_met_one_word_a_line(seed: int):
    constraints = [("format:newline", {}), ("length_constraints:number_sentences", {"num_sentences": 6, "relation": "at least"})]
    plan = compile_plan(constraints, "p", "annotated")
    assert [d.status for d in plan.decisions] == ["enforced", "enforced"]
    text = drive(plan.steering, seed, sample=bool(seed % 2))
    for instruction_id, kwargs in constraints:
        finding = build_check(instruction_id, kwargs, "p")(text)
        assert finding.passed, (instruction_id, finding.detail, text)
