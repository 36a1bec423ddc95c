"""Budgets over the whole reply: how many numbers, keywords, pronouns, names, different words or stop words it
holds. Each kind counts with the same function the verifier counts with (the verifiers import them from here).

Two mechanisms, shared by every kind:

- a count that must not be exceeded (exactly N numbers, a keyword exactly k times, stop words at most P% of the
  words) refuses the token that would exceed it, checked on the partial word, so the decoder moves on to another;
- a count that must be reached is forced where the reply runs out: at a sentence end in the last few tokens, when
  the model chooses to end, and at the finish, the missing items are written as one short clause. Forced text costs
  no decoded token, so a floor is always reachable within the budget; the clause is checked against the other
  constraints' masks (``forced_texts``), and a kind refuses (``conflict``) to sit beside rules its clause is not
  checked against.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from typing import ClassVar, Final

import numpy as np
from pydantic import Field, PrivateAttr

from bineval_dspy.core.text import delete_ascii_punctuation, trim_punctuation, word_runs, word_tokenize_nltk
from bineval_dspy.enforce.rules import Reply, RuleKind, rule_kind
from bineval_dspy.enforce.steering import HOW, Steering

CONJUNCTIONS: Final = ("and", "but", "for", "nor", "or", "so", "yet")

# The fixed list named in IFBench's count:person_names prompt; the official grader matches exactly these.
PERSON_NAMES: Final = (
    "Emma", "Liam", "Sophia", "Jackson", "Olivia", "Noah", "Ava", "Lucas", "Isabella", "Mason",
    "Mia", "Ethan", "Charlotte", "Alexander", "Amelia", "Benjamin", "Harper", "Leo", "Zoe", "Daniel",
    "Chloe", "Samuel", "Lily", "Matthew", "Grace", "Owen", "Abigail", "Gabriel", "Ella", "Jacob",
    "Scarlett", "Nathan", "Victoria", "Elijah", "Layla", "Nicholas", "Audrey", "David", "Hannah", "Christopher",
    "Penelope", "Thomas", "Nora", "Andrew", "Aria", "Joseph", "Claire", "Ryan", "Stella", "Jonathan",
)  # fmt: skip
_NAME_PATTERNS: Final = tuple(re.compile(rf"\b{re.escape(name)}\b") for name in PERSON_NAMES)

PRONOUNS: Final = frozenset(
    # personal, possessive, reflexive
    "i me we us you he him she her it they them my mine our ours your yours his hers its their theirs "
    "myself ourselves yourself yourselves himself herself itself themselves "
    # demonstrative, interrogative, relative
    "this that these those who whom whose which what whoever whomever whatever whichever "
    # indefinite
    "anybody anyone anything everybody everyone everything nobody nothing somebody someone something "
    "each either neither both all some any none".split()
)
_PRONOUN_FILL: Final = ("they", "we", "it", "this", "that", "you", "these", "those", "everyone", "something")

# NLTK's English stop-word list, the one IFBench's ``ratio:stop_words`` grader counts.
STOP_WORDS: Final = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them
    their theirs themselves what which who whom this that that'll these those am is are was
    were be been being have has had having do does did doing a an the and but if or because
    as until while of at by for with about against between into through during before after
    above below to from up down in out on off over under again further then once here there
    when where why how all any both each few more most other some such no nor not only own
    same so than too very s t can will just don don't should should've now d ll m o re ve y
    ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven
    haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn
    shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
    """.split()
)

