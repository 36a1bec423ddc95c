"""Words that link the units of the reply, forced where a unit ends or begins: each line ends with the word it
began with; each sentence begins with the word the one before it ended with; a keyword is the m-th word of the
n-th sentence. Sentences are cut as the verifiers cut them (``core.text.split_sentences_punkt``), kept
incrementally from the start of the current sentence."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import Field, PrivateAttr

from bineval_dspy.core.text import PUNCTUATION_AND_SPACE, split_sentences_punkt, word_tokenize_nltk
from bineval_dspy.enforce.rules import Reply, RuleKind, rule_kind

_ENDS = re.compile(r"[.!?]")


def _stateful_words(steering: Any) -> bool:
    """Whether a word rule of ``steering`` reads the words before each word (a forced repeat may break it)."""
    return any(rule.kind == "words" and any(p.stateful for p in rule.build().built()) for rule in steering.rules)


def _line_words(line: str) -> list[str]:
    """A line's words as the check reads them: trimmed, lower-cased, outer punctuation stripped."""
    return line.strip().lower().strip(PUNCTUATION_AND_SPACE).split()


@rule_kind
class LineEcho(RuleKind):
    """Each line ends with the word it starts with: a line break is refused until it does, and at the end the
    line's first word is written once more."""

    name: ClassVar[str] = "line-echo"
    how: ClassVar = "forced"

    def conflict(self, steering: Any) -> str:
        if steering.lead or steering.title or steering.structure is not None or steering.postscript or steering.end_phrase:
            return "forced lines or a forced ending break the lines' first and last words"
        if steering.choice or steering.json_value or steering.max_words is not None:
            return "the reply is fixed in form, or a word written at its end may pass the word ceiling"
        if _stateful_words(steering):
            return "a word repeated at a line's end breaks a rule on neighbouring words"
        if any(rule.kind != self.name and rule.build().how == "forced" for rule in steering.rules):
            return "text forced mid-line may fix a line's first word where no last word can match it"
        if any(rule.build().how == "automaton" for rule in steering.rules):
            return "a rule that plans the sentences or lines ends them where the line's first word cannot be echoed"
        return ""

    @staticmethod
    def _line_ok(line: str) -> bool:
        found = _line_words(line)
        return not found or found[0] == found[-1]

    @staticmethod
    def _echo(line: str) -> str:
        """The line's first word as written (what closes it)."""
        found = line.strip().strip(PUNCTUATION_AND_SPACE).split()
        return found[0] if found else ""

    def allows(self, reply: Reply, piece: str) -> bool:
        text = reply.text + piece
        start = reply.text.rfind("\n") + 1
        lines = text[start:].split("\n")
        if any(not self._line_ok(line) for line in lines[:-1]):
            return False
        line = lines[-1].strip().strip(PUNCTUATION_AND_SPACE)
        first = re.match(r"\S+\s", line)  # the first word is complete: a word ending in punctuation cannot close
        return first is None or first.group()[-2] not in PUNCTUATION_AND_SPACE or not line[first.end() :].strip()

    def may_end(self, reply: Reply) -> bool:
        return self._line_ok(reply.text[reply.text.rfind("\n") + 1 :])

    def at_end(self, reply: Reply) -> str | None:
        return self._closing(reply.text)

    def _closing(self, text: str) -> str | None:
        line = text[text.rfind("\n") + 1 :]
        closing = " " + self._echo(line)
        return None if self._line_ok(line) or not self._line_ok(line + closing) else closing  # None: nothing helps

    def finish(self, text: str) -> str:
        return text.rstrip() + (self._closing(text.rstrip()) or "")


def _last_word(sentence: str) -> str:
    found = sentence.rstrip(PUNCTUATION_AND_SPACE).split()
    return found[-1] if found else ""


def _first_word(sentence: str) -> str:
    found = sentence.lstrip(PUNCTUATION_AND_SPACE).split()
    return found[0] if found else ""


