"""Rules over a reply's lines and whitespace: every word on its own line, a staircase indent, no whitespace at all,
a text or a character class that opens every line, '*' bullets each with '-' sub-bullets, prose then bullets.

Where the model wants something the rule forbids, its probability goes to what the rule allows in its place rather
than to the next best token: a new word on a line that already has one becomes a newline (``redirect``), so the
reply keeps the model's words. Line openings (a marker, an indent) are forced after each newline the model writes;
a newline token that carries the next line's text along is refused, so every line's opening is ours.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np
from pydantic import Field, PrivateAttr

from bineval_dspy.core.text import delete_ascii_punctuation, split_sentences_punkt
from bineval_dspy.enforce.rules import Reply, RuleKind, rule_kind
from bineval_dspy.enforce.steering import Steering

_ARRAYS: dict[tuple[int, str], tuple[Sequence[str], np.ndarray]] = {}
_IDS: dict[tuple[int, str], tuple[Sequence[str], np.ndarray]] = {}
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s*$")
_NEWLINE_THEN_MORE = re.compile(r"\n[^\n]|\n\n")  # a newline token carrying text or a blank line along


def piece_array(pieces: Sequence[str], name: str, test: Callable[[str], bool]) -> np.ndarray:
    """``test`` over every piece of a vocabulary, computed once per vocabulary (``name`` must say which test)."""
    hit = _ARRAYS.get((id(pieces), name))
    if hit is None or hit[0] is not pieces:  # the list is held, so its id names it while cached
        hit = (pieces, np.fromiter((test(p) for p in pieces), dtype=bool, count=len(pieces)))
        _ARRAYS[(id(pieces), name)] = hit
    return hit[1]


def piece_ids(pieces: Sequence[str], name: str, test: Callable[[str], bool]) -> np.ndarray:
    """The ids of the pieces ``test`` holds for (``piece_array`` as indices: cheaper where they are few)."""
    hit = _IDS.get((id(pieces), name))
    if hit is None or hit[0] is not pieces:
        hit = (pieces, np.flatnonzero(piece_array(pieces, name, test)))
        _IDS[(id(pieces), name)] = hit
    return hit[1]


def token_of(pieces: Sequence[str], text: str) -> int | None:
    """The id of the token whose text is exactly ``text`` (None when the vocabulary has none)."""
    found = piece_ids(pieces, f"exactly {text!r}", lambda p: p == text)
    return int(found[0]) if found.size else None


def redirect(logits: np.ndarray, moved: np.ndarray, target: int | None) -> None:
    """Mask the ``moved`` tokens (their ids), giving their probability to ``target`` (unless it is masked)."""
    values = logits[moved]
    live = values[np.isfinite(values)]
    if target is not None and np.isfinite(logits[target]) and live.size:
        logits[target] = np.logaddexp(logits[target], np.logaddexp.reduce(live))
    logits[moved] = -np.inf


def current_line(text: str) -> str:
    return text[text.rfind("\n") + 1 :]


def others_forced(steering: Steering, rule: RuleKind) -> list[str]:
    """The literals forced by the fields and by every rule of ``steering`` but ``rule``'s kind."""
    fields = steering.model_copy(update={"rules": tuple(r for r in steering.rules if r.kind != rule.name)})
    return fields.forced_texts()


def shared_conflict(rule: RuleKind, steering: Steering, *, lines: bool) -> str:
    """Why ``rule`` cannot hold beside ``steering``: a reply fixed to a phrase or JSON leaves no room for it; a rule
    that owns the start of lines (``lines``) cannot share them with a structure, a title, a postscript, forced text
    that breaks lines, or another rule that owns them or writes an opening."""
    if steering.choice or steering.json_value:
        return f"{rule.name}: the reply is fixed to a phrase or to JSON"
    if not lines:
        return ""
    if steering.structure is not None or steering.title or steering.postscript:
        return f"{rule.name}: a structure, title or postscript breaks the lines it keeps"
    if any("\n" in t for t in others_forced(steering, rule)):
        return f"{rule.name}: other forced text breaks the lines it keeps"
    for other in steering.rules:
        built = other.build()
        if other.kind != rule.name and (getattr(built, "owns_lines", False) or built.prefix()):
            return f"{rule.name}: {other.kind} also writes at the start of the reply or of its lines"
    return ""


# --- whitespace ---------------------------------------------------------------------------------


