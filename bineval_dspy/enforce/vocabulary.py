"""One tokenizer's vocabulary as the steerer reads it: each token's piece and bytes, the end-of-generation ids, and
the masks over them computed once per constraint set (``Steerer`` applies them to the logits in one operation)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from bineval_dspy.enforce.steering import Steering

_NEWLINE_THEN_TEXT = re.compile(r"\n[ \t]*\S")
UNITS = ("bullets", "dividers", "paragraphs", "sections")  # structures whose units are broken by newlines


class Vocabulary:
    """One tokenizer's pieces (each token's text) and end-of-generation ids, with the masks computed over them
    once per constraint set (a 49k-token vocabulary takes tens of milliseconds per mask, once)."""

    def __init__(self, pieces: Sequence[str], end_ids: Sequence[int], raw: Sequence[bytes] | None = None) -> None:
        self.pieces = list(pieces)
        # each token's bytes (default: its piece's): a character of several bytes (an emoji, an accented letter) may
        # span tokens whose pieces alone are empty, so the reply's text is decoded from the bytes (``Steerer``)
        self.raw = list(raw) if raw is not None else [p.encode() for p in self.pieces]
        self.end_ids = np.asarray(sorted(end_ids), dtype=np.int64)
        self._masks: dict[tuple[object, ...], np.ndarray] = {}
        # tokens that write nothing at all (a chat template's control tokens): never part of a steered reply, where
        # they would take its tokens while its text stays empty
        self.silent = np.fromiter((not b for b in self.raw), dtype=bool, count=len(self.raw))
        self.new_word = np.fromiter((bool(re.match(r"\s+\w", p)) for p in self.pieces), dtype=bool, count=len(self.pieces))
        self.blank = np.fromiter((bool(p) and p.isspace() for p in self.pieces), dtype=bool, count=len(self.pieces))
        self.end_mark = np.fromiter((bool(re.fullmatch(r"[.!?]\s*", p)) for p in self.pieces), dtype=bool, count=len(self.pieces))
        self._biases: dict[int, np.ndarray] = {}
        self.ids: dict[str, list[int]] = {}  # each piece's token ids, so the tokens continuing a text are looked up
        for token, piece in enumerate(self.pieces):
            self.ids.setdefault(piece, []).append(token)
        self.longest = max(map(len, self.pieces), default=0)

    def banned(self, steering: Steering) -> np.ndarray:
        """True for every token no position of this steering's reply may hold."""
        units = steering.structure is not None and steering.structure.kind in UNITS
        static = tuple(rule for rule in steering.rules if rule.build().static)
        dividers = getattr(steering.structure, "kind", None) == "dividers"
        key = (steering.case, steering.banned, units, dividers, tuple(rule.model_dump_json() for rule in static))
        if key not in self._masks:
            tests: list[Callable[[str], bool]] = []
            # a title-case letter ("ǅ") is neither case to ``str.islower``/``str.isupper``: both masks refuse it
            if steering.case == "lower":
                tests.append(lambda p: any(c.isupper() or c.istitle() for c in p))
            if steering.case == "upper":
                tests.append(lambda p: any(c.islower() or (c.istitle() and not c.isupper()) for c in p))
            if steering.banned:
                tests.append(lambda p: any(b in p for b in steering.banned))
            if units:  # a line's own text comes after its forced marker, never inside a newline's token
                tests.append(lambda p: bool(_NEWLINE_THEN_TEXT.search(p)))
            if key[3]:
                tests.append(lambda p: "***" in p)
            tests += [rule.build().bans for rule in static]
            mask = np.fromiter((any(t(p) for t in tests) for p in self.pieces), dtype=bool, count=len(self.pieces))
            mask |= self.silent
            mask[self.end_ids] = False  # the end is decided by ``may_end``, never by a mask
            self._masks[key] = mask
        return self._masks[key]

    def bias(self, banned: np.ndarray) -> np.ndarray:
        """``banned`` as float32 logits to add (-inf where banned, 0 elsewhere): one addition per step masks the
        vocabulary (about 9 us on 49k tokens, where ``np.where`` and a cast took about 440 us)."""
        if id(banned) not in self._biases:
            self._biases[id(banned)] = np.where(banned, -np.inf, 0.0).astype(np.float32)
        return self._biases[id(banned)]

    def continuing(self, tails: Sequence[str]) -> list[int]:
        """The tokens whose piece begins one of ``tails`` (each tail's prefixes looked up, not the vocabulary scanned)."""
        return [t for tail in tails for k in range(1, min(len(tail), self.longest) + 1) for t in self.ids.get(tail[:k], ())]