@rule_kind
class SentenceChain(RuleKind):
    """Each sentence begins with the word the sentence before it ended with: written by force where a sentence
    ends, and a token that would begin a sentence otherwise is refused."""

    name: ClassVar[str] = "sentence-chain"
    how: ClassVar = "forced"
    _at: int = PrivateAttr(default=0)  # where the current sentence begins
    _want: str | None = PrivateAttr(default=None)  # the first word it must have, while that word is not complete
    _sealed: int = PrivateAttr(default=-1)  # where a forced first word ends: a space must follow it

    def conflict(self, steering: Any) -> str:
        if steering.lead or steering.postscript or steering.end_phrase or steering.choice or steering.json_value:
            return "forced sentences break the chain of last and first words"
        structure = steering.structure
        if structure is not None and (structure.first_word or structure.kind == "sections"):
            return "a unit's forced first words begin a sentence"
        if _stateful_words(steering):
            return "a word repeated at a sentence's start breaks a rule on neighbouring words"
        if structure is not None or steering.title or steering.opening:
            return "forced units, titles or openings begin sentences with words the chain does not link"
        others = [rule.kind for rule in steering.rules if rule.kind != self.name and rule.build().how in ("forced", "automaton")]
        if others:
            return f"the rule {others[0]} writes words at sentences' ends or starts that the chain does not link"
        if any(rule.kind == "word-per-line" for rule in steering.rules):
            return "the word repeated at a sentence's start would share a line with the mark before it"
        return ""

    @staticmethod
    def _begins(sentence: str, want: str | None, partial: bool) -> bool:
        """Whether ``sentence`` begins with ``want`` (None: any word); a partial last word may be its beginning."""
        if want is None:
            return True
        body = sentence.lstrip(PUNCTUATION_AND_SPACE)
        first = _first_word(sentence).lower()
        growing = partial and not re.search(r"\s", body)  # nothing after the first word yet
        return want.startswith(first) if growing else first == want

    def allows(self, reply: Reply, piece: str) -> bool:
        if len(reply.text) == self._sealed and not piece[:1].isspace():
            return False  # "word." or "word," would be another first word than the one forced
        text = reply.text[self._at :] + piece
        if self._want is None and not _ENDS.search(text):
            return True
        sentences = split_sentences_punkt(text) or [text]
        want = self._want
        for index, sentence in enumerate(sentences):
            last = index == len(sentences) - 1
            if not self._begins(sentence, want, partial=last and not piece[-1:].isspace()):
                return False
            if not last:
                want = _last_word(sentence).lower()
                if not want:
                    return False
        return not (_ENDS.search(sentences[-1]) and not _last_word(sentences[-1]))  # an ended sentence has a word

    def after(self, reply: Reply, piece: str) -> str | None:
        region = reply.text[self._at :]
        sentences = split_sentences_punkt(region) if _ENDS.search(region) else [region]
        if len(sentences) > 1:  # a sentence began with a token the model wrote (``allows`` checked it links)
            self._at, self._want = reply.text.rfind(sentences[-1]), _last_word(sentences[-2]).lower()
            region = reply.text[self._at :]
        if self._want is not None and re.match(r"\S+\s", region.lstrip(PUNCTUATION_AND_SPACE)):
            self._want = None  # its first word is complete
        if not _ENDS.search(piece):
            return None
        word = _last_word((split_sentences_punkt(region) or [""])[-1])
        forced = ("" if region[-1:].isspace() else " ") + word
        parts = split_sentences_punkt(region + forced)
        if not word or len(parts) < 2 or _first_word(parts[-1]).lower() != word.lower():
            return None  # no sentence ends here (an abbreviation, a number)
        self._at = len(reply.text) + len(forced) - len(word)
        self._sealed, self._want = len(reply.text) + len(forced), None
        return forced


def _settled(region: str) -> tuple[int, int]:
    """How many sentences of ``region`` have ended for good, and where the current one begins. A last "sentence"
    of marks alone is not one yet: Punkt cuts "eel?!" after the "?" but reads "eel?! Then" as one sentence."""
    sentences = split_sentences_punkt(region)
    if len(sentences) > 1 and not any(c.isalnum() for c in sentences[-1]):
        sentences.pop()
    starts, at = [], 0
    for sentence in sentences:
        at = region.find(sentence, at)
        starts.append(at)
        at += len(sentence)
    return max(len(sentences) - 1, 0), starts[-1] if starts else 0


