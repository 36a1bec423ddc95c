"""Word predicates: a word may end only where every predicate holds on it (given the words before it), and a token
is refused as soon as no completion of the word it writes could hold. One rule kind (``words``) carries any number
of named predicates, built in (a consonant cluster, a prime length, the next letter of the alphabet, no two
neighbours with one initial, alternating syllable parity, a word used at most N times) or a user's own
(``@word_predicate``), so they share one word segmentation and one incremental walk over the reply.

A word is a whitespace-separated token. Most predicates read it as IFBench's graders do: lower-cased, ASCII
punctuation deleted, and a token of punctuation only is no word (``raw = False``); a ``raw`` predicate reads the
token as written. The verifiers import the shared tests from here, so both count the same way.
"""

from __future__ import annotations

import bisect
import inspect
import re
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import syllapy
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.registry import Registry
from bineval_dspy.core.text import delete_ascii_punctuation
from bineval_dspy.enforce.rules import Reply, RuleKind, rule_kind, user_source

CONSONANTS = frozenset("bcdfghjklmnpqrstvwxyz")
VOWELS = frozenset("aeiou")
PRIME_LENGTHS = frozenset(n for n in range(2, 100) if all(n % d for d in range(2, int(n**0.5) + 1)))  # IFBench's


def plain(token: str) -> str:
    """A token as the graders read a word: lower-cased, ASCII punctuation deleted ('' when it was only that)."""
    return delete_ascii_punctuation(token.lower())


def has_cluster(word: str) -> bool:
    """Two consonant letters in a row somewhere in ``word`` (lower-case)."""
    return any(a in CONSONANTS and b in CONSONANTS for a, b in zip(word, word[1:]))


def syllables(word: str) -> int:
    """Syllables of a word, counted by ``syllapy`` as IFBench does."""
    return int(syllapy.count(word))


