"""Replies that repeat given text: word for word (a sentence or span the prompt asks for, an answer the prompt's own
words determine), or word for word after a first word of the model's own that differs from the original's.

The repeated text is forced, never decoded, so it cannot drift; the only choice left to the model is that first
word, taken from one token under a mask that refuses the original word (or any start of it).
"""

from __future__ import annotations

import re
from typing import ClassVar

import numpy as np
from pydantic import PrivateAttr, field_validator

from bineval_dspy.enforce.kinds.shapes import alone, pieces_where, refuse
from bineval_dspy.enforce.rules import Reply, RuleKind, rule_kind
from bineval_dspy.enforce.runtime import END
from bineval_dspy.enforce.steering import Steering

_WORD_TOKEN = re.compile(r"\s?[A-Za-z][A-Za-z'’-]*,?")  # one token that is a whole word, perhaps with a comma


def _refuse_all(logits: np.ndarray, pieces: list[str]) -> None:
    """Refuse every token with text: only the end of text is left (``may_end`` lets it come)."""
    refuse(logits, pieces, np.ones(len(pieces), dtype=bool))


@rule_kind
class Verbatim(RuleKind):
    """The whole reply is ``text``, forced; the reply then ends."""

    name: ClassVar[str] = "verbatim"
    how: ClassVar = "forced"

    text: str

    @field_validator("text")
    @classmethod
    def _some_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the text to repeat is empty")
        return value

    def forced_texts(self) -> list[str]:
        return [self.text]

    def conflict(self, steering: Steering) -> str:
        return alone(steering, self.name, letters=any(c.isalpha() for c in self.text))

    def prefix(self) -> str:
        return self.text

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        _refuse_all(logits, reply.pieces)

    def allows(self, reply: Reply, piece: str) -> bool:
        return not piece


@rule_kind
class FirstWordChanged(RuleKind):
    """``request`` repeated word for word except its first word: the model writes one word (one token) that is not
    the original's, then the rest is forced and the reply ends."""

    name: ClassVar[str] = "first-word-changed"
    how: ClassVar = "forced"

    request: str

    _chosen: bool = PrivateAttr(False)

    @field_validator("request")
    @classmethod
    def _some_words(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the request to repeat is empty")
        return value

    def _parts(self) -> tuple[str, str]:
        """The request's first word and what follows it, its spacing kept."""
        match = re.match(r"\s*(\S+)(.*)\Z", self.request, re.DOTALL)
        assert match is not None  # the request has a non-space character
        return match[1], match[2]

    def forced_texts(self) -> list[str]:
        return [self._parts()[1]] if self._parts()[1] else []

    def min_tokens(self) -> int:
        return 4

    def conflict(self, steering: Steering) -> str:
        return alone(steering, self.name)

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        if self._chosen:
            _refuse_all(logits, reply.pieces)
        else:
            refuse(logits, reply.pieces, ~pieces_where(reply.pieces, "word-token", _WORD_TOKEN.fullmatch))

    def allows(self, reply: Reply, piece: str) -> bool:
        if self._chosen:
            return not piece
        letters = re.sub(r"\W", "", piece).lower()
        return bool(letters) and not re.sub(r"\W", "", self._parts()[0]).lower().startswith(letters)

    def after(self, reply: Reply, piece: str) -> str | None:
        if self._chosen:
            return None
        self._chosen = True
        return self._parts()[1] or END

    def may_end(self, reply: Reply) -> bool:
        return self._chosen
