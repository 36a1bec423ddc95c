"""A ``Steering`` as a GBNF grammar: the form in which a llama.cpp server (``llama-server``, llama-cpp-python's
``llama_cpp.server``) takes constraints, in its ``grammar`` request field.

A grammar can only allow or refuse the next character; it cannot write text after the model stops, nor look at
what was said. So:

- forced text (a lead, an opening word, a title's brackets, an end phrase, a postscript marker, a closing quote,
  the structure's markers) is a literal the model must spell out;
- masks (a case, a banned character) are character classes; free text is ASCII, so a class is exact;
- counts are bounded repetitions of words (the verifiers' ``\\w+`` runs, split by runs of other characters), and
  free text always has a ceiling derived from the reply's token limit: text a literal must follow cannot run on
  past the limit, or the literal would never come;
- what a grammar cannot express (forbidden words, sentence counts, a banned string of several characters, word
  counts inside JSON) is named by ``unexpressed``, and the LM that takes the grammar reports those constraints as
  not enforced (``verifiers.enforcement.compile_plan``), never as enforced.

The layout is the embedded decoder's (``enforce.runtime``): lead, opening, title, structure, postscript, end
phrase, closing, with the same separators, so both engines' replies pass the same checks.
"""

from __future__ import annotations

import functools
import math
import string
import sys
from collections.abc import Iterable

from bineval_dspy.core.source import source_digest
from bineval_dspy.core.text import word_runs
from bineval_dspy.enforce.steering import Steering, Structure

WORD_CHARS = frozenset(string.ascii_letters + string.digits + "_")  # ``\w`` on ASCII: the verifiers' word runs
TEXT_CHARS = frozenset(string.printable) - frozenset("\t\r\x0b\x0c")  # free text: printable ASCII and newlines
LONGEST_WORD = 24  # characters in one word, and ...
LONGEST_GAP = 6  # ... between two words: bounded, so a word ceiling bounds the text
TITLE_WORDS, POSTSCRIPT_WORDS = 8, 12  # the most a title and a postscript's text may take of a shared ceiling
TOKENS_PER_WORD = 2  # a word and its gap, in tokens, for the ceiling a token limit implies (capitals: one more)
REPETITIONS = 2000  # the most repetitions llama.cpp's grammar parser takes (MAX_REPETITION_THRESHOLD): it refuses more
UNEXPRESSED_ALWAYS = ("forbidden_words", "min_sentences", "max_sentences")  # no grammar here counts or avoids these


@functools.cache
def code_digest() -> str:
    """A digest of this file: a server's steered request carries it, so a reply cached under another grammar
    compiler is never replayed as this one's."""
    return source_digest(sys.modules[__name__])


def unexpressed(steering: Steering) -> tuple[str, ...]:
    """The fields of ``steering`` (set to something) that a grammar cannot make true: those constraints must be
    reported as not enforced on an LM that takes only a grammar."""
    missing = [name for name in UNEXPRESSED_ALWAYS if getattr(steering, name) not in (0, None, ())]
    if steering.rules:  # executed token by token by the embedded decoder only
        missing.append("rules")
    if any(len(b) > 1 for b in steering.banned):
        missing.append("banned")
    structure = steering.structure
    if steering.title and structure is not None and structure.kind == "paragraphs" and structure.nth == 1:
        missing.append("title")  # it would open the paragraph whose first word is given, or be one too many
    counted = [name for name in ("min_words", "max_words") if getattr(steering, name) not in (0, None)]
    if counted and (steering.json_value or (steering.choice and not _choices(steering)) or not _fits(steering)):
        missing += counted
    elif steering.min_words and _unit_floor(steering) > REPETITIONS:
        missing.append("min_words")  # a floor no repetition the server parses can reach
    return tuple(missing)


def _unit_floor(steering: Steering) -> int:
    """The words each unit of the body must hold for the floor (short segments give one word each)."""
    units, short = _segments(steering)
    return max(1, math.ceil(max(0, steering.min_words - _literal_words(steering) - short) / units))


