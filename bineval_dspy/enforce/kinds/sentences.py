"""Sentences kept in shape while decoding: how many words each has (each ``step`` longer than the one before), a
keyword that opens the N-th one, the letters their first words start with (a to z), alliteration that grows from
one sentence to the next.

A sentence ends only where this rule lets it: every token holding '.', '!' or '?' is refused inside a sentence,
except a bare end mark, allowed once the sentence may end and where Punkt (``core.text.split_sentences_punkt``,
the graders' splitter) breaks after it whatever follows; so the sentences counted here are the ones the verifiers
count. Words are counted as the verifiers count them (ASCII punctuation deleted, then whitespace), on the current
sentence only, so a step costs no more than the sentence is long.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from pydantic import PrivateAttr, field_validator, model_validator

from bineval_dspy.core.text import PUNCTUATION_AND_SPACE, delete_ascii_punctuation, split_sentences_punkt
from bineval_dspy.enforce.rules import Reply, RuleConflict, RuleKind, rule_kind
from bineval_dspy.enforce.runtime import END
from bineval_dspy.enforce.steering import Steering

_ENDER = re.compile(r"[.!?]\s*")  # a bare end mark, perhaps with the space after it
_MARK = re.compile(r"[.!?]")
_TOKENS_PER_WORD = 1.6  # a margin over the embedded models' ~1.3 tokens a word
_FREE_WORDS = 3  # words an alliterating sentence is written freely before its run must start
_WORD_TAIL = 2  # tokens a sentence's last word may still take once the sentence must end


def sentence_words(sentence: str) -> int:
    """Words in one sentence as IFBench counts them: ASCII punctuation deleted, then split at whitespace."""
    return len(delete_ascii_punctuation(sentence).split())


def alliteration_words(sentence: str) -> list[str]:
    """The sentence's words, lower-cased, leading punctuation stripped, empty ones dropped (IFBench's reading)."""
    words = (word.lstrip(PUNCTUATION_AND_SPACE) for word in sentence.lower().split())
    return [word for word in words if word]


def alliteration_score(sentence: str) -> int:
    """Alliterative words in a sentence: each run of words sharing a first letter scores its length."""
    words = alliteration_words(sentence)
    score = 0
    in_run = False
    for word, following in zip(words, words[1:]):
        if word[0] == following[0]:
            score += 1 if in_run else 2
            in_run = True
        else:
            in_run = False
    return score


def ends_sentence(sentence: str, mark: str) -> bool:
    """Whether Punkt breaks after ``sentence`` + ``mark`` whatever follows: tried before a lower-case word, where
    an abbreviation ("etc"), an initial ("J") or a number ("42") does not end one."""
    return split_sentences_punkt(sentence + mark.strip() + " the")[-1] == "the"


@dataclass
class _Pieces:
    """Per token of one vocabulary, what the masks ask, as arrays that leave out tokens without text (the end of
    text: ``may_end`` decides it), so a step ORs a few of them and nothing else (built once per vocabulary)."""

    text: np.ndarray  # has text
    marked: np.ndarray  # holds '.', '!' or '?'
    stray: np.ndarray  # holds one, and is not a bare end mark
    no_space: np.ndarray  # does not start with whitespace
    not_ender: np.ndarray
    not_ender_or_glue: np.ndarray  # neither a bare end mark nor the rest of the word before it
    glues: np.ndarray  # starts with a word character (continues the word before it)
    only_ws: np.ndarray  # whitespace and nothing else
    starts_any: np.ndarray  # begins a word where the text ends in whitespace
    starts_spaced: np.ndarray  # begins a word after whitespace of its own
    head: np.ndarray  # the first non-space character, lower-cased ('' for none)
    _headed: dict[str, np.ndarray] = field(default_factory=dict)
    _hurried: dict[int, np.ndarray] = field(default_factory=dict)

    def headed(self, letter: str) -> np.ndarray:
        """Tokens whose first non-space character is ``letter`` (lower-cased)."""
        if letter not in self._headed:
            self._headed[letter] = self.head == letter
        return self._headed[letter]

    def not_word_or_ender(self, new_word: np.ndarray) -> np.ndarray:
        """Tokens that neither begin a new word nor are a bare end mark."""
        if id(new_word) not in self._hurried:
            self._hurried[id(new_word)] = ~new_word & self.not_ender & self.text
        return self._hurried[id(new_word)]


_TABLES: dict[int, tuple[list[str], _Pieces]] = {}


def piece_classes(pieces: list[str]) -> _Pieces:
    """The classes of ``pieces`` (cached by the list's identity: a vocabulary is built once per tokenizer)."""
    cached = _TABLES.get(id(pieces))
    if cached is not None and cached[0] is pieces:
        return cached[1]

    def array(test: Callable[[str], object]) -> np.ndarray:
        return np.fromiter((bool(test(p)) for p in pieces), dtype=bool, count=len(pieces))

    text = array(bool)
    ender = array(_ENDER.fullmatch)
    marked = array(_MARK.search)
    lead_ws = array(lambda p: p[:1].isspace())
    only_ws = array(lambda p: bool(p) and not p.strip())
    glues = array(lambda p: re.match(r"\w", p))
    head = np.array([p.lstrip()[:1].lower() for p in pieces], dtype="<U1")
    starts_any = ~only_ws & (head != "")
    tables = _Pieces(
        text=text,
        marked=marked,
        stray=marked & ~ender,
        no_space=~lead_ws & text,
        not_ender=~ender & text,
        not_ender_or_glue=~(ender | glues) & text,
        glues=glues,
        only_ws=only_ws,
        starts_any=starts_any,
        starts_spaced=starts_any & lead_ws,
        head=head,
    )
    _TABLES[id(pieces)] = (pieces, tables)
    return tables


@rule_kind
class SentencePlan(RuleKind):
    """The sentences' shape: each ``step`` words longer than the one before (the first of 3 to 12), ``keywords``
    (N, word) opening the N-th sentence, first words starting with the letters of ``initials`` (then the reply
    ends), each sentence more alliterative than the one before (``alliteration``)."""

    name: ClassVar[str] = "sentences"
    how: ClassVar = "automaton"

    step: int | None = None
    keywords: tuple[tuple[int, str], ...] = ()
    initials: str = ""
    alliteration: bool = False

    _start: int = PrivateAttr(0)  # where the current sentence begins in the reply's text
    _index: int = PrivateAttr(1)  # the current sentence, from 1
    _prev_words: int = PrivateAttr(0)
    _prev_score: int = PrivateAttr(-1)
    _first_most: int = PrivateAttr(0)  # the first sentence's most words (``step``), set at the first step
    _space: bool = PrivateAttr(False)  # the last end mark has no space after it: the next token must bring one
    _glue: bool = PrivateAttr(False)  # a keyword was just forced: the next token may not lengthen it
    _run_from: int = PrivateAttr(0)  # alliterating: the words from this one on must share ``_run_letter``
    _run_letter: str = PrivateAttr("")
    _free: bool = PrivateAttr(False)  # nothing is left to steer
    _seen: tuple[int, int, int] = PrivateAttr((-1, 0, 0))  # (text length, words, score) of the current sentence
    _share: int = PrivateAttr(0)  # the tokens the current sentence may take (0: not yet shared out)
    _spent: int = PrivateAttr(0)  # the tokens it has taken
    _close_from: int = PrivateAttr(0)  # the token from which it must end (0: not yet)

    @field_validator("keywords")
    @classmethod
    def _keywords(cls, value: tuple[tuple[int, str], ...]) -> tuple[tuple[int, str], ...]:
        if any(n < 1 or not word.strip() for n, word in value):
            raise ValueError("a keyword needs a sentence number of at least 1 and a word")
        return tuple(sorted((n, word.strip()) for n, word in value))

    @model_validator(mode="after")
    def _consistent(self) -> SentencePlan:
        if why := self._why_not():
            raise ValueError(why)
        return self

    def _why_not(self) -> str:
        numbers = [n for n, _ in self.keywords]
        if len(set(numbers)) < len(numbers):
            return "two different keywords must open the same sentence"
        if self.step is not None and self.step < 0:
            return "a sentence cannot be a negative number of words longer"
        if (self.step is not None) + self.alliteration + bool(self.initials) > 1:
            return "growing sentences are planned for a few sentences, one kind of growth at a time"
        if self.initials and not self.initials.isalpha():
            return "the sentences' first letters must be letters"
        for n, word in self.keywords:
            if self.initials and (n > len(self.initials) or word[0].lower() != self.initials[n - 1]):
                return f"the keyword {word!r} cannot open sentence {n}, whose first word is set by the letters"
        return ""

    def combine(self, other: RuleKind) -> RuleKind:
        assert isinstance(other, SentencePlan)
        for name in ("step", "initials"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine not in (None, "") and theirs not in (None, "") and mine != theirs:
                raise RuleConflict(f"two different sentence rules ({name})")
        try:
            return SentencePlan(
                step=self.step if self.step is not None else other.step,
                keywords=tuple(dict.fromkeys(self.keywords + other.keywords)),
                initials=self.initials or other.initials,
                alliteration=self.alliteration or other.alliteration,
            )
        except ValueError as exc:
            raise RuleConflict(str(exc).splitlines()[-1]) from None

    def forced_texts(self) -> list[str]:
        return [word for _, word in self.keywords]

    def _wanted(self) -> int:
        """Sentences the reply is steered to have (the letters fix it; a keyword's needs that many)."""
        if self.initials:
            return len(self.initials)
        return max([3 if self.step is not None or self.alliteration else 1, *(n for n, _ in self.keywords)])

    def min_tokens(self) -> int:
        if self.initials:
            return len(self.initials) * 10 + 16
        words = 3 * 4 + 3 * (self.step or 0) if self.step is not None else 0
        return max(int(words * _TOKENS_PER_WORD) + 24, 64 if self.alliteration else 0, self._wanted() * 8 + 16)

    def conflict(self, steering: Steering) -> str:
        if steering.lead or steering.title or steering.structure or steering.choice or steering.json_value:
            return "forced text or structure would fall inside the sentences this rule counts"
        if steering.postscript or steering.end_phrase or steering.max_words is not None:
            return "a closing or a word ceiling would cut the sentences this rule counts"
        if steering.max_sentences is not None and self._wanted() >= steering.max_sentences and (self.initials or self.keywords):
            return f"{self._wanted()} sentences are needed, fewer than {steering.max_sentences} allowed"
        growing = self.step is not None or self.alliteration
        if growing and (steering.min_words or steering.min_sentences > self._wanted()):
            return "a floor on the words or sentences is not planned beside sentences that grow"
        if self.initials and (steering.opening or steering.min_sentences > len(self.initials)):
            return "the first word must open the reply, and the letters fix the number of sentences"
        if all(any(banned in mark for banned in steering.banned) for mark in ".!?"):
            return "no sentence could end: '.', '!' and '?' are all banned"
        others = [rule for rule in steering.rules if rule.kind != self.name and rule.build().forced_texts()]
        if others:
            return f"the text {others[0].kind} forces would fall inside the sentences this rule counts"
        return self._why_not()

    # -- the current sentence --------------------------------------------------------------------------
    def _counts(self, reply: Reply) -> tuple[int, int]:
        """The current sentence's words and alliteration score (computed once per length of the text)."""
        if self._seen[0] != len(reply.text):
            sentence = reply.text[self._start :]
            score = alliteration_score(sentence) if self.alliteration else 0
            self._seen = (len(reply.text), sentence_words(sentence), score)
        return self._seen[1], self._seen[2]

    def _bounds(self, reply: Reply) -> tuple[int, int]:
        """The fewest and most words the current sentence may have."""
        if self.step is not None:
            if self._index > 1:
                target = self._prev_words + self.step
                return target, target
            if not self._first_most:
                words = (reply.limit - reply.tokens) / _TOKENS_PER_WORD
                self._first_most = int(min(12, max(3, words // 3 - self.step)))
            return min(3, self._first_most), self._first_most
        most = min(20, max(2, int(self._budget(reply) / _TOKENS_PER_WORD) - 1))
        return min(_FREE_WORDS, most), most

    def _budget(self, reply: Reply) -> int:
        """The tokens this sentence may take: those left when it began, shared by the sentences still to come."""
        if not self._share:
            to_come = max(1, self._wanted() - self._index + 1)
            self._share = max(4, (reply.limit - reply.tokens - 2) // to_come)
        return self._share

    def _hurried(self, reply: Reply) -> bool:
        """Whether the sentence has spent its tokens (or the reply nearly all of its): only whole words now."""
        words, _ = self._counts(reply)
        missing = max(0, self._bounds(reply)[0] - words)
        later = 3 * max(0, self._wanted() - self._index)  # a word and its end mark, at least, for each to come
        return self._spent + missing + 3 >= self._budget(reply) or reply.limit - reply.tokens - later <= missing + 3

    def _score_ok(self, score: int) -> bool:
        return not self.alliteration or self._index == 1 or score > self._prev_score

    def _may_close(self, reply: Reply) -> bool:
        """Whether the current sentence may end here (before Punkt's own word on the mark)."""
        words, score = self._counts(reply)
        least, _ = self._bounds(reply)
        return words >= max(1, least) and self._score_ok(score)

    def _must_close(self, reply: Reply) -> bool:
        words, _ = self._counts(reply)
        return self._may_close(reply) and (words >= self._bounds(reply)[1] or self._hurried(reply))

    # -- decoding --------------------------------------------------------------------------------------
    def prefix(self) -> str:
        first = next((word for n, word in self.keywords if n == 1), "")
        self._glue = bool(first)
        self._free = self._nothing_left(1)
        return first

    def _nothing_left(self, index: int) -> bool:
        """Whether nothing is steered from sentence ``index`` on (its keyword already written)."""
        later = any(n > index for n, _ in self.keywords)
        return not (self.step is not None or self.alliteration or self.initials or later)

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        t = piece_classes(reply.pieces)
        refused = [t.glues] if self._glue else []  # precomputed arrays (no token without text in any), OR-ed once
        if not self._free:
            refused += self._refused(t, reply)
        if refused:
            logits[refused[0] if len(refused) == 1 else np.logical_or.reduce(refused)] = -np.inf

    def _refused(self, t: _Pieces, reply: Reply) -> list[np.ndarray]:
        """The arrays of tokens refused at this step, inside a sentence the rule still steers."""
        refused = [t.stray if self._may_close(reply) else t.marked]
        if self._space:
            refused.append(t.no_space)
        sentence = reply.text[self._start :]
        words, score = self._counts(reply)
        ends_blank = not sentence or sentence[-1].isspace()
        if self._must_close(reply):
            self._close_from = self._close_from or self._spent
            grown = self._spent - self._close_from >= _WORD_TAIL  # the word has had its tail: end it there
            now = ends_blank or ((grown or self._hurried(reply)) and ends_sentence(sentence, "."))
            refused.append(t.not_ender if now else t.not_ender_or_glue)  # end the word, then the sentence
        elif self._hurried(reply):
            refused.append(t.not_word_or_ender(reply.new_word))  # its tokens are spent: only whole new words
        letter = self._letter(reply, words, score)
        starts = t.starts_any if ends_blank else t.starts_spaced
        if letter:
            refused.append(starts & ~t.headed(letter))
            if self._run_from:
                refused.append(t.only_ws)  # a run of words on one line, not a column of them
        elif self.alliteration and words:  # no run beyond the one asked for, so the next sentence's stays short
            refused.append(starts & t.headed(alliteration_words(sentence)[-1][0]))
        return refused

    def _letter(self, reply: Reply, words: int, score: int) -> str:
        """The letter the next word must start with ('' for any): the sentence's first word's, or an
        alliterative run's once the sentence has had its free words (or the tokens run short)."""
        if self.initials and not reply.text[self._start :].strip():
            return self.initials[self._index - 1].lower()
        if not self.alliteration or self._score_ok(score):
            self._run_from = 0
            return ""
        if not self._run_from:
            needed = self._prev_score + 1 - score
            short = reply.limit - reply.tokens <= (needed + 2) * _TOKENS_PER_WORD + 4
            current = alliteration_words(reply.text[self._start :])
            if current and (len(current) >= _FREE_WORDS or short):
                self._run_from, self._run_letter = len(current), current[-1][0]
        return self._run_letter if self._run_from else ""

    def allows(self, reply: Reply, piece: str) -> bool:
        if self._glue and re.match(r"\w", piece):
            return False
        if self._free:
            return True
        if self._space and not piece[:1].isspace():
            return False
        sentence = reply.text[self._start :]
        if _ENDER.fullmatch(piece):
            return self._may_close(reply) and ends_sentence(sentence, piece)
        if _MARK.search(piece):
            return False
        grown = sentence + piece
        least, most = self._bounds(reply)
        if sentence_words(grown) > (most if self.step is not None else most + 2):
            return False
        if self.initials and not sentence.strip() and grown.strip():
            return grown.split()[0][0].lower() == self.initials[self._index - 1].lower()
        if self._run_from:
            done = alliteration_words(sentence)[self._run_from - 1 :]  # the run's words before this token
            repeated = piece[:1].isspace() and len(done) >= 2 and done[-1] == done[-2]  # "the the" ends no word
            return not repeated and all(word[0] == self._run_letter for word in alliteration_words(grown)[self._run_from :])
        return True

    def after(self, reply: Reply, piece: str) -> str | None:
        self._glue = self._space = False
        self._spent += 1
        if self._free or not _ENDER.fullmatch(piece):
            return None
        sentence = reply.text[self._start :]
        self._prev_words = sentence_words(sentence)
        self._prev_score = alliteration_score(sentence) if self.alliteration else 0
        self._index += 1
        self._start, self._seen, self._share, self._spent, self._close_from = len(reply.text), (-1, 0, 0), 0, 0, 0
        self._space = not piece[-1].isspace()
        self._run_from = 0
        if self.initials and self._index > len(self.initials):
            return END
        keyword = next((word for n, word in self.keywords if n == self._index), "")
        if not keyword and not self.initials and not self._fits_another(reply):
            return END  # every sentence so far holds; the next would not fit in the tokens left
        self._free = self._nothing_left(self._index)
        if not keyword:
            return None
        forced = (" " if self._space else "") + keyword
        self._space, self._glue = False, True
        return forced

    def _fits_another(self, reply: Reply) -> bool:
        pending = any(n >= self._index for n, _ in self.keywords)
        least = self._prev_words + self.step if self.step is not None else _FREE_WORDS + 2
        return pending or reply.limit - reply.tokens >= least * _TOKENS_PER_WORD + 3

    def may_end(self, reply: Reply) -> bool:
        if self._free:
            return True
        words, _ = self._counts(reply)
        if not words:
            return self._index > 1 and (self._index - 1 >= self._wanted() or not self._fits_another(reply))
        return self._index >= self._wanted() and self._may_close(reply)

    def finish(self, text: str) -> str:
        """The reply cut back to its last whole sentence when the tokens ran out inside one that does not hold
        (a sentence short of its length, or of its alliteration)."""
        if self._free or self._index == 1 or len(text) < self._start:
            return text
        sentence = text[self._start :]
        if not sentence.strip():
            return text
        short = self.step is not None and sentence_words(sentence) != self._prev_words + self.step
        flat = self.alliteration and alliteration_score(sentence) <= self._prev_score
        return text[: self._start].rstrip() if short or flat else text
