"""Replies of a fixed shape, kept by small automata while the model writes their contents: a CSV table (its header
forced, a fixed number of rows and fields, fields quoted where asked), numbered multiple-choice questions whose
texts grow longer, a comma-separated list of dates in one format and range.

The shape is the prompt's (a header it names, the rows it asks for); what fills it is the model's. Each automaton
reads a candidate token character by character, so a token that would break the shape is refused whatever it
holds, and the separators a shape needs next are forced rather than left to the model.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field, PrivateAttr

from bineval_dspy.enforce.rules import Reply, RuleKind, rule_kind
from bineval_dspy.enforce.runtime import END
from bineval_dspy.enforce.steering import Steering

_WHOLE_FIELDS = ("lead", "opening", "closing", "title", "structure", "choice", "json_value", "postscript", "end_phrase")
_BOUNDS = ("min_words", "max_words", "min_sentences", "max_sentences")


def alone(steering: Steering, name: str, letters: bool = True) -> str:
    """Why a rule that shapes the whole reply cannot share it with the rest of ``steering`` ('' when it can): only
    the masks every token meets (a case, banned strings, forbidden words) may join it, and a case only where the
    reply has ``letters`` (a reply of digits is neither upper- nor lower-case to the graders)."""
    if steering.case and not letters:
        return f"the reply ({name}) has no letters, so no case check can pass on it"
    taken = [f for f in (*_WHOLE_FIELDS, *_BOUNDS) if getattr(steering, f) not in (None, "", False, (), 0)]
    taken += [rule.kind for rule in steering.rules if rule.kind != name]
    if taken:
        return f"the whole reply has a fixed shape ({name}), which leaves no room for {taken[0].replace('_', ' ')}"
    return ""


_CACHE: dict[tuple[int, str], tuple[list[str], np.ndarray]] = {}


def pieces_where(pieces: list[str], key: str, test: Callable[[str], object]) -> np.ndarray:
    """``test`` over a vocabulary's pieces, computed once per vocabulary (by the list's identity) and ``key``."""
    cached = _CACHE.get((id(pieces), key))
    if cached is None or cached[0] is not pieces:
        cached = (pieces, np.fromiter((bool(test(p)) for p in pieces), dtype=bool, count=len(pieces)))
        _CACHE[(id(pieces), key)] = cached
    return cached[1]


def refuse(logits: np.ndarray, pieces: list[str], refused: np.ndarray) -> None:
    """Set ``refused`` tokens to -inf, leaving tokens without text (the end of text: ``may_end`` decides it)."""
    logits[refused & ~pieces_where(pieces, "empty", lambda p: not p)] = -np.inf


def _field_budget(reply: Reply, units_left: int, least: int, most: int) -> int:
    """Tokens one of ``units_left`` units may take, sharing the tokens left."""
    return min(most, max(least, (reply.limit - reply.tokens - 4) // max(1, units_left) - 1))


@rule_kind
class CsvTable(RuleKind):
    """A CSV table: ``header`` forced, then ``rows`` rows of ``fields`` fields split by ``delimiter``; fields in
    double quotes where ``quote`` asks (every one, or only the first row's second, which must then hold a special
    character, as a field that needs its quotes does), none empty, no quote inside."""

    name: ClassVar[str] = "csv"
    how: ClassVar = "automaton"

    header: str
    delimiter: str = Field(min_length=1, max_length=1)
    rows: int = Field(ge=1)
    fields: int = Field(ge=1)
    quote: Literal["none", "all", "special"] = "none"

    _row: int = PrivateAttr(1)
    _field: int = PrivateAttr(0)
    _state: str = PrivateAttr("open")  # open (nothing yet), text, quoted, closed (quote closed), done
    _filled: bool = PrivateAttr(False)  # the field has a non-space character
    _special: bool = PrivateAttr(False)  # the field has a character other than a letter, digit or space
    _tokens: int = PrivateAttr(0)

    def forced_texts(self) -> list[str]:
        return [self.header]

    def min_tokens(self) -> int:
        return self.rows * self.fields * 4 + 16

    def conflict(self, steering: Steering) -> str:
        return alone(steering, self.name)

    def _quoted(self, row: int, field: int) -> bool:
        return self.quote == "all" or (self.quote == "special" and row == 1 and field == 1)

    def _snapshot(self) -> tuple[int, int, str, bool, bool]:
        return self._row, self._field, self._state, self._filled, self._special

    def _restore(self, snapshot: tuple[int, int, str, bool, bool]) -> None:
        self._row, self._field, self._state, self._filled, self._special = snapshot

    def _feed(self, char: str) -> bool:
        """Advance by one character; False (state undefined) when the table cannot hold it there."""
        quoted = self._quoted(self._row, self._field)
        if self._state == "done" or char == "\r":
            return False
        if self._state == "quoted":
            if char == '"':
                if not self._filled or (self.quote == "special" and not self._special):
                    return False
                self._state = "closed"
            elif char == "\n":
                return False
            else:
                self._filled |= not char.isspace()
                self._special |= bool(re.match(r"[^\w\s]", char))
            return True
        if char not in (self.delimiter, "\n"):
            if self._state == "closed" or char == '"' and not quoted:
                return False
            if quoted:  # the opening quote (forced, or the token's own)
                if char != '"' or self._state != "open":
                    return False
                self._state = "quoted"
                return True
            self._state = "text"
            self._filled |= not char.isspace()
            return True
        if not self._filled or (quoted and self._state != "closed"):
            return False  # an empty field, or a quote left open
        last_field = self._field == self.fields - 1
        if char == self.delimiter:
            if last_field:
                return False
            self._field += 1
        else:
            if not last_field:
                return False
            if self._row == self.rows:
                self._state = "done"
                return True
            self._row, self._field = self._row + 1, 0
        self._state, self._filled, self._special = "open", False, False
        return True

    def _takes(self, text: str) -> bool:
        """Whether the table takes ``text`` from its current state (the state is left as it was)."""
        before = self._snapshot()
        try:
            return all(self._feed(char) for char in text)
        finally:
            self._restore(before)

    def prefix(self) -> str:
        return self.header + "\n" + ('"' if self._open_quote() else "")

    def _open_quote(self) -> bool:
        """Whether the field about to begin opens with a quote (then written now, and the state moved past it)."""
        if self._state == "open" and self._quoted(self._row, self._field):
            self._state = "quoted"
            return True
        return False

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        breaks = pieces_where(reply.pieces, "csv" + self.delimiter, lambda p: set(p) & {self.delimiter, "\n", '"', "\r"})
        left = (self.rows - self._row) * self.fields + self.fields - self._field
        if self._filled and self._tokens >= _field_budget(reply, left, 1, 8):
            if self._state == "quoted" and self.quote == "special" and not self._special:
                special = pieces_where(reply.pieces, "special", lambda p: re.search(r"[^\w\s\"]", p))
                refuse(logits, reply.pieces, ~special)
            else:
                refuse(logits, reply.pieces, ~breaks)

    def allows(self, reply: Reply, piece: str) -> bool:
        return self._takes(piece)

    def after(self, reply: Reply, piece: str) -> str | None:
        field = (self._row, self._field)
        for char in piece:
            self._feed(char)
        self._tokens = 0 if (self._row, self._field) != field else self._tokens + 1
        if self._state == "done":
            return END
        if self._state != "closed":
            return '"' if self._open_quote() else None
        if self._field == self.fields - 1 and self._row == self.rows:
            self._state = "done"
            return END
        forced = self.delimiter if self._field < self.fields - 1 else "\n"
        self._feed(forced)
        self._tokens = 0
        return forced + ('"' if self._open_quote() else "")

    def may_end(self, reply: Reply) -> bool:
        last = self._row == self.rows and self._field == self.fields - 1
        return self._state == "done" or (last and self._state == "text" and self._filled)


_OPTION_LIKE = re.compile(r"\s*[A-Ea-e][.|)]")  # a line the graders read as an option


@rule_kind
class QuestionList(RuleKind):
    """``count`` multiple-choice questions, each labelled "Question N: " with ``options`` options "A) ", "B) ", ...
    on lines of their own, nothing before the first; with ``growing``, each question's text longer than the one
    before. Labels are forced; the question and option texts are the model's, one line each."""

    name: ClassVar[str] = "questions"
    how: ClassVar = "automaton"

    count: int = Field(ge=1)
    options: int = Field(ge=1, le=26)
    growing: bool = True

    _question: int = PrivateAttr(1)
    _option: int = PrivateAttr(0)  # 0: the question's text
    _at: int = PrivateAttr(-1)  # where the current line's text begins (-1: just after the first label)
    _tokens: int = PrivateAttr(0)
    _longest: int = PrivateAttr(0)  # the last question text's length

    def min_tokens(self) -> int:
        return self.count * (14 + self.options * 6) + 16

    def conflict(self, steering: Steering) -> str:
        return alone(steering, self.name)

    def forced_texts(self) -> list[str]:
        return ["Question 1: ", "A) "]

    def prefix(self) -> str:
        self._at = len("Question 1: ")
        return "Question 1: "

    def _line_ok(self, line: str) -> bool:
        """Whether ``line`` may stand as the current question's or option's text (it may still grow)."""
        if "Question" in line:
            return False  # the graders cut questions at every "Question N"
        if self._option == 0:
            return not _OPTION_LIKE.match(line)
        return not re.match(r"\s*[^\w\s]", line)  # an option's text opens with a word character

    def _budget(self, reply: Reply) -> int:
        left = (self.count - self._question) * (self.options + 1) + self.options + 1 - self._option
        return _field_budget(reply, left, 2, 10) * (2 if self._option == 0 else 1)

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        line = reply.text[self._at :]
        long_enough = len(line.strip()) > (self._longest if self._option == 0 and self.growing else 0)
        if long_enough and self._tokens >= self._budget(reply):
            refuse(logits, reply.pieces, ~pieces_where(reply.pieces, "newline", lambda p: "\n" in p))

    def allows(self, reply: Reply, piece: str) -> bool:
        line, newline, rest = (reply.text[self._at :] + piece).partition("\n")
        if not self._line_ok(line):
            return False
        if not newline:
            return True
        needed = self._longest if self._option == 0 and self.growing else 0
        return not rest.strip() and len(line.strip()) > needed

    def after(self, reply: Reply, piece: str) -> str | None:
        self._tokens += 1
        if "\n" not in piece:
            return None
        if self._option == 0:
            self._longest = len(reply.text[self._at :].partition("\n")[0].strip())
        self._option += 1
        if self._option > self.options:
            if self._question == self.count:
                return END
            self._question, self._option = self._question + 1, 0
            forced = f"\nQuestion {self._question}: "
        else:
            forced = f"{chr(ord('A') + self._option - 1)}) "
        self._at, self._tokens = len(reply.text) + len(forced), 0
        return forced

    def may_end(self, reply: Reply) -> bool:
        last = self._question == self.count and self._option == self.options
        return last and bool(reply.text[self._at :].strip())


