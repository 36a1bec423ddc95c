"""Words at fixed places of the reply: a first word from a list (a verb, an opener) with a word forced after it and
words it may not be followed by; a word forced before the last one; words the reply must hold at least N of,
added at its end when the model wrote too few."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, PrivateAttr, model_validator

from bineval_dspy.core.text import word_tokenize_nltk
from bineval_dspy.enforce.kinds.words import plain, prefix_of_any
from bineval_dspy.enforce.rules import Reply, RuleKind, rule_kind

_LETTERS = re.compile(r"[A-Za-z]*")
_AFTER_FIRST = frozenset(",.!?;")  # what may touch the first word and still leave it a token of its own


def _first_steps(text: str) -> tuple[str, str]:
    """The reply's first run of letters and what follows it (leading whitespace skipped)."""
    stripped = text.lstrip()
    word = _LETTERS.match(stripped).group()  # type: ignore[union-attr]
    return word, stripped[len(word) :]


def _before_first_word(steering: Any, name: str) -> str:
    """Why something forced comes before the reply's first word ('' when nothing does)."""
    structure = steering.structure
    if steering.lead or steering.opening or steering.title or steering.choice or steering.json_value:
        return "something else is forced at the start of the reply"
    if structure is not None and (structure.kind in ("bullets", "sections") or structure.nth == 1):
        return "the structure's first unit opens with forced text"
    if any(rule.kind != name and rule.build().prefix() for rule in steering.rules):
        return "another rule writes the start of the reply"
    return ""


_FIRSTS: dict[tuple[int, str], tuple[Sequence[str], tuple[np.ndarray, np.ndarray]]] = {}