def to_gbnf(steering: Steering, max_tokens: int) -> str:
    """The grammar whose every complete string satisfies the expressed parts of ``steering``, its free text short
    enough for ``max_tokens`` to reach the end (a ceiling the verifiers do not ask for, so that forced text after
    it is reached)."""
    return _Builder(steering, max_tokens).grammar()


def _literals(steering: Steering) -> list[str]:
    """The text the layout writes by force around the model's free text (see ``_Builder``)."""
    s, structure = steering, steering.structure
    texts = [s.lead, s.opening, s.closing, s.end_phrase]
    if s.title:
        texts += ["<<", ">>"]
    if s.postscript:
        texts.append(s.postscript + " ")
    if structure is not None:
        texts += [_unit_break(structure, k) for k in range(1, structure.count + 1)]
        texts.append(structure.first_word)
    return [t for t in texts if t]


def _literal_words(steering: Steering) -> int:
    return sum(len(word_runs(text)) for text in _literals(steering))


def _segments(steering: Steering) -> tuple[int, int]:
    """(units of the body, short free segments beside it: a title, a postscript's text)."""
    units = steering.structure.count if steering.structure is not None else 1
    return units, int(steering.title) + int(bool(steering.postscript))


def _fits(steering: Steering) -> bool:
    """Whether a word ceiling leaves every free segment its one word."""
    if steering.max_words is None or steering.choice:
        return True
    units, short = _segments(steering)
    return steering.max_words - 1 - _literal_words(steering) >= units + short


def _choices(steering: Steering) -> tuple[str, ...]:
    """The phrases the reply may be fixed to that meet its word bounds (forced text around them counted)."""
    around = len(word_runs(steering.lead + steering.opening + steering.closing))
    top = steering.max_words if steering.max_words is not None else math.inf
    return tuple(c for c in steering.choice if steering.min_words <= around + len(word_runs(c)) < top)


def _unit_break(structure: Structure, k: int) -> str:
    """The forced text that opens unit ``k`` (1-based) of a structure, as the embedded decoder writes it."""
    first = k == 1
    if structure.kind == "bullets":
        return "* " if first else "\n* "
    if structure.kind == "sections":
        return f"{'' if first else chr(10) * 2}{structure.marker} {k}\n"
    if structure.kind == "dividers":
        return "" if first else "\n\n***\n\n"
    if structure.kind == "two_responses":
        return "" if first else "\n\n******\n\n"
    return "" if first else "\n\n"  # paragraphs


def _unit_refuses(structure: Structure) -> str:
    """Characters a unit's own text may not hold: they would make or break a unit."""
    return {"bullets": "\n", "paragraphs": "\n", "dividers": "*", "two_responses": "*"}.get(structure.kind, "")


def literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    return '"' + "".join(_escape(c, quoted=True) for c in text) + '"'


def char_class(chars: Iterable[str]) -> str:
    """``chars`` as a GBNF character class, runs of consecutive codes as ranges."""
    codes = sorted({ord(c) for c in chars})
    if not codes:
        raise ValueError("an empty character class matches nothing")
    parts, start = [], 0
    for i in range(1, len(codes) + 1):
        if i == len(codes) or codes[i] != codes[i - 1] + 1:
            low, high = codes[start], codes[i - 1]
            parts.append(_escape(chr(low)) + ("" if low == high else "-" + _escape(chr(high))))
            start = i
    return "[" + "".join(parts) + "]"


def _escape(char: str, quoted: bool = False) -> str:
    code = ord(char)
    if char.isascii() and (char.isalnum() or (quoted and char in " .,;:!?'()<>*#/=+-_@&%$~`|^{}[]")):
        return char
    if char == "\n":
        return "\\n"
    return f"\\x{code:02X}" if code < 0x100 else f"\\u{code:04X}" if code < 0x10000 else f"\\U{code:08X}"