@rule_kind
class KeywordAt(RuleKind):
    """``keyword`` is word ``word`` of sentence ``sentence`` (words: tokens with a letter or digit, as the check
    counts them): that sentence may not end before it, the keyword is written where its turn comes, and when
    tokens run short the sentences before it are ended by force."""

    name: ClassVar[str] = "keyword-at"
    how: ClassVar = "forced"
    keyword: str = Field(pattern=r"^[A-Za-z]+$")
    sentence: int = Field(ge=1)
    word: int = Field(ge=1)
    _at: int = PrivateAttr(default=0)
    _index: int = PrivateAttr(default=0)  # the current sentence (0-based)
    _placed: int = PrivateAttr(default=-1)  # where the keyword ends in the text, once written

    def forced_texts(self) -> list[str]:
        return [self.keyword]

    def min_tokens(self) -> int:
        return self.sentence * 20 + self.word * 2 + 32

    def prefix(self) -> str:
        if self.sentence == 1 and self.word == 1:
            self._placed = len(self.keyword)
            return self.keyword
        return ""

    def conflict(self, steering: Any) -> str:
        if steering.max_sentences is not None or steering.max_words is not None or steering.choice or steering.json_value:
            return "the reply must run to that sentence and word"
        if steering.structure is not None or steering.postscript:
            return "a structure or postscript may end the reply before that sentence"
        if any(rule.kind == "sentence-chain" for rule in steering.rules):
            return "the sentences' first words are forced by another rule"
        if any(rule.kind in ("word-per-line", "no-whitespace") for rule in steering.rules):
            return "the keyword is written after a space, on the line of the word before it"
        if steering.lead:
            return "the forced lead's words and sentences come first"
        if self.sentence == 1 and self.word == 1 and (steering.opening or steering.title):
            return "something else is forced at the start of the reply"
        return ""

    def _sync(self, text: str) -> str:
        """The current sentence, its start and index brought up to date."""
        region = text[self._at :]
        if _ENDS.search(region):
            ended, start = _settled(region)
            self._index += ended
            self._at += start
            region = region[start:]
        return region

    @staticmethod
    def _words(region: str) -> list[str]:
        return [t for t in word_tokenize_nltk(region) if any(c.isalnum() for c in t)]

    def allows(self, reply: Reply, piece: str) -> bool:
        if self._placed >= 0:  # the keyword stays a word of its own
            return len(reply.text) > self._placed or piece[:1].isspace() or piece[:1] in ",;:"
        region = self._sync(reply.text)
        index, current = self._index, region + piece
        if _ENDS.search(region[-4:] + piece):
            ended, start = _settled(current)
            index, current = index + ended, current[start:]
        if index != self.sentence - 1:
            return index < self.sentence - 1
        if _ENDS.search(piece):
            return False  # the sentence runs on until the keyword is in it
        found = self._words(current)
        if len(found) < self.word:
            return True
        written = found[self.word - 1].lower()
        return self.keyword.lower().startswith(written) if len(found) == self.word else written == self.keyword.lower()

    def after(self, reply: Reply, piece: str) -> str | None:
        if self._placed >= 0:
            return None
        region = self._sync(reply.text)
        if self._index < self.sentence - 1:
            if self.word == 1 and self._index == self.sentence - 2 and _ENDS.search(piece):
                forced = ("" if region[-1:].isspace() else " ") + self.keyword
                parts = split_sentences_punkt(region + forced)
                if len(parts) > 1 and _first_word(parts[-1]) == self.keyword:
                    return self._place(reply, forced)  # the sentence before it ended: the keyword opens this one
            short = reply.limit - reply.tokens <= (self.sentence - 1 - self._index) * 4 + self.word * 2 + 16
            return "." if short and piece[-1:].isalpha() and self._words(region) else None  # tokens run short
        fresh = re.fullmatch(r"\s+[A-Za-z]+", piece) is not None  # a word begun: mostly a whole word
        closed = piece[-1:].isspace() or piece[-1:] in ",;:"
        if self.word > 1 and (fresh or closed) and len(self._words(region)) == self.word - 1:
            return self._place(reply, ("" if reply.text[-1:].isspace() else " ") + self.keyword)
        return None

    def _place(self, reply: Reply, forced: str) -> str:
        self._placed = len(reply.text) + len(forced)
        return forced

    def may_end(self, reply: Reply) -> bool:
        return self._placed >= 0