# Content words (none a stop word, pronoun or conjunction) a fill writes where different or non-stop words are due.
FILL_WORDS: Final = tuple(
    """
    river mountain garden window harbor lantern meadow forest candle silver orange marble canyon valley desert
    island thunder feather pebble compass anchor violin museum bridge castle tunnel ladder basket kettle blanket
    mirror pillow carpet cabinet button ribbon pencil notebook engine rocket planet comet galaxy crystal diamond
    emerald copper bronze granite velvet cotton linen leather timber bamboo cedar maple willow orchid tulip
    lily daisy clover thistle fern moss lichen coral oyster salmon falcon sparrow heron otter badger beaver
    rabbit turtle dolphin whale tiger zebra camel llama panda koala lemon mango peach cherry melon olive
    pepper ginger cinnamon honey butter cheese bread noodle pasta rice barley wheat harvest autumn winter spring
    summer morning evening sunrise sunset rainbow breeze storm drizzle frost glacier volcano prairie tundra
    savanna lagoon reef delta plateau summit cliff cavern quarry vineyard orchard pasture village market
    station airport library theater stadium chapel tower fountain statue painting sculpture poem novel
    chapter melody rhythm harmony chorus drum trumpet flute guitar piano cello banjo puzzle riddle journey
    voyage festival parade carnival picnic recipe kitchen workshop factory bakery pottery weaving stitching
    quilt tapestry compassion courage patience kindness wisdom curiosity wonder clarity balance energy
    momentum gravity orbit signal circuit magnet battery sensor lattice prism spectrum horizon twilight
    """.split()
)

_SENTENCE_DONE: Final = re.compile(r"[.!?][\"')\]]*\s*$")
_RESERVE: Final = 8  # in the last this many tokens, a sentence end takes the missing items
_NUMBER: Final = re.compile(r"\d+")


def count_numbers(text: str) -> list[str]:
    """The numbers IFBench's count:numbers counts: digit runs once ASCII punctuation is deleted (3.14 is one)."""
    return _NUMBER.findall(delete_ascii_punctuation(text))


def used_conjunctions(text: str) -> list[str]:
    """The different coordinating conjunctions, compared as written ('and', 'And' and 'and,' are three)."""
    return list(dict.fromkeys(word for word in text.split() if trim_punctuation(word).lower() in CONJUNCTIONS))


def named_people(text: str) -> list[str]:
    """The names of the fixed list that occur as whole words (case-sensitive)."""
    return [name for name, pattern in zip(PERSON_NAMES, _NAME_PATTERNS) if pattern.search(text)]


def pronoun_tokens(text: str) -> list[str]:
    """The pronoun tokens: NLTK-style word tokens of the lower-cased text, '/' read as a space."""
    return [token for token in word_tokenize_nltk(text.replace("/", " ").lower()) if token in PRONOUNS]


def different_words(text: str) -> set[str]:
    """The distinct lower-cased whitespace words, punctuation trimmed (all-punctuation words count as '')."""
    return {trim_punctuation(word) for word in text.lower().split()}


def stop_share(text: str) -> tuple[int, int]:
    """(stop words, words) among the ``\\w+`` runs."""
    words = word_runs(text)
    return sum(word.lower() in STOP_WORDS for word in words), len(words)


def stop_percent(stops: int, words: int) -> float:
    """The stop words' share in percent, computed as the verifier compares it (float rounding included)."""
    return stops / words * 100 if words else 0.0


_ARRAYS: dict[tuple[str, int], tuple[Sequence[str], np.ndarray]] = {}


def _per_piece(name: str, pieces: Sequence[str], test: Callable[[str], bool]) -> np.ndarray:
    """A boolean per vocabulary piece, computed once per vocabulary (kept while that vocabulary lives)."""
    key = (name, id(pieces))
    cached = _ARRAYS.get(key)
    if cached is None or cached[0] is not pieces:
        cached = (pieces, np.fromiter((bool(test(p)) for p in pieces), dtype=bool, count=len(pieces)))
        _ARRAYS[key] = cached
    return cached[1]


