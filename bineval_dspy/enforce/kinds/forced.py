"""Rules kept by text the decoder writes itself, and by the marks and letters it lets the model write: a template's
headers, an italic thesis, brackets or quotes opened at the start and closed at the end, an emoji after every
sentence end, one mark ending every sentence, Title Case, quotations never ending the reply or touching.

The model writes the content; the forced text is the rule's scaffold. Where the model reaches for a mark the rule
forbids (a '.' where every sentence must end in '!'), its probability goes to the mark the rule asks for.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from typing import ClassVar

import numpy as np
from pydantic import Field, PrivateAttr

from bineval_dspy.core.text import delete_ascii_punctuation, word_runs
from bineval_dspy.enforce.kinds.layout import others_forced, piece_array, piece_ids, redirect, shared_conflict, token_of
from bineval_dspy.enforce.rules import Reply, RuleKind, rule_kind
from bineval_dspy.enforce.steering import Steering

_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s*$")
_OPENERS = {")": "(", "]": "[", "}": "{"}


def _has_text(text: str) -> bool:
    return any(c.isalnum() for c in text)


def _then_blank(mark: str) -> Callable[[str], bool]:
    """Whether a piece's first end mark is ``mark``, with whitespace after it (closing quotes between)."""
    pattern = re.compile(rf"[^.!?]*\{mark}[\"')\]]*\s")
    return lambda piece: pattern.match(piece) is not None


class _Scaffold(RuleKind):
    """A rule that writes at the start or the end of the reply: it needs room beside a fixed phrase or JSON, and
    a ceiling on words or sentences could stop the reply before its forced text is due."""

    def conflict(self, steering: Steering) -> str:
        if steering.max_words is not None or steering.max_sentences is not None:
            return f"{self.name}: a ceiling could end the reply before its forced text"
        if (steering.title or steering.structure is not None) and self.prefix():
            return f"{self.name}: its opening would fall inside a title or a structure's first unit"
        return shared_conflict(self, steering, lines=False)


