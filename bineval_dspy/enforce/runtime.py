"""A ``Steering`` executed token by token: the decoder asks it which tokens may come next, hands it each token
it keeps, and writes the text it forces.

Three mechanisms, each as cheap as it can be:

- **masks** over the vocabulary (a capital, a comma, a newline followed by text inside a list) are computed once per
  tokenizer and constraint set (``vocabulary.Vocabulary.banned``) and applied to the logits in one array operation;
- **checks on the chosen token** that need the text so far (a forbidden word completed, a title's newline, a phrase
  the reply is fixed to) look only at the best token, and at the next best when it is refused;
- **counters** (words, sentences, bullets, paragraphs, sections) decide where a break or the end is forced, and
  refuse the end of text before a lower bound is met. Forced text is written, not decoded: the engine evaluates
  its tokens in one batch.

The text it keeps is the reply as the user will read it (forced text included), so the counts are made with the
same functions the verifiers count with (``core.text``).
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Callable
from typing import Final

import numpy as np

from bineval_dspy.core.text import split_sentences_punkt, word_runs
from bineval_dspy.enforce.steering import Steering
from bineval_dspy.enforce.vocabulary import UNITS, Vocabulary

END: Final = "\x00end"  # what ``accepted`` returns when the reply must stop here
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s*$")
_WORD = re.compile(r"\w+")  # ``core.text.word_runs``'s words


def _pad(text: str, newlines: int) -> str:
    """The newlines to add so ``text`` ends with ``newlines`` of them (trailing spaces count as nothing)."""
    trailing = len(text) - len(text.rstrip("\n \t"))
    have = text[len(text) - trailing :].count("\n") if trailing else 0
    return "\n" * max(0, newlines - have)


class Steerer:
    """One reply's decoding under ``steering``: ``start``, then per step ``masked`` + ``allows`` to choose and
    ``accepted`` (or ``ended`` for the end of text), and ``finish`` for the closing text."""

    def __init__(self, steering: Steering, vocabulary: Vocabulary, max_tokens: int) -> None:
        self.s = steering
        self.vocab = vocabulary
        self.limit = max_tokens
        self.text = ""
        self.tokens = 0  # decoded tokens so far
        self.phase = "body"  # body, title (a <<title>> is open), postscript, done
        self.title_at = 0
        self.choice_at = 0
        self.units = 0  # structure units begun
        self.unit_at = 0  # where the current unit's own text begins
        self.unit_tokens = 0
        self.unit_budget = 0
        self._mask = vocabulary.banned(steering)
        self._bias = vocabulary.bias(self._mask)
        self._utf8 = codecs.getincrementaldecoder("utf-8")("ignore")  # the kept tokens' bytes, as the reply's text
        self._counted: tuple[str, int] = ("", 0)  # a start of the text and its word count (``_words``)
        self.rules = [rule.build() for rule in steering.rules]  # this reply's executors (they may keep state)
        self._words_closing = len(word_runs(self._closing_words()))

    @property
    def pieces(self) -> list[str]:
        return self.vocab.pieces

    @property
    def new_word(self) -> np.ndarray:
        return self.vocab.new_word

    # -- the start ---------------------------------------------------------------------------------
    def start(self) -> str:
        """The text the reply opens with, written before the first decoded token."""
        s = self.s
        line_start = s.structure is not None and s.structure.kind == "bullets" and s.opening and not s.title
        self.text = s.lead + s.opening + ("\n" if line_start else "")  # a bullet's star must open its line
        self.choice_at = len(self.text)
        if s.choice:
            self.text += os.path.commonprefix(list(s.choice))  # the phrases' shared start is written, not chosen
        if s.title:
            self.text += "<<"
            self.phase, self.title_at = "title", len(self.text)
        else:
            self.text += self._open_structure()
        for rule in self.rules:
            self.text += rule.prefix()
        return self.text

    def _open_structure(self, before: str = "") -> str:
        """The structure's opening, forced after ``before`` (text forced ahead of it, not yet in ``text``)."""
        structure = self.s.structure
        if structure is None:
            return ""
        self.units = 1
        self._budget()
        opening = {"bullets": "* ", "sections": f"{structure.marker} 1\n"}.get(structure.kind, "")
        if structure.kind == "paragraphs" and structure.nth == 1:
            opening = structure.first_word
        self.unit_at, self.unit_tokens = len(self.text) + len(before) + len(opening), 0
        return opening

    # -- choosing ----------------------------------------------------------------------------------
    def masked(self, logits: np.ndarray) -> np.ndarray:
        """``logits`` with every token masked that may not come next (a copy)."""
        out = (logits + self._bias).astype(np.float32, copy=False)
        if self.s.choice:  # the few tokens that continue one of the phrases, looked up by their pieces
            out[~self._continuing()] = -np.inf
        if self.s.min_words and self.phase != "title":  # short of the floor with few tokens left: only new words
            deficit = self.s.min_words - self._words() - self._words_closing
            if deficit > 0 and self.limit - self.tokens <= deficit + 4:
                out[~self.vocab.new_word] = -np.inf
        if self.s.min_sentences and self.phase != "title" and self.limit - self.tokens <= 3 * self.s.min_sentences + 4:
            deficit = self.s.min_sentences - len(split_sentences_punkt(self.text + " " + self._closing_words()))
            if deficit > 0 and self.limit - self.tokens <= 3 * deficit + 4:  # few tokens left: a word, then its end
                ended = not self.text.strip() or bool(_SENTENCE_END.search(self.text)) or self.text[-1].isspace()
                allowed = self.vocab.new_word if ended else self.vocab.end_mark
                if ended and self.text[-1:].strip():  # or a line break first, where a rule wants words on lines
                    allowed = allowed | self.vocab.blank
                out[~allowed] = -np.inf
        for rule in self.rules:
            rule.mask(out, self)
        if not self.may_end():
            out[self.vocab.end_ids] = -np.inf
        return out

    def _continuing(self) -> np.ndarray:
        written = self.text[self.choice_at :]
        tails = [option[len(written) :] for option in self.s.choice if option.startswith(written)]
        keep = np.zeros(len(self.vocab.pieces), dtype=bool)
        keep[self.vocab.continuing(tails)] = True
        return keep

    def _words(self) -> int:
        """``len(word_runs(self.text))`` without recounting the whole text each step: the text before its last word's
        start is kept with its count, and reused while the text still begins with it."""
        counted, count = self._counted
        text = self.text
        if not text.startswith(counted):
            counted, count = "", 0
        runs = [m.start() for m in _WORD.finditer(text, len(counted))]
        if runs:  # the last word may still grow: counted again next time
            self._counted = (text[: runs[-1]], count + len(runs) - 1)
        else:
            self._counted = (text, count)
        return count + len(runs)

    def choose(self, logits: np.ndarray, pick: Callable[[np.ndarray], int], raw: np.ndarray | None = None) -> int:
        """The token ``pick`` (greedy or a sampler) takes from masked ``logits``, asked again without each token
        ``allows`` refuses; after 64 refusals the best allowed token by logit. When none is allowed the reply ends
        there, unless it has no text yet: then the best token of the ``raw`` logits that writes something, so no
        steered reply comes back empty (the constraints it breaks are checked after decoding, and say so)."""
        for _ in range(64):
            token = pick(logits)
            if not np.isfinite(logits[token]):
                return self._nothing_left(raw)
            if self.allows(token):
                return token
            logits[token] = -np.inf
        ranked = np.argsort(-logits, kind="stable")
        best = next((int(t) for t in ranked if np.isfinite(logits[t]) and self.allows(int(t))), None)
        return self._nothing_left(raw) if best is None else best

    def _nothing_left(self, raw: np.ndarray | None) -> int:
        """No token may come next: the end of text, or while the reply is still empty the model's own best token."""
        if raw is None or self.text.strip():
            return int(self.vocab.end_ids[0])
        unmasked = np.where(self.vocab.silent, -np.inf, raw)
        unmasked[self.vocab.end_ids] = -np.inf
        return int(np.argmax(unmasked)) if np.isfinite(unmasked).any() else int(self.vocab.end_ids[0])

    def may_end(self) -> bool:
        """Whether the end of text may come now: lower bounds met, a fixed phrase complete, a unit not empty."""
        s = self.s
        if s.choice:
            return False  # the phrase ends the reply itself (``accepted``)
        if self.phase == "title" and not self.text[self.title_at :].strip():
            return False
        if not any(c.isalnum() for c in self.text) or (s.case and not any(c.islower() or c.isupper() for c in self.text)):
            return False  # an empty reply passes no check, and a case check needs cased letters (not CJK alone)
        if not self._floors_met():
            return False
        if s.structure is not None and s.structure.kind == "two_responses" and self.units == 2 and not self._unit_has_text(1):
            return False
        if s.structure is not None and s.structure.kind in UNITS and not self._unit_has_text(1):
            return False
        return all(rule.may_end(self) for rule in self.rules)

    def allows(self, token: int) -> bool:
        """Whether ``token`` (not masked) may come next given the text so far: the fields' rules, then every
        rule's."""
        if token in self.vocab.end_ids:
            return True
        piece = self.vocab.pieces[token]
        return self._fields_allow(piece) and all(rule.allows(self, piece) for rule in self.rules)

    def _fields_allow(self, piece: str) -> bool:
        s = self.s
        if s.forbidden_words:
            tail = (self.text + piece)[-(len(piece) + max(len(w) for w in s.forbidden_words) + 2) :]
            if any(re.search(rf"\b{re.escape(w)}\b", tail, re.IGNORECASE) for w in s.forbidden_words):
                return False
        if s.choice:
            tail = (self.text + piece)[self.choice_at :]
            return any(option.startswith(tail) for option in s.choice)
        if self.phase == "title":
            named = self.text[self.title_at :].strip()
            return "\n" not in piece and "<" not in piece and (bool(named) or not piece.lstrip().startswith(">"))
        structure = s.structure
        if structure is not None and structure.first_word and len(self.text) == self.unit_at and self.text.endswith(structure.first_word):
            return piece[:1].isspace() or piece[:1] in ".,?!'\""  # the forced word ends there, as the check cuts words
        if "\n" in piece and s.structure is not None and s.structure.kind in UNITS and self.phase == "body":
            last = self.units >= s.structure.count and s.structure.kind != "sections"
            return self._unit_has_text(2) and (not last or self._floors_met())
        return True

    def _floors_met(self) -> bool:
        s = self.s
        if s.min_words and self._words() + self._words_closing < s.min_words:
            return False
        if not s.min_sentences:
            return True
        text = self.text + " " + self._closing_words()
        if sum(map(text.count, ".?!")) + 1 < s.min_sentences:  # Punkt breaks only after . ? !: short of the floor
            return False  # without the whole reply split every step
        return len(split_sentences_punkt(text)) >= s.min_sentences

    def _unit_has_text(self, words: int) -> bool:
        return len(word_runs(self.text[self.unit_at :])) >= words

    # -- after a token -----------------------------------------------------------------------------
    def accepted(self, token: int) -> str | None:
        """Record a kept token; the text to force after it (already part of ``text``), ``END``, or None."""
        piece = self._utf8.decode(self.vocab.raw[token])  # '' while a character's bytes are incomplete
        forced = self._after(piece)
        if forced == END:
            return END
        if forced:
            self.text += forced
        for rule in self.rules:
            more = rule.after(self, piece)
            if more == END:
                return END
            if more:
                self.text += more
                forced = (forced or "") + more
        return forced or None

    def _after(self, piece: str) -> str | None:
        self.text += piece
        self.tokens += 1
        self.unit_tokens += 1
        s = self.s
        if s.choice:
            return END if self.text[self.choice_at :] in s.choice else None
        if self.phase == "title":
            return self._title_step()
        if self._over_ceiling(piece):
            return END
        if self.phase == "postscript":
            done = "\n" in piece.strip(" ") or self.unit_tokens >= 40
            return END if done and self._floors_met() else None
        left = self.limit - self.tokens
        if s.postscript and (left <= 12 or (left <= 30 and _SENTENCE_END.search(self.text))):
            return self._begin_postscript()
        structure = s.structure
        if structure is None:
            return None
        if structure.kind == "two_responses":
            half = self.tokens >= self.limit // 2 and _SENTENCE_END.search(self.text)
            return self._next_unit() if self.units < 2 and (half or self.tokens >= self.limit * 0.7) else None
        if structure.kind not in UNITS or (structure.kind == "sections" and self.units >= structure.count):
            return None
        sentence_done = bool(_SENTENCE_END.search(self.text))
        due = "\n" in piece or (self.unit_tokens >= 0.8 * self.unit_budget and sentence_done) or self.unit_tokens >= 1.2 * self.unit_budget
        if not due:
            return None
        if self.units < structure.count:
            return self._next_unit()
        return END if self._floors_met() and self.may_end() else None  # the last unit grows until the floors are met

    def _title_step(self) -> str | None:
        title = self.text[self.title_at :]
        if ">>" in title:
            self.phase = "body"
            forced = _pad(self.text, self._title_break())
            return forced + self._open_structure(forced)
        if self.unit_tokens >= 16:
            self.phase = "body"
            forced = ">>" + _pad(">>", self._title_break())
            return forced + self._open_structure(forced)
        return None

    def _title_break(self) -> int:
        """Newlines after the title: one where blank lines count paragraphs, so the title opens the first one."""
        return 1 if self.s.structure is not None and self.s.structure.kind == "paragraphs" else 2

    def _over_ceiling(self, piece: str) -> bool:
        """Whether the reply must stop to stay under a ceiling (the closing text's words and sentences counted)."""
        s = self.s
        if s.max_words is not None:
            words = self._words() + self._words_closing
            early = words >= 0.8 * s.max_words and _SENTENCE_END.search(self.text) and self._floors_met()  # a range's floor first
            if words >= s.max_words - 1 or early:
                return True
        if s.max_sentences is not None and re.search(r"[.!?]", piece) and _SENTENCE_END.search(self.text):
            closing = self._closing_words()
            sentences = len(split_sentences_punkt(self.text)) + (len(split_sentences_punkt(closing)) if closing.strip() else 0)
            if sentences >= s.max_sentences - 1:
                return True
        return False

    def _next_unit(self) -> str:
        """The forced break that begins the next unit of the structure."""
        structure = self.s.structure
        assert structure is not None
        self.units += 1
        k = self.units
        if structure.kind == "bullets":
            forced = _pad(self.text, 1) + "* "
        elif structure.kind == "dividers":
            forced = _pad(self.text, 2) + "***\n\n"
        elif structure.kind == "sections":
            forced = _pad(self.text, 2) + f"{structure.marker} {k}\n"
        elif structure.kind == "paragraphs":
            forced = _pad(self.text, 2) + (structure.first_word if k == structure.nth else "")
        else:  # two_responses
            forced = _pad(self.text, 2) + "******\n\n"
        self.unit_at, self.unit_tokens = len(self.text) + len(forced), 0
        self._budget()
        return forced

    def _budget(self) -> None:
        """The tokens the current unit may take: what is left, shared by the units still to come."""
        structure = self.s.structure
        assert structure is not None
        self.unit_budget = max(8, (self.limit - self.tokens) // max(1, structure.count - self.units + 1))

    def _begin_postscript(self) -> str:
        self.phase, self.unit_tokens = "postscript", 0
        return _pad(self.text, self._postscript_break()) + self.s.postscript + " "

    def _postscript_break(self) -> int:
        """Newlines before a postscript: one where blank lines count paragraphs, so it stays in the last one."""
        return 1 if self.s.structure is not None and self.s.structure.kind == "paragraphs" else 2

    # -- the end -----------------------------------------------------------------------------------
    def ended(self) -> str | None:
        """The model chose the end of text (``may_end`` allowed it): the text to force and continue from (already
        part of ``text``), or None to finish."""
        forced = self._at_end()
        if not forced:
            forced = next((more for rule in self.rules if (more := rule.at_end(self))), None)
        if forced:
            self.text += forced
        return forced or None

    def _at_end(self) -> str | None:
        s = self.s
        if self.phase == "title":
            self.phase = "body"
            forced = ">>" + _pad(">>", self._title_break())
            return forced + self._open_structure(forced)
        if self.phase == "body" and s.structure is not None:
            if s.structure.kind == "two_responses" and self.units < 2:
                return self._next_unit()
            if s.structure.kind in UNITS and self.units < s.structure.count:
                return self._next_unit()
        if self.phase == "body" and s.postscript:
            return self._begin_postscript()
        return None

    def _closing_words(self) -> str:
        """What ``finish`` will add in words (an end phrase, a postscript not yet begun)."""
        s = self.s
        ps = s.postscript if s.postscript and self.phase not in ("postscript", "done") else ""
        return " ".join(t for t in (ps, s.end_phrase) if t)

    def finish(self) -> str:
        """The reply with its closing text written after the last decoded token (trailing space trimmed where a
        closing follows it)."""
        s = self.s
        text = self.text
        if self.phase == "title":
            text += ">>"
        written = text[self.choice_at :]
        if s.choice and written not in s.choice:  # no token continued the phrase: write the rest of it
            text += next((option[len(written) :] for option in s.choice if option.startswith(written)), "")
        if s.json_value:
            text += json_closing(text)
        for rule in self.rules:
            text = rule.finish(text)
        if s.postscript and self.phase not in ("postscript", "done"):
            text = text.rstrip() + "\n" * self._postscript_break() + s.postscript
        if s.end_phrase and not text.rstrip().endswith(s.end_phrase):
            text = text.rstrip() + (" " if _SENTENCE_END.search(text) or not text.strip() else ". ") + s.end_phrase
        if s.closing:
            text = text.rstrip() + s.closing
        self.phase, self.text = "done", text
        return text


def json_closing(prefix: str) -> str:
    """What completes ``prefix``, a valid start of one JSON value cut short (the grammar keeps it valid), into a
    whole value: the open string closed, a key given ``null``, a dangling comma dropped, open containers closed."""
    stack: list[str] = []  # "{" or "[" per open container
    in_string = escaped = False
    key = False  # the open string is an object's key
    expects_key = False  # inside an object, after "{" or ","
    for char in prefix:
        if in_string:
            escaped = not escaped and char == "\\"
            if char == '"' and not escaped:
                in_string = False
            continue
        if char == '"':
            in_string, key, expects_key = True, expects_key, False
        elif char in "{[":
            stack.append(char)
            expects_key = char == "{"
        elif char in "}]":
            stack.pop()
        elif char == ",":
            expects_key = bool(stack) and stack[-1] == "{"
    out = ""
    if in_string:
        out += "\\" if escaped else ""
        out += '"' + (": null" if key else "")
    tail = (prefix + out).rstrip()
    if tail.endswith(","):
        out = out.rstrip()  # the comma is in the prefix: a value completes it instead
        out += ' "": null' if stack and stack[-1] == "{" else " null"
    elif tail.endswith(":"):
        out += " null"
    elif not stack and not tail:
        return "{}"
    elif re.search(r"[-.eE+]$", tail):
        out += "0"
    elif literal := re.search(r"\b(?:t|tr|tru|f|fa|fal|fals|n|nu|nul)$", tail):
        out += next(w for w in ("true", "false", "null") if w.startswith(literal.group()))[len(literal.group()) :]
    return out + "".join("}" if c == "{" else "]" for c in reversed(stack))