class _Fill(RuleKind):
    """A count the reply must reach: missing items are forced as one clause where the reply runs out."""

    how: ClassVar[HOW] = "forced"
    adds_stop_words: ClassVar[bool] = False  # its clause is made of stop words (pronouns, conjunctions)

    def holds(self, text: str) -> bool:
        raise NotImplementedError

    def items(self, text: str) -> Iterator[str]:
        """Items to write, in order, until ``holds``."""
        raise NotImplementedError

    def fill(self, text: str) -> str:
        """The clause that makes ``text`` hold ('' when it already does)."""
        if self.holds(text):
            return ""
        chosen: list[str] = []
        for item in itertools.islice(self.items(text), 400):
            chosen.append(item)
            clause = " " + " ".join(chosen) + "."
            if self.holds(text + clause):
                return clause
        return ""  # no clause makes it hold (another constraint's text is in the way): the check says so

    def after(self, reply: Reply, piece: str) -> str | None:
        if reply.limit - reply.tokens <= _RESERVE and _SENTENCE_DONE.search(reply.text):
            return self.fill(reply.text) or None
        return None

    def at_end(self, reply: Reply) -> str | None:
        return self.fill(reply.text) or None

    def finish(self, text: str) -> str:
        return text + self.fill(text)

    def conflict(self, steering: Steering) -> str:
        if steering.max_words is not None or steering.max_sentences is not None:
            return f"{self.name} writes the missing items at the end, past a length ceiling"
        if steering.choice or steering.json_value:
            return f"{self.name} cannot add its items to a fixed phrase or a JSON value"
        if clash := next((rule.kind for rule in steering.rules if rule.kind in CLAUSE_BREAKERS), None):
            return f"{self.name}'s forced clause {CLAUSE_BREAKERS[clash]}"
        if self.adds_stop_words and any(rule.kind == StopWordShare.name for rule in steering.rules):
            return f"{self.name} forces stop words, which the stop-word share refuses"
        return ""


def _others_forced(steering: Steering, name: str) -> list[str]:
    """The literals every constraint but rules of kind ``name`` writes by force."""
    return steering.model_copy(update={"rules": tuple(r for r in steering.rules if r.kind != name)}).forced_texts()


class _Synced(RuleKind):
    """A kind that keeps counts over the reply so far, brought up to date with each new stretch of text."""

    _seen: int = PrivateAttr(default=0)

    def _sync(self, text: str) -> None:
        if len(text) > self._seen:
            self._advance(text, self._seen)
            self._seen = len(text)

    def _advance(self, text: str, start: int) -> None:
        raise NotImplementedError


@rule_kind
class ExactNumbers(_Fill, _Synced):
    """Exactly ``count`` numbers: a token that would start one too many is refused, the missing ones forced."""

    name: ClassVar[str] = "exact-numbers"
    how: ClassVar[HOW] = "automaton"
    count: int = Field(ge=0)
    _numbers: int = PrivateAttr(default=0)
    _in_digits: bool = PrivateAttr(default=False)  # the text, punctuation deleted, ends with a digit

    def holds(self, text: str) -> bool:
        return len(count_numbers(text)) >= self.count

    def items(self, text: str) -> Iterator[str]:
        return (str(n) for n in itertools.count(1))

    def forced_texts(self) -> list[str]:
        return [" " + " ".join(str(n) for n in range(1, 10)) + "."]

    def _more(self, added: str) -> tuple[int, bool]:
        """Numbers begun by ``added`` after the text so far, and whether it leaves a digit run open."""
        bare = delete_ascii_punctuation(added)
        if not bare:
            return 0, self._in_digits
        runs = len(_NUMBER.findall(bare)) - (self._in_digits and bare[0].isdigit())
        return runs, bare[-1].isdigit()

    def _advance(self, text: str, start: int) -> None:
        more, self._in_digits = self._more(text[start:])
        self._numbers += more

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        self._sync(reply.text)
        if self._numbers >= self.count:
            logits[_per_piece("digit", reply.pieces, lambda p: any(c.isdigit() for c in p))] = -np.inf

    def allows(self, reply: Reply, piece: str) -> bool:
        self._sync(reply.text)
        return self._numbers + self._more(piece)[0] <= self.count

    def conflict(self, steering: Steering) -> str:
        digits = any(c.isdigit() for t in _others_forced(steering, self.name) for c in t)
        if digits or (steering.structure is not None and steering.structure.kind == "sections"):
            return "another constraint writes digits, which an exact count of numbers cannot absorb"
        return super().conflict(steering)


