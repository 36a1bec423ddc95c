"""Counters over sentence ends and word positions: sentence types in a ratio (twice as many '.' as '?', as many
'.' as '?' as '!'), every punctuation mark present, every N-th word in Japanese. The counts are made with the
functions the verifiers count with (they import them from here)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import ClassVar, Final

from pydantic import Field, PrivateAttr

from bineval_dspy.core.text import split_sentences_punkt, trim_punctuation
from bineval_dspy.enforce.kinds.budgets import CLAUSE_BREAKERS, FILL_WORDS, _Fill, _others_forced
from bineval_dspy.enforce.rules import Reply, RuleKind, rule_kind
from bineval_dspy.enforce.runtime import END
from bineval_dspy.enforce.steering import HOW, Steering

_MARKS: Final = ".?!"
_FILL_SENTENCE: Final = {".": "Indeed.", "?": "Why?", "!": "Wow!"}  # one forced sentence per mark
JAPANESE_CHAR: Final = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")  # hiragana, katakana, CJK ideographs
_JAPANESE_FILL: Final = "語"
INTERROBANGS: Final = ("?!", "!?", "‽")
_ALL_MARKS_CLAUSE: Final = "wow?! yes; indeed: right, fine! really? done"


def ending_count(sentences: list[str], mark: str) -> int:
    """How many sentences end with ``mark`` (a sentence counts by its last character)."""
    return sum(sentence.endswith(mark) for sentence in sentences)


def missing_marks(text: str) -> tuple[bool, list[str]]:
    """Whether ``text`` holds an interrobang, and which of . , ! ? ; : it lacks outside the first ?!/!? pair."""
    if not any(mark in text for mark in INTERROBANGS):
        return False, []
    pair = "?!" if "?!" in text else "!?"
    return True, sorted(set(".,!?;:") - set(text.replace(pair, "", 1)), key=".,!?;:".index)


def japanese_or_exempt(word: str) -> bool:
    """Whether a whitespace word may stand at a Japanese word's position: Japanese, a number, or punctuation only."""
    bare = trim_punctuation(word)
    return not bare or bare.isdigit() or bool(JAPANESE_CHAR.search(bare))


