"""What a decoder must do so a reply satisfies a set of code-checkable constraints, as one typed spec.

A verifier that can be enforced declares, beside its check, the part of a ``Steering`` its kwargs ask for
(``verifiers.registry.register(..., enforce=...)``). A prompt's constraints are merged field by field: equal
values agree, lists join, ranges intersect, and two different values for one field (two openings, two
structures) are a conflict, reported for the later constraint, which is then not applied at all. Forced text that
another constraint's mask would forbid (an end phrase with capitals under "all lowercase") is a conflict too.

The spec travels with the LM request (``metadata``), so it is part of the call's cache key, and each engine
executes it in its own form: the embedded decoder (``enforce.runtime``) as masks, forced text and counters.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.core.errors import BinevalError
from bineval_dspy.core.source import source_digest
from bineval_dspy.core.text import split_sentences_punkt, word_runs
from bineval_dspy.enforce.rules import HOW as HOW  # re-exported: where the spec's users look for it
from bineval_dspy.enforce.rules import Rule, RuleConflict, merge_rules

METADATA_KEY = "bineval_steering"  # the request metadata entry that carries a Steering
CODE_KEY = "bineval_steering_code"  # and the digest of the code that executes it (see ``metadata``)


class Structure(BaseModel):
    """Units the reply is cut into, counted while decoding: a break is forced where a unit is due and the end of
    text refused before the last one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["bullets", "dividers", "paragraphs", "sections", "two_responses"]
    count: int = Field(ge=1)  # exactly this many (sections: at least)
    marker: str = ""  # sections: the header word ("Section")
    nth: int = 0  # paragraphs: the paragraph whose first word is given (1-based; 0: none)
    first_word: str = ""