@rule_kind
class ExactKeywords(_Fill, _Synced):
    """Each keyword exactly as many times as asked (case-insensitive substrings): a token completing one occurrence
    too many is refused, missing occurrences forced."""

    name: ClassVar[str] = "exact-keywords"
    how: ClassVar[HOW] = "automaton"
    keywords: tuple[str, ...]
    times: tuple[int, ...]
    _counts: list[int] = PrivateAttr(default_factory=list)

    def _found(self, text: str) -> list[int]:
        low = text.lower()
        return [low.count(k) for k in self.keywords]

    def holds(self, text: str) -> bool:
        return all(found >= times for found, times in zip(self._found(text), self.times))

    def items(self, text: str) -> Iterator[str]:
        for keyword, found, times in zip(self.keywords, self._found(text), self.times):
            yield from [keyword] * max(0, times - found)

    def forced_texts(self) -> list[str]:
        return [" " + " ".join(self.keywords) + "."]

    def _advance(self, text: str, start: int) -> None:
        if not self._counts:
            self._counts = [0] * len(self.keywords)
        for i, keyword in enumerate(self.keywords):
            self._counts[i] += text[max(0, start - len(keyword) + 1) :].lower().count(keyword)

    def allows(self, reply: Reply, piece: str) -> bool:
        self._sync(reply.text)
        counts = self._counts or [0] * len(self.keywords)
        for keyword, found, times in zip(self.keywords, counts, self.times):
            window = reply.text[len(reply.text) - len(keyword) + 1 :] if len(keyword) > 1 else ""
            if found + (window + piece).lower().count(keyword) > times:
                return False
        return True

    def conflict(self, steering: Steering) -> str:
        others = " ".join(_others_forced(steering, self.name)).lower()
        if any(keyword in others for keyword in self.keywords):
            return "another constraint writes a keyword whose count is exact"
        return super().conflict(steering)


@rule_kind
class LeastConjunctions(_Fill):
    """At least ``count`` different coordinating conjunctions, compared as written."""

    name: ClassVar[str] = "least-conjunctions"
    adds_stop_words: ClassVar[bool] = True
    count: int = Field(ge=0)

    def holds(self, text: str) -> bool:
        return len(used_conjunctions(text)) >= self.count

    def _forms(self) -> list[str]:
        """The written forms it may force: the seven words, and past seven their capitalised forms too."""
        if self.count <= len(CONJUNCTIONS):
            return list(CONJUNCTIONS)
        return [*CONJUNCTIONS, *(c.capitalize() for c in CONJUNCTIONS), *(c.upper() for c in CONJUNCTIONS)]

    def items(self, text: str) -> Iterator[str]:
        used = set(used_conjunctions(text))
        return (form for form in self._forms() if form not in used and form + "." not in used)

    def forced_texts(self) -> list[str]:
        return [" " + " ".join(self._forms()) + "."]


@rule_kind
class LeastPronouns(_Fill):
    """At least ``count`` pronoun tokens."""

    name: ClassVar[str] = "least-pronouns"
    adds_stop_words: ClassVar[bool] = True
    count: int = Field(ge=0)

    def holds(self, text: str) -> bool:
        return len(pronoun_tokens(text)) >= self.count

    def items(self, text: str) -> Iterator[str]:
        return itertools.cycle(_PRONOUN_FILL)

    def forced_texts(self) -> list[str]:
        return [" " + " ".join(_PRONOUN_FILL) + "."]


@rule_kind
class LeastNames(_Fill):
    """At least ``count`` different names of the fixed list."""

    name: ClassVar[str] = "least-names"
    count: int = Field(ge=0, le=len(PERSON_NAMES))

    def holds(self, text: str) -> bool:
        return len(named_people(text)) >= self.count

    def items(self, text: str) -> Iterator[str]:
        present = set(named_people(text))
        return (name for name in PERSON_NAMES if name not in present)

    def forced_texts(self) -> list[str]:
        return [" " + " ".join(PERSON_NAMES) + "."]