@rule_kind
class LeadWord(RuleKind):
    """The reply's first word is one of ``words`` (any case), written by the model under a mask; ``then`` is
    forced right after it (the words must then be prefix-free, so the word is known to be complete); the token
    after it may not be one of ``refuse_next``."""

    name: ClassVar[str] = "lead-word"
    how: ClassVar = "mask"
    words: tuple[str, ...] = Field(min_length=1)
    then: str = ""
    refuse_next: tuple[str, ...] = ()
    _sorted: list[str] = PrivateAttr(default_factory=list)
    _settled: bool = PrivateAttr(default=False)

    @model_validator(mode="after")
    def _prefix_free(self) -> LeadWord:
        self._sorted = sorted({w.lower() for w in self.words})
        if not all(w.isalpha() and w.isascii() for w in self._sorted):
            raise ValueError("a first word is letters a-z only")
        if self.then and any(b.startswith(a) for a, b in zip(self._sorted, self._sorted[1:])):
            raise ValueError("with a word forced after it, no first word may begin another")
        return self

    def forced_texts(self) -> list[str]:
        return [self.then] if self.then else []

    def conflict(self, steering: Any) -> str:
        if self.then and any(rule.kind == "word-per-line" for rule in steering.rules):
            return "the word forced after the first one is written on its line"
        return _before_first_word(steering, self.name)

    def _check(self, text: str) -> bool | None:
        """Whether ``text`` (the reply so far, or with a candidate piece) keeps the rule; None: settled."""
        word, rest = _first_steps(text)
        if not rest:
            return not word or prefix_of_any(word.lower(), self._sorted)
        if word.lower() not in self._sorted:
            return False
        if self.then:
            if not (rest.startswith(self.then) or self.then.startswith(rest)):
                return False
            rest = rest[len(self.then) :]
            return not rest or not (rest[0].isalnum() or rest[0] in "-'_")
        if not (rest[0].isspace() or rest[0] in _AFTER_FIRST):
            return False
        following = rest.lstrip()
        token = re.match(r"[A-Za-z]+|\S", following)
        if token is None:
            return True
        complete = len(following) > token.end() or not token.group().isalpha()
        return not (complete and token.group().lower() in self.refuse_next)

    def allows(self, reply: Reply, piece: str) -> bool:
        return self._settled or bool(self._check(reply.text + piece))

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        if self._settled or reply.text.strip():
            return
        key = (id(reply.pieces), self.model_dump_json())
        held = _FIRSTS.get(key)
        if held is None or held[0] is not reply.pieces:
            held = _FIRSTS[key] = (reply.pieces, self._first_pieces(reply.pieces))
        whole, begun = held[1]
        logits[~whole if np.isfinite(logits[whole]).any() else ~begun] = -np.inf

    def _first_pieces(self, pieces: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The pieces that hold a whole first word (preferred: a word begun in one piece and ended by a later one
        may find no piece that ends it), and those that begin one (where the other masks leave no whole one)."""
        whole = np.fromiter((_LETTERS.fullmatch(p.strip()) is not None and p.strip().lower() in self._sorted for p in pieces), dtype=bool, count=len(pieces))
        begun = np.fromiter((bool(p.strip()) and bool(self._check(p)) for p in pieces), dtype=bool, count=len(pieces))
        return whole, begun

    def after(self, reply: Reply, piece: str) -> str | None:
        if self._settled:
            return None
        word, rest = _first_steps(reply.text)
        if self.then and not rest and word.lower() in self._sorted:
            return self.then
        self._settled = len(reply.text.split()) >= 3 + len(self.then.split())
        return None

    def may_end(self, reply: Reply) -> bool:
        word, rest = _first_steps(reply.text)
        if self._settled:
            return True
        complete = bool(self._check(reply.text + " "))  # the end completes the word after the first, too
        return complete and word.lower() in self._sorted and (not self.then or rest.startswith(self.then))


def _second_to_last(text: str) -> str | None:
    """The token before the last of ``text`` as ``word_tokenize`` cuts it (one final punctuation token dropped)."""
    tokens = word_tokenize_nltk(text)
    if tokens and tokens[-1] in string.punctuation:  # a substring test, as the verifier's
        tokens = tokens[:-1]
    return tokens[-2].lower() if len(tokens) >= 2 else None


@rule_kind
class SecondToLast(RuleKind):
    """``keyword`` is the reply's second-to-last word: written before the last word when the reply ends without
    it (or, where that does not cut as a word, twice at the end)."""

    name: ClassVar[str] = "second-to-last"
    how: ClassVar = "forced"
    keyword: str = Field(pattern=r"^[A-Za-z]+$")

    def forced_texts(self) -> list[str]:
        return [self.keyword]

    def conflict(self, steering: Any) -> str:
        if steering.closing or steering.end_phrase or steering.postscript or steering.choice or steering.json_value:
            return "something else is forced at the end of the reply"
        if steering.max_words is not None:
            return "the keyword written at the end may pass the word ceiling"
        forcing = [r.kind for r in steering.rules if r.kind != self.name and r.build().how == "forced"]
        return f"the rule {forcing[0]} forces text too, which may come last" if forcing else ""

    def finish(self, text: str) -> str:
        wanted = self.keyword.lower()
        if _second_to_last(text) == wanted:
            return text
        last = list(re.finditer(r"[A-Za-z0-9]\S*", text))
        if last:
            at = last[-1].start()
            inserted = f"{text[:at]}{self.keyword} {text[at:]}"
            if _second_to_last(inserted) == wanted:
                return inserted
        return f"{text.rstrip()} {self.keyword} {self.keyword}".lstrip()


PALINDROMES = ("level", "radar", "madam", "kayak", "refer", "sagas", "tenet", "racecar", "stats", "rotator")


@rule_kind
class Palindromes(RuleKind):
    """At least ``count`` palindromes of ``least`` letters or more: the ones missing are added at the end, each a
    different one the reply did not use (so no word is used more often than before)."""

    name: ClassVar[str] = "palindromes"
    how: ClassVar = "forced"
    count: int = Field(ge=1, le=len(PALINDROMES))
    least: int = Field(ge=1, le=5)

    def forced_texts(self) -> list[str]:
        return [" ".join(PALINDROMES[: self.count])]

    def conflict(self, steering: Any) -> str:
        if steering.max_words is not None or steering.choice or steering.json_value:
            return "the palindromes written at the end need room for words"
        if any(rule.kind in ("sentence-emoji", "sentence-mark") for rule in steering.rules):
            return "the palindromes written after the last sentence leave it without its closing mark"
        return ""

    def combine(self, other: RuleKind) -> RuleKind:
        assert isinstance(other, Palindromes)
        return Palindromes(count=max(self.count, other.count), least=max(self.least, other.least))

    def finish(self, text: str) -> str:
        words = [w for w in plain(text).split() if len(w) >= self.least and w == w[::-1]]
        missing = self.count - len(words)
        if missing <= 0:
            return text
        added = [p for p in PALINDROMES if p not in words][:missing]
        return f"{text.rstrip()} {' '.join(added)}".lstrip()