_DATE_SHAPE = "dddd-dd-dd"
_DAYS = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}


@rule_kind
class DateList(RuleKind):
    """Only dates, YYYY-MM-DD, from ``first_year`` to ``last_year``, split by commas: each digit is refused where
    no valid date could follow, the dashes are forced, and the reply ends after a whole date."""

    name: ClassVar[str] = "date-list"
    how: ClassVar = "automaton"

    first_year: int
    last_year: int

    _date: str = PrivateAttr("")  # the current date so far
    _phase: str = PrivateAttr("date")  # date (being written), after (one is whole: a comma next), sep (after it)
    _end: int = PrivateAttr(0)  # where the last whole date ends in the text

    def min_tokens(self) -> int:
        return 48

    def conflict(self, steering: Steering) -> str:
        return alone(steering, self.name, letters=False)

    def _valid(self, date: str) -> bool:
        """Whether ``date`` begins some valid date in range."""
        if any(shape == "-" and char != "-" or shape == "d" and not char.isdigit() for shape, char in zip(_DATE_SHAPE, date)):
            return False
        year, month, day = date[:4], date[5:7], date[8:10]
        if not any(str(y).startswith(year) for y in range(self.first_year, self.last_year + 1)):
            return False
        if not any(f"{m:02d}".startswith(month) for m in range(1, 13)):
            return False
        return len(month) < 2 or any(f"{d:02d}".startswith(day) for d in range(1, _DAYS[int(month)] + 1))

    def _feed(self, date: str, phase: str, char: str) -> tuple[str, str] | None:
        if phase == "after":
            return ("", "sep") if char == "," else None
        if phase == "sep" and char == " ":
            return date, phase
        if not self._valid(date + char):
            return None
        date += char
        return (date, "after") if len(date) == len(_DATE_SHAPE) else (date, "date")

    def _fed(self, piece: str) -> tuple[str, str] | None:
        state: tuple[str, str] | None = (self._date, self._phase)
        for char in piece:
            state = self._feed(*state, char) if state else None
        return state

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        refuse(logits, reply.pieces, ~pieces_where(reply.pieces, "datey", lambda p: bool(p) and set(p) <= set("0123456789, ")))

    def allows(self, reply: Reply, piece: str) -> bool:
        return self._fed(piece) is not None

    def after(self, reply: Reply, piece: str) -> str | None:
        state = self._fed(piece)
        if state is None:
            return None
        self._date, self._phase = state
        if self._phase == "after":
            self._end = len(reply.text)
            return END if reply.limit - reply.tokens < 16 else None
        if len(self._date) in (4, 7):
            self._date += "-"
            return "-"
        return None

    def may_end(self, reply: Reply) -> bool:
        return self._phase == "after"

    def finish(self, text: str) -> str:
        """The list cut back to its last whole date when the tokens ran out inside one."""
        return text if self._phase == "after" or not self._end else text[: self._end]