class Steering(BaseModel):
    """The compiled constraints of one prompt; every field's default asks nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    lead: str = ""  # forced first, before everything (a request repeated word for word)
    opening: str = ""  # forced at the start of the reply proper (a quotation mark)
    closing: str = ""  # forced last (the matching quotation mark)
    title: bool = False  # a <<title>> the model writes, opened and closed by force
    structure: Structure | None = None
    choice: tuple[str, ...] = ()  # the whole reply is one of these
    json_value: bool = False  # the reply is one JSON value (the engine's JSON grammar)
    case: Literal["lower", "upper"] | None = None  # no token with a letter of the other case
    banned: tuple[str, ...] = ()  # no token holding one of these strings
    forbidden_words: tuple[str, ...] = ()  # no whole word among these (any case)
    min_words: int = 0
    max_words: int | None = None  # fewer than this many words
    min_sentences: int = 0
    max_sentences: int | None = None  # fewer than this many sentences
    postscript: str = ""  # a postscript opened by this marker, forced before the end
    end_phrase: str = ""  # forced at the very end, before ``closing``
    rules: tuple[Rule, ...] = ()  # rules of the registered kinds (``enforce.rules``): word predicates, budgets, ...

    def forced_texts(self) -> list[str]:
        """Every literal the decoder will write by force, for the conflict check against masks."""
        texts = [self.lead, self.opening, self.closing, self.postscript, self.end_phrase, *self.choice]
        if self.structure is not None:
            texts += [self.structure.marker, self.structure.first_word]
        for rule in self.rules:
            texts += rule.build().forced_texts()
        return [t for t in texts if t]

    def to_json(self) -> str:
        return self.model_dump_json(exclude_defaults=True)

    @property
    def min_tokens(self) -> int:
        """Reply tokens a lower bound needs (about 1.4 tokens a word on the embedded models, plus forced text), and
        what the rules need."""
        own = int(self.min_words * 1.5 + self.min_sentences * 14) + 16 if (self.min_words or self.min_sentences) else 0
        return max([own, *(rule.build().min_tokens() for rule in self.rules)])


class Conflict(BinevalError, ValueError):
    """Two constraints ask the decoder for incompatible things."""


_SCALARS = ("lead", "opening", "closing", "title", "structure", "json_value", "case", "postscript", "end_phrase")
_TEXTUAL = ("lead", "opening", "closing", "title", "structure", "choice", "postscript", "end_phrase")


def merge(base: Steering, part: Steering) -> Steering:
    """``base`` with ``part`` applied; Conflict when they cannot both hold."""
    values = base.model_dump()
    for name in _SCALARS:
        mine, theirs = getattr(base, name), getattr(part, name)
        if theirs in (None, "", False) or theirs == mine:
            continue
        if mine not in (None, "", False):
            raise Conflict(f"both ask for a different {name.replace('_', ' ')}")
        values[name] = theirs.model_dump() if isinstance(theirs, BaseModel) else theirs
    if part.choice:
        if base.choice and set(base.choice) != set(part.choice):
            raise Conflict("both fix the whole reply, to different phrases")
        values["choice"] = part.choice
    values["banned"] = tuple(dict.fromkeys([*base.banned, *part.banned]))
    values["forbidden_words"] = tuple(dict.fromkeys([*base.forbidden_words, *part.forbidden_words]))
    try:
        values["rules"] = merge_rules(base.rules, part.rules)
    except RuleConflict as exc:
        raise Conflict(str(exc)) from None
    for low, high in (("min_words", "max_words"), ("min_sentences", "max_sentences")):
        values[low] = max(getattr(base, low), getattr(part, low))
        ceilings = [c for c in (getattr(base, high), getattr(part, high)) if c is not None]
        values[high] = min(ceilings) if ceilings else None
        if values[high] is not None and values[low] >= values[high]:
            raise Conflict(f"at least {values[low]} and fewer than {values[high]} {low.split('_')[1]}")
    merged = Steering.model_validate(values)
    _check_whole(merged)
    return merged


def _check_whole(steering: Steering) -> None:
    """Cross-field rules: a JSON reply or a fixed phrase leaves no room for text around it, and no forced text
    may break a mask."""
    textual = [name for name in _TEXTUAL if getattr(steering, name) not in (None, "", False, ()) and name != "choice"]
    if steering.json_value and (textual or steering.choice):
        raise Conflict("a JSON reply cannot also carry forced text or structure")
    if steering.choice and [name for name in textual if name not in ("opening", "closing")]:
        raise Conflict("a reply fixed to one phrase cannot also carry other text or structure")
    if steering.choice:
        words = [len(word_runs(option)) for option in steering.choice]
        too_short = steering.min_words > min(words) or steering.min_sentences > 1
        too_long = (steering.max_words is not None and steering.max_words <= max(words)) or (steering.max_sentences is not None and steering.max_sentences <= 1)
        if too_short or too_long:
            raise Conflict("a reply fixed to one phrase cannot meet this bound on its length")
    first_word = steering.structure is not None and steering.structure.nth == 1
    if (steering.lead and (steering.opening or first_word)) or (steering.title and first_word):
        raise Conflict("both must come first in the reply")
    if (steering.min_words and steering.max_sentences is not None) or (steering.min_sentences and steering.max_words is not None):
        raise Conflict("the decoder cannot meet a floor in one unit under a ceiling in another")
    closing_sentences = len(split_sentences_punkt(steering.end_phrase)) if steering.end_phrase else 0
    if steering.max_sentences is not None and closing_sentences and closing_sentences + 1 >= steering.max_sentences:
        raise Conflict("the end phrase leaves the reply no sentence under the ceiling")  # the body has one at least
    ceiling = steering.max_words is not None or steering.max_sentences is not None
    if ceiling and steering.structure is not None and steering.structure.count > 1:
        raise Conflict("the decoder cannot share a length ceiling among several counted units")
    for rule in steering.rules:
        if why := rule.build().conflict(steering):
            raise Conflict(why)
    for text in steering.forced_texts():
        if steering.case == "lower" and any(c.isupper() for c in text):
            raise Conflict(f"the forced text {text[:40]!r} has capitals")
        if steering.case == "upper" and any(c.islower() for c in text):
            raise Conflict(f"the forced text {text[:40]!r} has lowercase letters")
        if any(b in text for b in steering.banned):
            raise Conflict(f"the forced text {text[:40]!r} holds a banned string")
        if any(re.search(rf"\b{re.escape(w)}\b", text, re.IGNORECASE) for w in steering.forbidden_words):
            raise Conflict(f"the forced text {text[:40]!r} holds a forbidden word")


@functools.cache
def code_digest() -> str:
    """A digest of the spec's and the decoder's source (every module of this package, the rule kinds included):
    sent with every steered request, so a cached reply made by other steering code is never replayed as this
    code's."""
    return source_digest(sys.modules[__package__])


def metadata(steering: Steering) -> dict[str, str]:
    """The request ``metadata`` that carries ``steering`` to an engine, with the digest of the code that executes
    it: this library's, and the user's files that define a rule kind or word predicate it uses."""
    user = sorted({str(path) for rule in steering.rules for path in rule.build().sources()})
    if not user:
        return {METADATA_KEY: steering.to_json(), CODE_KEY: code_digest()}
    files = source_digest(*map(Path, user))
    return {METADATA_KEY: steering.to_json(), CODE_KEY: f"{code_digest()}+{files}"}


def from_metadata(extensions: object) -> Steering | None:
    """The Steering a request's ``config.extensions`` carries, if any (the wire form is its JSON)."""
    metadata = extensions.get("metadata") if isinstance(extensions, dict) else None
    raw = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    return Steering.model_validate(json.loads(raw)) if raw else None