@rule_kind
class LeastDifferentWords(_Fill):
    """At least ``count`` different words; the decoder is given room for most of them (``min_tokens``)."""

    name: ClassVar[str] = "least-different-words"
    count: int = Field(ge=0, le=len(FILL_WORDS))  # the pool guarantees this many

    def holds(self, text: str) -> bool:
        return len(different_words(text)) >= self.count

    def items(self, text: str) -> Iterator[str]:
        present = different_words(text)
        return (word for word in FILL_WORDS if word not in present)

    def forced_texts(self) -> list[str]:
        return [" " + " ".join(FILL_WORDS) + "."]

    def min_tokens(self) -> int:
        return int(self.count * 1.5) + 16  # room to write most of them, about 1.4 tokens a word


@rule_kind
class StopWordShare(_Fill, _Synced):
    """Stop words at most ``percent`` % of the words: a token is refused when the stop words it writes would break
    the share even if the next ``_SLACK`` words were none; content words are forced at the end where needed."""

    name: ClassVar[str] = "stop-word-share"
    how: ClassVar[HOW] = "automaton"
    percent: float = Field(ge=0)
    _words: int = PrivateAttr(default=0)
    _stops: int = PrivateAttr(default=0)
    _open: str = PrivateAttr(default="")  # the word the text ends in, which the next token may continue
    _SLACK: ClassVar[int] = 4

    def _room(self, stops: int, words: int) -> bool:
        slack = self._SLACK if self.percent > 0 else 0
        return stop_percent(stops, words + slack) <= self.percent

    def holds(self, text: str) -> bool:
        stops, words = stop_share(text)
        return bool(words) and stop_percent(stops, words) <= self.percent

    def items(self, text: str) -> Iterator[str]:
        return itertools.cycle(FILL_WORDS[:8])

    def forced_texts(self) -> list[str]:
        return [" " + " ".join(FILL_WORDS[:8]) + "."]

    def _advance(self, text: str, start: int) -> None:
        runs = re.findall(r"\w+", self._open + text[start:])
        self._open = runs.pop() if runs and re.search(r"\w$", text) else ""
        self._words += len(runs)
        self._stops += sum(w.lower() in STOP_WORDS for w in runs)

    def mask(self, logits: np.ndarray, reply: Reply) -> None:
        self._sync(reply.text)
        if not self._room(self._stops + 1, self._words + 1):
            logits[_per_piece("stop", reply.pieces, _whole_stop_word)] = -np.inf

    def allows(self, reply: Reply, piece: str) -> bool:
        self._sync(reply.text)
        before = self._stops + (self._open.lower() in STOP_WORDS)
        runs = re.findall(r"\w+", self._open + piece)  # the open word and what the piece adds, each counted
        stops = self._stops + sum(w.lower() in STOP_WORDS for w in runs)
        return stops <= before or self._room(stops, self._words + len(runs))

    def conflict(self, steering: Steering) -> str:
        others = stop_share(" ".join(_others_forced(steering, self.name)))[0]
        if others:
            return "another constraint forces stop words the share cannot count on"
        return super().conflict(steering)


def _whole_stop_word(piece: str) -> bool:
    """A piece that is one stop word after a space (' the', ' and')."""
    return bool(re.fullmatch(r"\s+\w+", piece)) and piece.strip().lower() in STOP_WORDS


# Rules the forced clause (' word word word.', a sentence of its own at the end) breaks, and how. Every other rule
# sees the clause through ``forced_texts`` (the word rules test its words, line rules its whitespace, the sentences
# rule refuses forced text inside its sentences).
CLAUSE_BREAKERS: Final = {
    "sentence-chain": "opens a sentence with its own word, not the last word of the sentence before",
    "keyword-at": "adds words and sentences before the place the keyword rule counts to",
}