@rule_kind
class WordPerLine(RuleKind):
    """Every word on its own line (ASCII punctuation is not a word): whitespace after a line's word becomes a
    newline (a new word would follow it), no token holds whitespace between two words, and a line is ended only
    once it has its word (the graders count a line of spaces as a line without one)."""

    name: ClassVar[str] = "word-per-line"
    how: ClassVar = "mask"
    static: ClassVar[bool] = True

    def bans(self, piece: str) -> bool:
        return re.fullmatch(r"(?:[ \t]*\S+)?\n*", piece) is None  # leading blanks, one word, newlines: nothing else

    def conflict(self, steering: Steering) -> str:
        if steering.structure is not None or steering.title or steering.postscript or steering.end_phrase:
            return f"{self.name}: a structure, title, postscript or end phrase puts several words on a line"
        if steering.min_words:
            return f"{self.name}: a floor on words is met with new words, and a line's second word is refused"
        # they keep text on a line, or add a word to it ("sentences" forces its words after a space)
        one_line = {"prose-then-bullets", "thesis", "sentence-emoji", "sentences"}
        if clash := next((r.kind for r in steering.rules if r.kind in one_line), None):
            return f"{self.name}: {clash} puts several words on a line"
        for text in others_forced(steering, self):
            lines = [delete_ascii_punctuation(line) for line in text.split("\n")]
            spaced = text[:1] in " \t" and bool(lines[0].strip())  # a word forced after a space, beside the line's
            if spaced or any(len(line.split()) > 1 for line in lines) or (lines[-1].strip() and lines[-1][-1:].isspace()):
                return f"{self.name}: the forced text {text[:40]!r} puts several words on a line"
        return shared_conflict(self, steering, lines=False)

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        if delete_ascii_punctuation(current_line(reply.text)).strip():
            spaced = piece_ids(reply.pieces, "opens with a blank", lambda p: p[:1] in " \t")
            redirect(logits, spaced, token_of(reply.pieces, "\n"))

    def allows(self, reply: Reply, piece: str) -> bool:
        if "\n" not in piece:
            return True
        line = delete_ascii_punctuation(current_line(reply.text) + piece.split("\n")[0])
        return bool(line.strip())  # no blank line either: a run of them makes the model repeat itself


@rule_kind
class NoWhitespace(RuleKind):
    """No whitespace character anywhere (a static mask; forced text with whitespace conflicts)."""

    name: ClassVar[str] = "no-whitespace"
    how: ClassVar = "mask"
    static: ClassVar[bool] = True

    def bans(self, piece: str) -> bool:
        return any(c.isspace() for c in piece)

    def conflict(self, steering: Steering) -> str:
        if steering.structure is not None or steering.title or steering.postscript or steering.end_phrase:
            return f"{self.name}: a structure, title, postscript or end phrase is set apart by whitespace"
        if steering.min_words > 1 or steering.min_sentences > 1:
            return f"{self.name}: several words or sentences need whitespace between them"
        if any(any(c.isspace() for c in t) for t in others_forced(steering, self)):
            return f"{self.name}: other forced text holds whitespace"
        if any(rule.kind == "sentences" for rule in steering.rules):
            return f"{self.name}: the sentences rule counts sentences, which need whitespace between them"
        return shared_conflict(self, steering, lines=False)


# --- line openings ------------------------------------------------------------------------------


class _Lines(RuleKind):
    """A rule that writes at the start of every line: newline tokens must be bare (one newline, nothing after it)
    and come after some text on the line."""

    owns_lines: ClassVar[bool] = True
    static: ClassVar[bool] = True

    def bans(self, piece: str) -> bool:
        return bool(_NEWLINE_THEN_MORE.search(piece))

    def conflict(self, steering: Steering) -> str:
        return shared_conflict(self, steering, lines=True)


@rule_kind
class Staircase(_Lines):
    """Each line indented by more spaces than the line before: the indent is forced after each newline, and a
    newline on a line with no text yet is refused (a blank line would break the stairs)."""

    name: ClassVar[str] = "staircase"
    how: ClassVar = "forced"

    def forced_texts(self) -> list[str]:
        return [" "]

    def allows(self, reply: Reply, piece: str) -> bool:
        return "\n" not in piece or bool((current_line(reply.text) + piece.split("\n")[0]).strip())

    def after(self, reply: Reply, piece: str) -> str | None:
        if "\n" not in piece:
            return None
        above = reply.text.split("\n")[-2]
        return " " * (len(above) - len(above.lstrip(" ")) + 1)