class _Builder:
    """One grammar's rules, named as they are made; ``root`` is the layout of the whole reply."""

    def __init__(self, steering: Steering, max_tokens: int) -> None:
        self.s = steering
        self.max_tokens = max_tokens
        self.rules: dict[str, str] = {}
        self.missing = set(unexpressed(steering))
        banned = {b for b in steering.banned if len(b) == 1}
        letters = {"lower": string.ascii_uppercase, "upper": string.ascii_lowercase}.get(steering.case or "", "")
        self.allowed = TEXT_CHARS - banned - set(letters)  # what free text may hold anywhere

    def grammar(self) -> str:
        s = self.s
        parts = [literal(t) for t in (s.lead, s.opening) if t]
        if s.structure is not None and s.structure.kind == "bullets" and s.opening and not s.title:
            parts.append(literal("\n"))  # a bullet's star must open its line
        if s.choice:
            options = _choices(s) or s.choice
            parts.append("(" + " | ".join(literal(c) for c in options) + ")")
        elif s.json_value:
            parts.append(self._json())
        else:
            parts += self._text()
        if s.closing:
            parts.append(literal(s.closing))
        self.rules = {"root": " ".join(parts), **self.rules}
        return "".join(f"{name} ::= {body}\n" for name, body in self.rules.items())

    # -- free text ---------------------------------------------------------------------------------
    def _text(self) -> list[str]:
        """Title, body, postscript and end phrase, each free segment with its share of the word bounds."""
        s = self.s
        units, short = _segments(s)
        words = "min_words" not in self.missing and "max_words" not in self.missing
        literal_words = _literal_words(s)
        ceiling = s.max_words - 1 - literal_words if words and s.max_words is not None else self._budget(units + short)
        low = _unit_floor(s) if words else 1  # each unit's share of the floor (short segments: one word each)
        title_top = postscript_top = 1
        if ceiling - units * low >= TITLE_WORDS * s.title + POSTSCRIPT_WORDS * bool(s.postscript):
            title_top, postscript_top = TITLE_WORDS, POSTSCRIPT_WORDS  # room for more than a word each
        spent = (title_top if s.title else 0) + (postscript_top if s.postscript else 0)
        high = max(low, min(REPETITIONS, (ceiling - spent) // units))  # above the ceiling only where it is the token budget
        parts = []
        if s.title:
            parts += [literal("<<"), self._segment(self.allowed - set("\n<>"), 1, title_top), literal(">>")]
            paragraphs = s.structure is not None and s.structure.kind == "paragraphs"
            parts.append(literal("\n" if paragraphs else "\n\n"))  # paragraphs: the title stays in the first
        parts += self._body(low, high)
        if s.postscript:
            brk = "\n" if s.structure is not None and s.structure.kind == "paragraphs" else "\n\n"
            parts += [literal(brk + s.postscript + " "), self._segment(self.allowed - {"\n"}, 1, postscript_top)]
        if s.end_phrase:
            parts.append(literal(" " + s.end_phrase))
        return parts

    def _budget(self, segments: int) -> int:
        """The words a reply's free text may take so that its forced text still fits ``max_tokens``."""
        forced = sum(len(t) for t in _literals(self.s)) // 3 + 4
        per_word = TOKENS_PER_WORD + (self.s.case == "upper")
        return max(segments, (self.max_tokens - forced) // per_word)

    def _body(self, low: int, high: int) -> list[str]:
        structure = self.s.structure
        if structure is None:
            return [self._segment(self.allowed, low, high, lettered=bool(self.s.case))]
        chars = self.allowed - set(_unit_refuses(structure))
        parts = []
        for k in range(1, structure.count + 1):
            opening = _unit_break(structure, k)
            if structure.kind == "paragraphs" and k == structure.nth:
                opening += structure.first_word + " "  # the word ends where the check cuts words
            if opening:
                parts.append(literal(opening))
            parts.append(self._segment(chars, low, high, lettered=bool(self.s.case) and k == 1))
        return parts

    def _segment(self, chars: frozenset[str] | set[str], low: int, high: int, lettered: bool = False) -> str:
        """A rule for free text of ``low`` to ``high`` words over ``chars``: words of word characters, gaps of
        the others, so its word count is what ``core.text.word_runs`` counts. ``lettered``: its first word starts
        with a letter (a case check fails a reply without letters)."""
        word, gap = self._class(chars & WORD_CHARS, "word"), self._class(chars - WORD_CHARS, "gap")
        words = self._rule(f"{word}{{1,{LONGEST_WORD}}}", "run")
        first = f"{self._class(chars & set(string.ascii_letters), 'letter')} {word}{{0,{LONGEST_WORD - 1}}}" if lettered else words
        gaps = self._rule(f"{gap}{{1,{LONGEST_GAP}}}", "run")
        more = f" {self._rule(f'{gaps} {words}', 'run')}{_times(low - 1, high - 1)}" if high > 1 else ""
        # repetitions of one named rule each: llama.cpp caps a repetition's count times its symbols
        name = f"text-{len(self.rules)}"
        self.rules[name] = f"{gaps}? {first}{more} {gaps}?"
        return name

    def _class(self, chars: Iterable[str], kind: str) -> str:
        """A named rule for one character class."""
        return self._rule(char_class(chars), kind)

    def _rule(self, body: str, kind: str) -> str:
        """The name of a rule with ``body``, made once and reused by every segment that needs it."""
        for name, existing in self.rules.items():
            if existing == body:
                return name
        name = f"{kind}-{len(self.rules)}"
        self.rules[name] = body
        return name

    # -- JSON --------------------------------------------------------------------------------------
    def _json(self) -> str:
        """One JSON value whose strings, numbers and literals hold only allowed characters (under a banned comma
        a container holds one element at most; in capitals there is no true, false or null)."""
        allowed = self.allowed
        ok = lambda text: set(text) <= allowed | {'"', "\\"}  # noqa: E731
        hexes = "".join(c for c in string.hexdigits if c in allowed)
        escapes = [c for c in '"\\/bfnrt' if ok(c)]
        escape = f'"\\\\" {char_class(escapes)}' if escapes else ""
        if ok("u") and len(set(hexes.lower())) == 16:
            escape += f' | "\\\\u" {char_class(hexes)}{{4}}'
        plain = char_class(allowed - {'"', "\\", "\n"})
        self.rules["json-string"] = f'"\\"" ({plain}{" | " + escape if escape else ""}){{0,64}} "\\"" json-ws'
        exponent = "".join(c for c in "eE" if c in allowed)
        number = '"-"? ([0-9] | [1-9] [0-9]{1,15}) ("." [0-9]{1,16})?'
        if exponent:
            number += f" ({char_class(exponent)} {char_class('+-')}? [0-9]{{1,3}})?"
        self.rules["json-number"] = number + " json-ws"
        comma = '("," json-ws {item}){{0,15}}' if ok(",") else ""
        member = 'json-string ":" json-ws json-value'
        self.rules["json-object"] = f'"{{" json-ws ({member} {comma.format(item=member)})? "}}" json-ws'
        self.rules["json-array"] = f'"[" json-ws (json-value {comma.format(item="json-value")})? "]" json-ws'
        words = [literal(w) + " json-ws" for w in ("true", "false", "null") if ok(w)]
        self.rules["json-value"] = " | ".join(["json-object", "json-array", "json-string", "json-number", *words])
        self.rules["json-ws"] = '("\\n" " "{0,16})? " "?'
        if not self.s.case:
            return "json-ws json-value"
        # a case check fails a reply without letters: an object whose first key starts with one
        key = f'"\\"" {char_class(allowed & set(string.ascii_letters))} {plain}{{0,63}} "\\"" json-ws'
        return f'json-ws "{{" json-ws {key} ":" json-ws json-value {comma.format(item=member)} "}}" json-ws'


def _times(low: int, high: int) -> str:
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"