class WordPredicate(BaseModel):
    """A predicate a finished word must meet, given a state the words before it leave (``start``/``advance``).
    ``viable`` says whether a partial word may still become one that holds; ``key`` is the part of the state the
    test of a fresh word depends on (the per-vocabulary masks are cached by it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: ClassVar[str] = ""
    raw: ClassVar[bool] = False
    stateful: ClassVar[bool] = False  # the test reads the words before (forced text elsewhere cannot be checked)
    closed: ClassVar[bool] = False  # a partial word that may still hold holds already (text forced after it is safe)
    few_keys: ClassVar[bool] = True  # ``key`` takes few values: a mask of word starts is worth caching per value

    def start(self) -> Any:
        return None

    def viable(self, word: str, state: Any) -> bool:
        return True

    def holds(self, word: str, state: Any) -> bool:
        raise NotImplementedError

    def advance(self, word: str, state: Any) -> Any:
        return state

    def key(self, state: Any) -> Hashable:
        return state

    def form(self, token: str) -> str:
        """The word this predicate reads in a whitespace token ('' : no word)."""
        return token if self.raw else plain(token)


WORD_PREDICATES: Registry[type[WordPredicate]] = Registry("word predicate")


def word_predicate_class(cls: type[WordPredicate]) -> type[WordPredicate]:
    """Register a ``WordPredicate`` subclass under its ``name``."""
    return WORD_PREDICATES.named(cls)


class _FunctionPredicate(WordPredicate):
    """A predicate written as a function ``test(word, **params)`` (``@word_predicate``); extra fields are its
    params."""

    model_config = ConfigDict(extra="allow", frozen=True)
    test: ClassVar[Callable[..., bool]]
    partial: ClassVar[bool | Callable[..., bool]] = False
    previous: ClassVar[bool] = False  # the function takes ``previous``: the word before ('' for the first)

    def _params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    def start(self) -> Any:
        return ""

    def holds(self, word: str, state: Any) -> bool:
        return self._verdict(self.test(word, **self._params(), **({"previous": state} if self.previous else {})))

    def viable(self, word: str, state: Any) -> bool:
        if self.partial is True:
            return self.holds(word, state)
        if callable(self.partial):
            return self._verdict(self.partial(word, **self._params(), **({"previous": state} if self.previous else {})))
        return True

    def _verdict(self, answer: object) -> bool:
        """``answer`` when it is a bool: a predicate returning None or "no" is a bug in it, never read as a verdict
        (None would refuse every word, "no" pass every one), so the reply fails with a line naming the predicate."""
        if isinstance(answer, bool | np.bool_):
            return bool(answer)
        raise TypeError(f"word predicate {self.name} returned {type(answer).__name__} {answer!r:.40}, not True or False")

    def advance(self, word: str, state: Any) -> Any:
        return word if self.previous else state


def word_predicate(name: str, *, partial: bool | Callable[..., bool] = False, raw: bool = False) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    """Register ``test(word, **params) -> bool`` as the word predicate ``name`` (a user's file may add its own):
    every finished word of a steered reply must pass it (``words(name, **params)``). ``partial``: True when a word
    that fails can never pass by growing (a length cap), so the partial word is refused at once; or a function
    ``(prefix, **params) -> bool`` saying whether some completion may pass. A ``previous`` parameter receives the
    word before. ``raw``: the token as written, punctuation kept (else lower-cased, ASCII punctuation deleted)."""

    def decorate(test: Callable[..., bool]) -> Callable[..., bool]:
        params = inspect.signature(test).parameters
        attrs = {
            "name": name,
            "raw": raw,
            "stateful": "previous" in params,
            "few_keys": "previous" not in params,  # a mask per previous word would cost a vocabulary scan per word
            "test": staticmethod(test),
            "partial": staticmethod(partial) if callable(partial) else partial,
            "previous": "previous" in params,
            "__annotations__": {"name": ClassVar[str], "raw": ClassVar[bool], "stateful": ClassVar[bool], "few_keys": ClassVar[bool]},
            "__module__": test.__module__,
        }
        cls = type(f"WordPredicate_{test.__name__}", (_FunctionPredicate,), attrs)
        source, held = user_source(test), WORD_PREDICATES.get(name)
        if held is not None and (_SOURCES.get(name) or user_source(held)) != source:  # not an edited file's own
            where = f"{source or test.__module__}:{test.__code__.co_firstlineno}"
            raise InputError(f"{where}: word predicate {name!r} is already defined elsewhere; rename yours")
        WORD_PREDICATES.add(name, cls, replace=True)
        _SOURCES[name] = source
        return test

    return decorate


_SOURCES: dict[str, Path | None] = {}  # a function predicate's name -> its user file


class Predicate(BaseModel):
    """A predicate as data: its registered name and parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    params: dict[str, Any] = Field(default_factory=dict)

    def build(self) -> WordPredicate:
        kind = WORD_PREDICATES.get(self.name)
        if kind is None:
            raise ValueError(f"unknown word predicate {self.name!r} (known: {', '.join(WORD_PREDICATES) or 'none'})")
        built = kind.model_validate(self.params)
        if isinstance(built, _FunctionPredicate):  # its params must be the function's
            try:
                inspect.signature(built.test).bind("word", **built._params(), **({"previous": ""} if built.previous else {}))
            except TypeError as exc:
                raise ValueError(f"word predicate {self.name}: {exc}") from None
        return built

    def source(self) -> Path | None:
        return _SOURCES.get(self.name) or user_source(WORD_PREDICATES.get(self.name))


def words(name: str, **params: Any) -> Words:
    """The rule "every word passes the predicate ``name`` with ``params``" (for ``Steering(rules=rules(...))``)."""
    rule = Words(predicates=(Predicate(name=name, params=params),))
    rule.built()  # an unknown name or bad params fail here, where the enforcement is declared
    return rule


# --- the vocabulary's word shapes, once per tokenizer ----------------------------------------------------------------


class _Shapes:
    """Per token: whether it starts with whitespace, and the word it begins when a word begins with it: the word
    after its whitespace (``simple``: whitespace then one word) or, after whitespace already written, the whole
    token (``bare``: no whitespace in it). The masks a predicate's state gives over those are cached here, by the
    predicate and its ``key``."""

    def __init__(self, pieces: Sequence[str]) -> None:
        self.pieces = pieces
        self.leading_space = np.fromiter((p[:1].isspace() for p in pieces), dtype=bool, count=len(pieces))
        self.simple = np.fromiter((re.fullmatch(r"\s+\S+", p) is not None for p in pieces), dtype=bool, count=len(pieces))
        self.bare = np.fromiter((re.fullmatch(r"\S+", p) is not None for p in pieces), dtype=bool, count=len(pieces))
        self.starts = [(i, p.lstrip()) for i, p in enumerate(pieces) if self.simple[i] or self.bare[i]]
        self.marks = np.fromiter((not _ALNUM.search(p) for p in pieces), dtype=bool, count=len(pieces))
        self.masks: dict[tuple[str, Hashable], np.ndarray] = {}
        self.by_plain: dict[str, list[int]] = {}
        for i, word in self.starts:
            self.by_plain.setdefault(plain(word), []).append(i)

    def refused_starts(self, predicate: WordPredicate, state: Any) -> np.ndarray:
        """Tokens whose word, as it stands, does not hold (the word a token begins is most often that word:
        refusing them keeps the model on words that hold rather than mending one)."""
        cache = (predicate.name + predicate.model_dump_json(), predicate.key(state))
        if cache not in self.masks:
            refused = np.zeros(len(self.pieces), dtype=bool)
            refused[[i for i, word in self.starts if (w := predicate.form(word)) and not predicate.holds(w, state)]] = True
            self.masks[cache] = refused
        return self.masks[cache]


def shapes(pieces: Sequence[str]) -> _Shapes:
    """The shapes of one vocabulary (kept while it lives)."""
    held = _SHAPES.get(id(pieces))
    if held is None or held[0] is not pieces:
        held = (pieces, _Shapes(pieces))
        _SHAPES[id(pieces)] = held
    return held[1]


_SHAPES: dict[int, tuple[Sequence[str], _Shapes]] = {}
_TOKEN = re.compile(r"\S+")
_ALNUM = re.compile(r"[^\W_]")
_GLUED = re.compile(r"[^\W_][^\w\s'’.-]+[^\W_]")  # letters or digits, punctuation, letters or digits


@rule_kind
class Words(RuleKind):
    """Every word of the reply passes every predicate; the last word, cut by the token limit, is dropped when it
    does not."""

    name: ClassVar[str] = "words"
    how: ClassVar = "mask"
    predicates: tuple[Predicate, ...]
    _built: list[WordPredicate] | None = PrivateAttr(default=None)
    _states: list[Any] = PrivateAttr(default_factory=list)
    _done: int = PrivateAttr(default=0)  # reply.text up to here is finished words (and the whitespace after)
    _punct: bool = PrivateAttr(default=False)  # the last finished token had no letter or digit

    def built(self) -> list[WordPredicate]:
        if self._built is None:
            self._built = [p.build() for p in self.predicates]
            self._states = [p.start() for p in self._built]
        return self._built

    def combine(self, other: RuleKind) -> RuleKind:
        assert isinstance(other, Words)
        unique = {p.model_dump_json(): p for p in [*self.predicates, *other.predicates]}  # params are dicts: no hash
        return Words(predicates=tuple(unique.values()))

    def sources(self) -> list[Path]:
        return [*super().sources(), *(s for p in self.predicates if (s := p.source()) is not None)]

    def conflict(self, steering: Any) -> str:
        texts = [t for rule in steering.rules if rule.kind != self.name for t in rule.build().forced_texts()]
        texts += [steering.lead, steering.opening, steering.closing, steering.postscript, steering.end_phrase, *steering.choice]
        structure = steering.structure
        if structure is not None:
            markers = {"bullets": "*", "dividers": "***", "two_responses": "******", "sections": f"{structure.marker} 1"}
            texts += [structure.first_word, markers.get(structure.kind, "")]
        open_ended = [p.name for p in self.built() if not p.closed]
        forcing = [r.kind for r in steering.rules if r.kind != self.name and r.build().how == "forced"]
        if open_ended and steering.min_words:
            return f"a word floor may not be met while words wait to hold {open_ended[0]}"
        if open_ended and (structure is not None or steering.title or steering.postscript or forcing):
            why = "a break, title or postscript" if not forcing else f"the rule {forcing[0]}"
            return f"{why} forced mid-reply may cut a word before it holds {open_ended[0]}"
        for predicate in self.built():
            for text in filter(None, texts):
                tokens = [w for t in text.split() if (w := predicate.form(t))]
                if tokens and (predicate.stateful or not all(predicate.holds(w, predicate.start()) for w in tokens)):
                    return f"the forced text {text[:40]!r} breaks the word rule {predicate.name}"
        if planned := [r.kind for r in steering.rules if r.build().how == "automaton"]:
            return f"the rule {planned[0]} picks words (a sentence's first, a bullet's) that need not keep the word rule"
        if steering.json_value:
            return f"a JSON reply's words cannot all keep {', '.join(p.name for p in self.predicates)}"
        return ""

    # -- the walk over the reply -------------------------------------------------------------------
    def _sync(self, text: str) -> str:
        """Finish the words ``text`` completed since the last call; the partial word it ends with."""
        self.built()  # the predicates and their first states
        for match in _TOKEN.finditer(text, self._done):
            if match.end() == len(text):
                self._done = match.start()
                return match.group()
            self._states, self._punct = self._advanced(self._states, match.group()), not _ALNUM.search(match.group())
        self._done = len(text)
        return ""

    def _advanced(self, states: list[Any], token: str) -> list[Any]:
        return [p.advance(w, s) if (w := p.form(token)) else s for p, s in zip(self.built(), states)]

    def _holds(self, states: list[Any], token: str, punct: bool) -> bool:
        """Whether ``token`` may end here; ``punct``: the token before it had no letter or digit (a mark between
        words may stand alone once, not run on: a reply of marks would escape every word rule)."""
        if not _ALNUM.search(token) and punct:
            return False
        return self._viable(states, token) and all(not (w := p.form(token)) or p.holds(w, s) for p, s in zip(self.built(), states))

    def _viable(self, states: list[Any], token: str) -> bool:
        if _GLUED.search(token):
            return False  # "cat,dog" is one word to the check: glued words would escape the rule between them
        return all(not (w := p.form(token)) or p.viable(w, s) for p, s in zip(self.built(), states))

    def allows(self, reply: Reply, piece: str) -> bool:
        partial = self._sync(reply.text)
        text = partial + piece
        tokens = text.split()
        if not tokens:
            return True
        states, punct = self._states, self._punct
        finished = tokens if text[-1].isspace() else tokens[:-1]
        for token in finished:
            if not self._holds(states, token, punct):
                return False
            states, punct = self._advanced(states, token), not _ALNUM.search(token)
        return text[-1].isspace() or self._viable(states, tokens[-1])

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        partial = self._sync(reply.text)
        found = shapes(reply.pieces)
        states = self._states
        if partial:
            if not self._holds(states, partial, self._punct):
                logits[found.leading_space] = -np.inf  # the word cannot end here
                return
            states = self._advanced(states, partial)
        begins = found.simple | found.bare if not partial else found.simple  # tokens that begin the next word
        for predicate, state in zip(self.built(), states):
            if hasattr(predicate, "refused_starts"):
                refused = predicate.refused_starts(found, state)
            elif not predicate.few_keys:
                continue  # the exact check on the chosen token keeps it
            else:
                refused = found.refused_starts(predicate, state)
            refused = refused & begins
            if np.isfinite(logits[begins & ~refused]).any():  # never refuse every fresh word: the exact check decides
                logits[refused] = -np.inf
        if np.isfinite(logits[begins & ~found.marks]).any():  # a word left to write: no mark stands in for it
            logits[begins & found.marks] = -np.inf

    def may_end(self, reply: Reply) -> bool:
        partial = self._sync(reply.text)
        return not partial or self._holds(self._states, partial, self._punct)

    def finish(self, text: str) -> str:
        """``text`` without a last word that fails (cut by the token limit), checked from the start."""
        states, punct = [p.start() for p in self.built()], False
        matches = list(_TOKEN.finditer(text))
        for index, match in enumerate(matches):
            if not self._holds(states, match.group(), punct):
                cut = text[: match.start()].rstrip()
                return cut if index == len(matches) - 1 and cut else text
            states, punct = self._advanced(states, match.group()), not _ALNUM.search(match.group())
        return text


def _next_letter(letter: str) -> str:
    return chr((ord(letter) - ord("a") + 1) % 26 + ord("a"))


@word_predicate_class
class Alphabet(WordPredicate):
    """Each word starts with the letter after the previous word's initial (z wraps to a); the first with a-z."""

    name: ClassVar[str] = "alphabet"
    stateful: ClassVar[bool] = True
    closed: ClassVar[bool] = True

    def viable(self, word: str, state: Any) -> bool:
        return self.holds(word, state)

    def holds(self, word: str, state: Any) -> bool:
        first = word[0]
        return first == state if state else "a" <= first <= "z"

    def advance(self, word: str, state: Any) -> Any:
        return _next_letter(state or word[0])


@word_predicate_class
class NewInitial(WordPredicate):
    """No word starts with the letter the word before it starts with."""

    name: ClassVar[str] = "new_initial"
    stateful: ClassVar[bool] = True
    closed: ClassVar[bool] = True

    def viable(self, word: str, state: Any) -> bool:
        return self.holds(word, state)

    def holds(self, word: str, state: Any) -> bool:
        return word[0] != state

    def advance(self, word: str, state: Any) -> Any:
        return word[0]


@word_predicate_class
class Cluster(WordPredicate):
    """Two consonants in a row in every whitespace token, punctuation and all."""

    name: ClassVar[str] = "cluster"
    raw: ClassVar[bool] = True

    def holds(self, word: str, state: Any) -> bool:
        return has_cluster(word.lower())


@word_predicate_class
class PrimeLength(WordPredicate):
    """A prime number of characters (those below 100, as IFBench's grader knows them)."""

    name: ClassVar[str] = "prime_length"

    def viable(self, word: str, state: Any) -> bool:
        return len(word) <= max(PRIME_LENGTHS)

    def holds(self, word: str, state: Any) -> bool:
        return len(word) in PRIME_LENGTHS


@word_predicate_class
class SyllableParity(WordPredicate):
    """Syllable counts alternate between odd and even from word to word."""

    name: ClassVar[str] = "syllable_parity"
    stateful: ClassVar[bool] = True

    def holds(self, word: str, state: Any) -> bool:
        return state is None or syllables(word) % 2 != state

    def advance(self, word: str, state: Any) -> Any:
        return syllables(word) % 2


@word_predicate_class
class MostUses(WordPredicate):
    """No word is used more than ``most`` times."""

    name: ClassVar[str] = "most_uses"
    stateful: ClassVar[bool] = True
    most: int = Field(ge=1)

    def start(self) -> Any:
        return {}

    def holds(self, word: str, state: Any) -> bool:
        return state.get(word, 0) < self.most

    def advance(self, word: str, state: Any) -> Any:
        return {**state, word: state.get(word, 0) + 1}

    def refused_starts(self, found: _Shapes, state: dict[str, int]) -> np.ndarray:
        """The tokens that start a word already used ``most`` times (looked up, not tested one by one)."""
        refused = np.zeros(len(found.pieces), dtype=bool)
        refused[[i for word, count in state.items() if count >= self.most for i in found.by_plain.get(word, [])]] = True
        return refused


def prefix_of_any(prefix: str, ordered: Sequence[str]) -> bool:
    """Whether some word of ``ordered`` (sorted) starts with ``prefix``."""
    at = bisect.bisect_left(ordered, prefix)
    return at < len(ordered) and ordered[at].startswith(prefix)