@rule_kind
class LineStart(_Lines):
    """Every line opens with ``text`` (forced; ``{n}`` is the line's number) and its own text with one of
    ``chars`` (restricted: other first characters are refused), and the reply has at least ``min_lines`` lines,
    a new one forced at a sentence end while short of them."""

    name: ClassVar[str] = "line-start"
    how: ClassVar = "forced"
    text: str = ""
    chars: str = ""
    min_lines: int = Field(default=1, ge=1)
    _lines: int = PrivateAttr(default=1)
    _line_at: int = PrivateAttr(default=-1)  # where the current line's own text begins (-1: the reply's start)

    def _opening(self, n: int) -> str:
        return self.text.replace("{n}", str(n))

    def forced_texts(self) -> list[str]:
        return [self._opening(1), "\n" + self._opening(2)] if self.text else ["\n"]

    def min_tokens(self) -> int:
        return 8 * self.min_lines

    def conflict(self, steering: Steering) -> str:
        if steering.lead or steering.opening:
            return f"{self.name}: text forced before it would open the first line"
        if steering.max_words is not None or steering.max_sentences is not None:
            return f"{self.name}: a ceiling could end the reply short of its lines, or its openings pass the ceiling"
        return super().conflict(steering)

    def prefix(self) -> str:
        return self._opening(1)

    def _own(self, reply: Reply) -> str:
        if self._line_at < 0:
            self._line_at = len(reply.text)  # the first call: the reply's opening is written
        return reply.text[self._line_at :]

    def allows(self, reply: Reply, piece: str) -> bool:
        own = self._own(reply)
        first = piece.split("\n")[0]
        if self.chars and not own.strip() and first.strip() and first.strip()[0] not in self.chars:
            return False
        return "\n" not in piece or any(c.isalpha() for c in own + first)  # an item has a word, not a number only

    def after(self, reply: Reply, piece: str) -> str | None:
        own = self._own(reply)
        forced = ""
        if "\n" not in piece:
            short = self.min_lines - self._lines
            left = reply.limit - reply.tokens
            if short <= 0 or not any(c.isalnum() for c in own) or not (_SENTENCE_END.search(own) or left <= 6 * short):
                return None
            forced = "\n"
        self._lines += 1
        forced += self._opening(self._lines)
        self._line_at = len(reply.text) + len(forced)
        return forced

    def may_end(self, reply: Reply) -> bool:
        return self._lines >= self.min_lines and any(c.isalnum() for c in self._own(reply))

    def at_end(self, reply: Reply) -> str | None:
        if self._lines >= self.min_lines:
            return None
        self._lines += 1
        forced = "\n" + self._opening(self._lines)
        self._line_at = len(reply.text) + len(forced)
        return forced


@rule_kind
class SubBullets(_Lines):
    """'*' bullets, each followed by a '-' sub-bullet: the reply opens with '* ', and each newline is followed by
    the marker the alternation calls for. No other '*' may be written (it would open a bullet)."""

    name: ClassVar[str] = "sub-bullets"
    how: ClassVar = "automaton"
    bullet: str = "* "
    sub: str = "  - "
    _in_bullet: bool = PrivateAttr(default=True)  # the current line is a bullet (no sub-bullet under it yet)
    _line_tokens: int = PrivateAttr(default=0)

    def bans(self, piece: str) -> bool:
        return "*" in piece or super().bans(piece)

    def forced_texts(self) -> list[str]:
        return [self.bullet, "\n" + self.sub, "\n" + self.bullet]

    def conflict(self, steering: Steering) -> str:
        if steering.max_words is not None or steering.max_sentences is not None:
            return f"{self.name}: a ceiling could end the reply on a bullet before its sub-bullet"
        return super().conflict(steering)

    def prefix(self) -> str:
        return self.bullet

    def allows(self, reply: Reply, piece: str) -> bool:
        return "\n" not in piece or any(c.isalnum() for c in current_line(reply.text) + piece)

    def _switch(self, newline: str) -> str:
        self._in_bullet, self._line_tokens = not self._in_bullet, 0
        return newline + (self.bullet if self._in_bullet else self.sub)

    def after(self, reply: Reply, piece: str) -> str | None:
        self._line_tokens += 1
        if "\n" in piece:
            return self._switch("")
        left = reply.limit - reply.tokens
        content = any(c.isalnum() for c in current_line(reply.text))
        due = self._line_tokens >= 40 or (self._line_tokens >= 12 and _SENTENCE_END.search(reply.text))
        if content and (due or (self._in_bullet and left <= 8)):
            return self._switch("\n")
        return None

    def may_end(self, reply: Reply) -> bool:
        return not self._in_bullet and any(c.isalnum() for c in current_line(reply.text))

    def at_end(self, reply: Reply) -> str | None:
        return self._switch("\n") if self._in_bullet else None

    def finish(self, text: str) -> str:
        return text if "-" in text.split("*")[-1] else text.rstrip() + "\n" + self.sub.rstrip()


