"""Rules over the letters of the whole reply: at most N kinds of vowel (a state kept as the reply grows: the vowels
used so far), and one line (no line break anywhere)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, PrivateAttr

from bineval_dspy.enforce.kinds.words import VOWELS
from bineval_dspy.enforce.rules import Reply, RuleKind, rule_kind

_ORDER = sorted(VOWELS)
_POPCOUNT = np.array([bin(m).count("1") for m in range(1 << len(_ORDER))], dtype=np.int64)


def vowel_bits(text: str) -> int:
    """The vowels ``text`` holds (any case), one bit each."""
    found = set(text.lower())
    return sum(1 << i for i, v in enumerate(_ORDER) if v in found)


_BITS: dict[int, tuple[Sequence[str], np.ndarray]] = {}


def _token_bits(pieces: Sequence[str]) -> np.ndarray:
    held = _BITS.get(id(pieces))
    if held is None or held[0] is not pieces:
        held = (pieces, np.fromiter((vowel_bits(p) for p in pieces), dtype=np.int64, count=len(pieces)))
        _BITS[id(pieces)] = held
    return held[1]


@rule_kind
class VowelKinds(RuleKind):
    """At most ``most`` different vowels (a, e, i, o, u) in the whole reply: a token bringing one more is refused
    once ``most`` are used."""

    name: ClassVar[str] = "vowel-kinds"
    how: ClassVar = "mask"
    most: int = Field(ge=1, le=5)
    _used: int = PrivateAttr(default=0)
    _seen: int = PrivateAttr(default=0)

    def _sync(self, text: str) -> int:
        if len(text) > self._seen:
            self._used |= vowel_bits(text[self._seen :])
            self._seen = len(text)
        return self._used

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        used = self._sync(reply.text)
        logits[_POPCOUNT[used | _token_bits(reply.pieces)] > self.most] = -np.inf

    def allows(self, reply: Reply, piece: str) -> bool:
        return bool(_POPCOUNT[self._sync(reply.text) | vowel_bits(piece)] <= self.most)

    def combine(self, other: RuleKind) -> RuleKind:
        assert isinstance(other, VowelKinds)
        return VowelKinds(most=min(self.most, other.most))

    def conflict(self, steering: Any) -> str:
        """Text forced at the start is counted as it is written; text forced later is not foreseen, so it may hold
        no vowel at all."""
        early = vowel_bits(steering.lead + steering.opening)
        if _POPCOUNT[early] > self.most:
            return f"the forced opening has more than {self.most} kinds of vowel"
        late = [t for rule in steering.rules if rule.kind != self.name for t in rule.build().forced_texts()]
        late += [steering.closing, steering.postscript, steering.end_phrase, *steering.choice]
        if steering.structure is not None:
            late += [steering.structure.marker, steering.structure.first_word]
        if any(rule.kind == "sentences" and rule.params.get("initials") for rule in steering.rules):
            return "sentences that must begin with given letters may need more kinds of vowel"
        for text in late:
            if vowel_bits(text) & ~early:
                return f"the forced text {text[:40]!r} may bring a kind of vowel beyond {self.most}"
        return ""


@rule_kind
class OneLine(RuleKind):
    """No line break in the reply (a token holding one is refused)."""

    name: ClassVar[str] = "one-line"
    how: ClassVar = "mask"
    static: ClassVar[bool] = True

    def bans(self, piece: str) -> bool:
        return "\n" in piece

    def conflict(self, steering: Any) -> str:
        if steering.title or steering.structure is not None or steering.postscript:
            return "a title, a structure of units or a postscript is set off by line breaks"
        if any("\n" in text for text in steering.forced_texts()):
            return "a forced text holds a line break"
        return ""