@rule_kind
class SentenceMarks(RuleKind):
    """Sentences ending in ``marks`` in the proportion ``parts`` (two '.' per '?'; one of each of '.', '?', '!'):
    a sentence end is allowed only with the mark most behind, and closing sentences are forced where the counts
    still differ at the end."""

    name: ClassVar[str] = "sentence-marks"
    how: ClassVar[HOW] = "automaton"
    marks: str = Field(pattern=r"^[.?!]{2,3}$")
    parts: tuple[int, ...]
    _at: int = PrivateAttr(default=-1)
    _due: str = PrivateAttr(default=".")

    def _counts(self, text: str) -> list[int]:
        sentences = split_sentences_punkt(text)
        return [ending_count(sentences, mark) for mark in self.marks]

    def holds(self, text: str) -> bool:
        counts = self._counts(text)
        return all(c * p == counts[0] * self.parts[0] for c, p in zip(counts, self.parts))

    def _mark_due(self, text: str) -> str:
        if self._at != len(text):  # once per step: the counts of the text so far
            counts = self._counts(text)
            self._at = len(text)
            self._due = min(zip(self.marks, counts, self.parts), key=lambda m: m[1] / m[2])[0]
        return self._due

    def allows(self, reply: Reply, piece: str) -> bool:
        if not any(c in _MARKS for c in piece):
            return True
        due = self._mark_due(reply.text)
        return all(c == due for c in piece if c in _MARKS)

    def _closing(self, text: str) -> str:
        """The sentences that bring the counts of ``text`` into proportion ('' when they are)."""
        out = ""
        for _ in range(4):  # the forced sentences count as planned unless a splitter quirk joins them
            if self.holds(text + out):
                return out
            counts = self._counts(text + out)
            k = max(-(-c // p) for c, p in zip(counts, self.parts))
            wanted = [k * p - c for c, p in zip(counts, self.parts)]
            order = sorted(range(len(wanted)), key=lambda i: -wanted[i])
            while any(wanted):
                for i in order:
                    if wanted[i]:
                        out += " " + _FILL_SENTENCE[self.marks[i]]
                        wanted[i] -= 1
        return out

    def at_end(self, reply: Reply) -> str | None:
        return self._closing(reply.text) or None

    def finish(self, text: str) -> str:
        return text + self._closing(text)

    def forced_texts(self) -> list[str]:
        return [" " + _FILL_SENTENCE[mark] for mark in self.marks]

    def conflict(self, steering: Steering) -> str:
        if any(c in _MARKS for t in _others_forced(steering, self.name) for c in t):
            return "another constraint forces a sentence end the sentence counts cannot absorb"
        if steering.max_sentences is not None or steering.max_words is not None:
            return "the forced closing sentences may pass a length ceiling"
        if steering.closing or steering.json_value or steering.choice:
            return "the reply's last sentence must end in its mark, not in closing text or a fixed form"
        if clash := next((rule.kind for rule in steering.rules if rule.kind in CLAUSE_BREAKERS), None):
            return f"the forced closing sentence {CLAUSE_BREAKERS[clash]}"
        return ""


@rule_kind
class AllMarks(_Fill):
    """An interrobang and each of . , ! ? ; : somewhere: a short clause holding them all is forced at the end
    when any is missing."""

    name: ClassVar[str] = "all-marks"

    def holds(self, text: str) -> bool:
        found, missing = missing_marks(text)
        return found and not missing

    def items(self, text: str) -> Iterator[str]:
        yield _ALL_MARKS_CLAUSE

    def after(self, reply: Reply, piece: str) -> str | None:
        return None  # the clause closes the reply: written at the end only

    def forced_texts(self) -> list[str]:
        return [" " + _ALL_MARKS_CLAUSE + "."]


@rule_kind
class EveryNthJapanese(RuleKind):
    """Every ``step``-th whitespace word holds a Japanese character: a Japanese character is forced into each
    such word as it begins, and a token that would complete one without it is refused."""

    name: ClassVar[str] = "every-nth-japanese"
    how: ClassVar[HOW] = "forced"
    step: int = Field(ge=1)
    _at: int = PrivateAttr(default=-1)
    _before: int = PrivateAttr(default=0)  # whitespace words before the text's last (open) word

    def _words_before(self, text: str) -> int:
        if self._at != len(text):
            words = len(text.split())
            self._before = words - 1 if words and not text[-1].isspace() else words
            self._at = len(text)
        return self._before

    def allows(self, reply: Reply, piece: str) -> bool:
        text = reply.text
        before = self._words_before(text)
        tail = (text.rsplit(None, 1)[-1] if text and not text[-1].isspace() else "") + piece
        words = tail.split()
        complete = words if tail[-1:].isspace() else words[:-1]
        return all(japanese_or_exempt(w) for i, w in enumerate(complete, start=before + 1) if i % self.step == 0)

    def after(self, reply: Reply, piece: str) -> str | None:
        text = reply.text
        if not text or text[-1].isspace():
            return None
        position = self._words_before(text) + 1
        last = trim_punctuation(text.rsplit(None, 1)[-1])
        if position % self.step == 0 and last and not JAPANESE_CHAR.search(last):  # a number too: it may grow
            return _JAPANESE_FILL  # glued to the word: no word is added, so the word counts of others stay true
        return None

    def finish(self, text: str) -> str:
        """The last word, when the decoder stopped right after it began (a ceiling ends before ``after``)."""
        words = text.split()
        if words and not text[-1].isspace() and len(words) % self.step == 0 and not japanese_or_exempt(words[-1]):
            return text + _JAPANESE_FILL
        return text

    def forced_texts(self) -> list[str]:
        return [_JAPANESE_FILL]

    def conflict(self, steering: Steering) -> str:
        if steering.json_value:
            return "a Japanese character forced into a JSON value may break its grammar"
        if any(t.split() for t in _others_forced(steering, self.name)):  # '*' or '"' alone is a word too
            return "another constraint forces words whose positions the Japanese words are not counted among"
        return ""


# A closing word of each length from 2 to 13 (none an abbreviation Punkt would not end a sentence after).
_EXACT_WORDS: Final = {
    len(w): w
    for w in "up now here today indeed clearly together naturally completely effectively consequently automatically".split()
}
_REALIGNED: Final = "\"')]}"  # closing marks Punkt attaches to the sentence before when they open one
_CLOSE_AT: Final = max(_EXACT_WORDS) + 2  # characters left at which the sentence is closed: ' ' + word + '.'


@rule_kind
class EqualSentences(RuleKind):
    """Exactly ``count`` sentences of ``length`` characters each: the model may not end a sentence itself; once
    few enough characters are left, the sentence is closed by force with a word of the exact length and a
    period, and the reply ends with the last one."""

    name: ClassVar[str] = "equal-sentences"
    how: ClassVar[HOW] = "automaton"
    static: ClassVar[bool] = True
    count: int = Field(ge=1)
    length: int = Field(ge=_CLOSE_AT + 8)
    _done: int = PrivateAttr(default=0)
    _start: int = PrivateAttr(default=0)  # where the current sentence begins in the text

    def bans(self, piece: str) -> bool:
        return any(c in _MARKS for c in piece)  # only the forced closings end a sentence

    def _left(self, sentence: str) -> int:
        return self.length - len(sentence.lstrip())

    def allows(self, reply: Reply, piece: str) -> bool:
        sentence = reply.text[self._start :]
        if not sentence.strip() and piece.lstrip()[:1] in _REALIGNED:
            return False  # Punkt would move it onto the sentence before
        return self._left(sentence + piece) >= 4  # room for ' ' + a closing word + '.'

    def after(self, reply: Reply, piece: str) -> str | None:
        left = self._left(reply.text[self._start :])
        if self._done >= self.count or left > _CLOSE_AT:
            return None
        if self._done == self.count - 1:
            return END  # nothing may follow the last sentence: ``finish`` closes it
        return self._close(reply.text, left)

    def _close(self, text: str, left: int) -> str:
        closing = " " + _EXACT_WORDS[left - 2] + "."
        self._done += 1
        if self._done < self.count:
            closing += " "
        self._start = len(text) + len(closing)
        return closing

    def may_end(self, reply: Reply) -> bool:
        return self._done >= self.count

    def finish(self, text: str) -> str:
        """The sentences the token budget left unwritten, filled with plain words to the exact length."""
        words = itertools.cycle(FILL_WORDS)
        while self._done < self.count:
            left = self._left(text[self._start :])
            if left > _CLOSE_AT:
                text += (" " if text[self._start :].strip() else "") + next(words)
                continue
            text += self._close(text, left)
        return text.rstrip()

    def min_tokens(self) -> int:
        return self.count * self.length // 3 + 16  # about four characters a token, with room

    def forced_texts(self) -> list[str]:
        return [" " + " ".join([*_EXACT_WORDS.values(), *FILL_WORDS]) + "."]

    def conflict(self, steering: Steering) -> str:
        fields = steering.model_copy(update={"rules": (), "case": None, "banned": (), "forbidden_words": ()})
        if fields != Steering() or len(steering.rules) > 1:
            return "sentences of an exact length leave no room for other forced text, structure or counts"
        return ""