@rule_kind
class ProseThenBullets(_Lines):
    """At least ``sentences`` sentences of prose on one line, then a blank line and at least ``bullets`` '*'
    bullets, one a line, and nothing after them."""

    name: ClassVar[str] = "prose-then-bullets"
    how: ClassVar = "automaton"
    sentences: int = Field(default=2, ge=1)
    bullets: int = Field(default=2, ge=1)
    _bullets: int = PrivateAttr(default=0)  # 0: still in the prose
    _prose: int = PrivateAttr(default=0)  # the prose's sentences, counted at each sentence end
    _line_tokens: int = PrivateAttr(default=0)

    def forced_texts(self) -> list[str]:
        return [". ", "\n\n* ", "\n* "]

    def min_tokens(self) -> int:
        return 12 * (self.sentences + self.bullets)

    def conflict(self, steering: Steering) -> str:
        if steering.lead:
            return f"{self.name}: a text forced before it would be part of the prose"
        if steering.max_words is not None or steering.max_sentences is not None:
            return f"{self.name}: a ceiling could end the reply before its bullets"
        if steering.min_sentences > self.sentences:
            return f"{self.name}: its bullets end the prose before the floor on sentences is met"
        if any(rule.kind == "sentence-chain" for rule in steering.rules):
            return f"{self.name}: its forced sentence end and '*' would open a sentence with no chained word"
        return super().conflict(steering)

    def allows(self, reply: Reply, piece: str) -> bool:
        if not reply.text.strip() and piece.lstrip().startswith("*"):
            return False  # a line opening with '*' is a bullet, and the prose comes first
        if "\n" not in piece:
            return True
        line = current_line(reply.text) + piece.split("\n")[0]
        return any(c.isalnum() for c in line) and (self._bullets > 0 or self._prose >= self.sentences)

    def _bullet(self, newline: str) -> str:
        self._bullets += 1
        self._line_tokens = 0
        return newline + "* "

    def after(self, reply: Reply, piece: str) -> str | None:
        self._line_tokens += 1
        left = reply.limit - reply.tokens
        if self._bullets == 0:
            reserve = left <= 10 * self.bullets  # the bullets need the tokens that are left
            if reserve or re.search(r"[.!?]", piece):
                self._prose = len(split_sentences_punkt(reply.text))  # a sentence the model left open counts
            if "\n" in piece:
                return self._bullet("\n")  # its own newline and this one: a blank line ends the prose
            if reserve:
                if self._prose >= self.sentences:
                    return self._bullet("\n\n")
                return ". " if reply.text[-1:].isalnum() else None
            done = self._prose >= self.sentences and _SENTENCE_END.search(reply.text) and reply.tokens >= 0.4 * reply.limit
            return self._bullet("\n\n") if done else None
        if "\n" in piece:
            return self._bullet("")
        short = self.bullets - self._bullets
        content = any(c.isalnum() for c in current_line(reply.text))
        if content and short > 0 and (left <= 6 * short or (self._line_tokens >= 10 and _SENTENCE_END.search(reply.text))):
            return self._bullet("\n")
        return None

    def may_end(self, reply: Reply) -> bool:
        return self._bullets >= self.bullets and any(c.isalnum() for c in current_line(reply.text))

    def at_end(self, reply: Reply) -> str | None:
        if self._bullets == 0:
            return self._bullet("\n\n") if self._prose >= self.sentences else (". " if reply.text[-1:].isalnum() else None)
        return self._bullet("\n") if self._bullets < self.bullets else None

    def finish(self, text: str) -> str:
        text = text.rstrip()
        if self._bullets == 0:
            text += "\n"
        return text + "\n*" * max(0, self.bullets - self._bullets)