@rule_kind
class Template(_Scaffold):
    """Fixed ``headers`` in order, each forced, the model writing each part: the next header comes at a sentence
    end once the part had its share of the tokens (or when the model stops early)."""

    name: ClassVar[str] = "template"
    how: ClassVar = "forced"
    headers: tuple[str, ...] = Field(min_length=1)
    separator: str = "\n\n"
    _next: int = PrivateAttr(default=1)  # the header to write next
    _part_tokens: int = PrivateAttr(default=0)
    _part_at: int = PrivateAttr(default=0)

    def forced_texts(self) -> list[str]:
        return [f"{self.headers[0]} ", *(f"{self.separator}{h} " for h in self.headers[1:])]

    def min_tokens(self) -> int:
        return 16 * len(self.headers)

    def prefix(self) -> str:
        return f"{self.headers[0]} "

    def _header(self, reply: Reply) -> str:
        forced = f"{self.separator}{self.headers[self._next]} "
        self._next, self._part_tokens = self._next + 1, 0
        self._part_at = len(reply.text) + len(forced)
        return forced

    def after(self, reply: Reply, piece: str) -> str | None:
        self._part_tokens += 1
        if self._next >= len(self.headers) or not _has_text(reply.text[self._part_at :]):
            return None
        share = max(4, reply.limit // len(self.headers))
        ended = _SENTENCE_END.search(reply.text)
        due = self._part_tokens >= 1.3 * share or (self._part_tokens >= 0.6 * share and ended)
        left = reply.limit - reply.tokens
        return self._header(reply) if due or left <= 4 * (len(self.headers) - self._next) else None

    def may_end(self, reply: Reply) -> bool:
        return self._next >= len(self.headers) and _has_text(reply.text[self._part_at :])

    def at_end(self, reply: Reply) -> str | None:
        return self._header(reply) if self._next < len(self.headers) and _has_text(reply.text[self._part_at :]) else None

    def finish(self, text: str) -> str:
        return text + "".join(f"{self.separator}{h}" for h in self.headers[self._next :])


@rule_kind
class Thesis(_Scaffold):
    """A thesis in ``opening`` ... ``closing`` (HTML italics) first, closed at its first sentence end (or when it
    grows long), then more text."""

    name: ClassVar[str] = "thesis"
    how: ClassVar = "forced"
    opening: str = "<i>"
    closing: str = "</i>"
    _closed_at: int = PrivateAttr(default=-1)
    _tokens: int = PrivateAttr(default=0)

    def forced_texts(self) -> list[str]:
        return [self.opening, self.closing]

    def min_tokens(self) -> int:
        return 24

    def prefix(self) -> str:
        return self.opening

    def allows(self, reply: Reply, piece: str) -> bool:
        return self._closed_at >= 0 or ("\n" not in piece and "<" not in piece)  # the thesis stays one line

    def _close(self, reply: Reply) -> str:
        self._closed_at = len(reply.text) + len(self.closing)
        return self.closing

    def after(self, reply: Reply, piece: str) -> str | None:
        self._tokens += 1
        if self._closed_at >= 0:
            return None
        thesis = reply.text[reply.text.rfind(self.opening) + len(self.opening) :]
        words = len(word_runs(thesis))
        ended = words >= 3 and bool(_SENTENCE_END.search(reply.text))
        return self._close(reply) if words and (ended or self._tokens >= 40 or reply.limit - reply.tokens <= 12) else None

    def may_end(self, reply: Reply) -> bool:
        return self._closed_at >= 0 and bool(reply.text[self._closed_at :].strip())

    def at_end(self, reply: Reply) -> str | None:
        if self._closed_at < 0 and _has_text(reply.text[reply.text.rfind(self.opening) :]):
            return self._close(reply)
        return None

    def finish(self, text: str) -> str:
        return text if self._closed_at >= 0 else text.rstrip() + self.closing


@rule_kind
class Brackets(_Scaffold):
    """Brackets nested ``depth`` deep: the openings are forced at the start, a closing bracket that does not match
    the innermost open one is refused until one has closed, and what is still open is closed at the end."""

    name: ClassVar[str] = "brackets"
    how: ClassVar = "forced"
    depth: int = Field(default=5, ge=1)
    _stack: list[str] = PrivateAttr(default_factory=list)
    _closed: bool = PrivateAttr(default=False)  # one closed at full depth: the rule holds whatever follows

    def _openings(self) -> str:
        return ("([{" * self.depth)[: self.depth]

    def forced_texts(self) -> list[str]:
        return [self._openings(), "".join(_closing(c) for c in reversed(self._openings()))]

    def conflict(self, steering: Steering) -> str:
        if any(c in "()[]{}" for t in others_forced(steering, self) for c in t):
            return f"{self.name}: other forced text holds brackets"
        return super().conflict(steering)

    def prefix(self) -> str:
        self._stack = list(self._openings())
        return self._openings()

    def _step(self, piece: str, stack: list[str]) -> bool | None:
        """Run ``piece`` over ``stack``: True once a bracket closes at full depth, False at a mismatched close."""
        for char in piece:
            if char in "([{":
                stack.append(char)
            elif char in _OPENERS:
                if not stack or stack[-1] != _OPENERS[char]:
                    return False
                stack.pop()
                return True
        return None

    def allows(self, reply: Reply, piece: str) -> bool:
        if self._closed:
            return True
        bracket = next((i for i, c in enumerate(piece) if c in "()[]{}"), None)
        if bracket is not None and not any(c.isalpha() for c in re.split(r"[()\[\]{}]", reply.text + piece[:bracket])[-1]):
            return False  # words between brackets: a run of them is where a small model starts to loop
        return self._step(piece, list(self._stack)) is not False

    def after(self, reply: Reply, piece: str) -> str | None:
        if not self._closed:
            self._closed = bool(self._step(piece, self._stack))
        return None

    def finish(self, text: str) -> str:
        return text if self._closed else text + "".join(_closing(c) for c in reversed(self._stack))


def _closing(opener: str) -> str:
    return {v: k for k, v in _OPENERS.items()}[opener]


@rule_kind
class Quotes(_Scaffold):
    """Quotation marks nested ``depth`` deep, alternating double and single: opened at the start, and at the end
    every one still open (the model's apostrophes included) is closed, after opening more where too few are."""

    name: ClassVar[str] = "quotes"
    how: ClassVar = "forced"
    depth: int = Field(default=3, ge=1)

    def _openings(self) -> str:
        return ('"\'' * self.depth)[: self.depth]

    def forced_texts(self) -> list[str]:
        return [self._openings(), self._openings()[::-1]]

    def conflict(self, steering: Steering) -> str:
        if any(c in "\"'" for c in steering.lead + steering.opening):
            return f"{self.name}: a quotation mark forced before its own would change the nesting"
        return super().conflict(steering)

    def prefix(self) -> str:
        return self._openings()

    def finish(self, text: str) -> str:
        stack: list[str] = []
        for char in text:  # the graders' reading: a mark equal to the innermost open one closes it
            if stack and char == stack[-1]:
                stack.pop()
            elif char in "\"'":
                stack.append(char)
        more = ""
        while len(stack) < self.depth:  # each closes only after all are open, so the full depth is reached
            mark = "'" if stack and stack[-1] == '"' else '"'
            stack.append(mark)
            more += mark
        return text + more + "".join(reversed(stack))


@rule_kind
class QuoteUnquote(RuleKind):
    """Every quotation followed by the writer's own words: no two double quotes side by side (whitespace ignored),
    and the reply never ends on one."""

    name: ClassVar[str] = "quote-unquote"
    how: ClassVar = "mask"

    def conflict(self, steering: Steering) -> str:
        if '"' in steering.closing or steering.end_phrase.rstrip().endswith('"'):
            return f"{self.name}: the reply would end on a quotation mark"
        if any('"' in t for t in others_forced(steering, self)):
            return f"{self.name}: other forced text holds a double quote"
        return shared_conflict(self, steering, lines=False)

    @staticmethod
    def _ends_on_quote(text: str) -> bool:
        return "".join(text.split()).strip(string.digits + string.punctuation.replace('"', "")).endswith('"')

    def allows(self, reply: Reply, piece: str) -> bool:
        tail = "".join((reply.text[-12:] + piece).split()).replace("'\"'", "")
        if '""' in tail:
            return False
        return reply.limit - reply.tokens > 2 or not self._ends_on_quote(reply.text + piece)

    def may_end(self, reply: Reply) -> bool:
        return not self._ends_on_quote(reply.text)

    def finish(self, text: str) -> str:
        return text + " …" if self._ends_on_quote(text) else text  # cut at the token limit on a quotation mark


@rule_kind
class SentenceEmoji(RuleKind):
    """An emoji after every sentence's end mark and after the last sentence. It follows the mark after a space (a
    mark glued to an emoji ends no sentence for Punkt, which would merge the sentences), so the graders read it as
    opening the next sentence, which they accept."""

    name: ClassVar[str] = "sentence-emoji"
    how: ClassVar = "forced"
    static: ClassVar[bool] = True
    emoji: str = " 😊"
    _since: int = PrivateAttr(default=0)  # where the current sentence begins

    def forced_texts(self) -> list[str]:
        return [self.emoji]

    def conflict(self, steering: Steering) -> str:
        if any(re.search(r"[.!?]", t) for t in others_forced(steering, self)):
            return f"{self.name}: other forced text ends a sentence without an emoji"
        if any(r.kind == "sentence-mark" for r in steering.rules):
            return f"{self.name}: every sentence cannot end both with an emoji and with a mark"
        if steering.structure is not None:
            return f"{self.name}: a structure's break forced at a sentence end would come before the emoji"
        return shared_conflict(self, steering, lines=False)

    def bans(self, piece: str) -> bool:
        return piece == ""  # a byte of a character split over tokens: the model's own emoji would come out empty

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        """A mark with whitespace after it in one token becomes the bare mark: the emoji comes right after it."""
        for mark in ".!?":
            spaced = piece_ids(reply.pieces, f"{mark} then a blank", _then_blank(mark))
            redirect(logits, spaced, token_of(reply.pieces, mark))

    def allows(self, reply: Reply, piece: str) -> bool:
        head = re.split(r"[.!?]", piece)[0]
        return head == piece or _has_text(reply.text[self._since :] + head)  # a sentence of marks alone fails

    def after(self, reply: Reply, piece: str) -> str | None:
        if reply.text.endswith(piece) and _SENTENCE_END.search(piece):  # the model's mark, not forced text's
            self._since = len(reply.text) + len(self.emoji)
            return self.emoji
        return None

    def finish(self, text: str) -> str:
        bare = delete_ascii_punctuation(text).rstrip()
        if bare.endswith(self.emoji.strip()) or not bare:
            return text
        body, marks = re.fullmatch(r"(.*?)([.!?\"')\]]*)", text.rstrip(), re.DOTALL).groups()  # type: ignore[union-attr]
        return body + self.emoji + marks  # before the last mark: an emoji after it would be a sentence of its own


@rule_kind
class SentenceMark(RuleKind):
    """Every sentence ends with ``mark`` (one of . ! ?): a token holding another end mark is refused, its
    probability given to the mark's own token, and the last sentence gets the mark at the end."""

    name: ClassVar[str] = "sentence-mark"
    how: ClassVar = "mask"
    mark: str = Field(default="!", pattern=r"^[.!?]$")

    def forced_texts(self) -> list[str]:
        return [self.mark]

    def conflict(self, steering: Steering) -> str:
        others = re.compile(f"[{re.escape('.!?'.replace(self.mark, ''))}]")
        if any(others.search(t) for t in others_forced(steering, self)):
            return f"{self.name}: other forced text holds another sentence end mark"
        return shared_conflict(self, steering, lines=False)

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        other = piece_ids(reply.pieces, f"end marks but {self.mark}", lambda p: bool(re.search(r"[.!?]", p.replace(self.mark, ""))))
        redirect(logits, other, token_of(reply.pieces, self.mark))

    def allows(self, reply: Reply, piece: str) -> bool:
        return self.mark not in piece or _has_text(reply.text[reply.text.rfind(self.mark) + 1 :] + piece.split(self.mark)[0])

    def finish(self, text: str) -> str:
        bare = text.rstrip()
        return bare + self.mark if _has_text(bare) and not re.search(rf"{re.escape(self.mark)}[\"')\]]*$", bare) else text


@rule_kind
class TitleCase(RuleKind):
    """Every word starts with a capital: a token with a lower-case letter after a non-letter is refused, a token
    opening with one is refused where no letter precedes it, and the forms a tokenizer splits into a lower-case
    word ("n't", "cannot") are refused."""

    name: ClassVar[str] = "title-case"
    how: ClassVar = "mask"
    static: ClassVar[bool] = True

    def bans(self, piece: str) -> bool:
        return _lower_word_start(piece, inner=True)

    def conflict(self, steering: Steering) -> str:
        if steering.case == "lower":
            return f"{self.name}: all lowercase leaves no capitals"
        if any(_lower_word_start(t, inner=False) or _SPLIT.search(t) for t in others_forced(steering, self)):
            return f"{self.name}: other forced text has a word in lower case"
        return shared_conflict(self, steering, lines=False)

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        if not reply.text[-1:].isalnum():
            logits[piece_array(reply.pieces, "opens lower", lambda p: p[:1].isalpha() and p[:1].islower())] = -np.inf

    def allows(self, reply: Reply, piece: str) -> bool:
        return not _SPLIT.search(reply.text[-8:] + piece + " ")


_SPLIT = re.compile(r"n't|\b(?:can(?=not\b)|gon(?=na\b)|got(?=ta\b)|wan(?=na\b)|gim(?=me\b)|lem(?=me\b))|'t(?=is\b|was\b)", re.IGNORECASE)


def _lower_word_start(text: str, *, inner: bool) -> bool:
    """Whether a lower-case letter in ``text`` follows a character that is not a letter or digit (``inner``: not
    counting the first character, whose left neighbour is not known)."""
    start = 1 if inner else 0
    return any(c.isalpha() and c.islower() and (i == 0 or not text[i - 1].isalnum()) for i, c in enumerate(text) if i >= start)


@rule_kind
class Exact(RuleKind):
    """The reply is checked as written, character for character: nothing may be forced around it (a quotation
    wrap, a lead, an end phrase)."""

    name: ClassVar[str] = "exact"
    how: ClassVar = "forced"

    def conflict(self, steering: Steering) -> str:
        if steering.lead or steering.opening or steering.closing or steering.end_phrase or steering.postscript:
            return f"{self.name}: text forced around the reply would change it"
        return ""
