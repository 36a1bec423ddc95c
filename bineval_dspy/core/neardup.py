"""Near-duplicate texts by word shingles: the one leak check wherever training data meets held-out data.

Two prompts are compared by the Jaccard similarity of their word 5-gram sets, taken after ``normalize``: a copy of a
test prompt whose commas were dropped, whose punctuation was spaced off, whose letters were swapped for look-alike
Cyrillic or Greek ones, or which hides zero-width characters reads as the prompt it copies. ``LeakIndex`` finds a
text's nearest held-out prompt from the shingles they share, so a check costs no pass over every held-out prompt.
"""

from __future__ import annotations

import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence

SHINGLE_WORDS = 5
LEAK_THRESHOLD = 0.5  # the similarity at which a text counts as a copy of a held-out one

# Letters that render like a Latin one (both cases: a lower-case Greek nu is a "v", its capital an "N").
_HOMOGLYPHS = str.maketrans(
    "АВЕЅІЈКМНОРСТХУаеѕіјорсухԁԛԝӏһ"  # Cyrillic
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧαικνορτυχ",  # Greek
    "ABESIJKMHOPCTXYaesijopcyxdqwlh"
    "ABEZHIKMNOPTYXaikvoptux",
)
_APOSTROPHES = dict.fromkeys(map(ord, "'\u2019\u02bc"), None)  # inside a word: "don't" and "dont" are one word


def _separator(char: str) -> bool:
    """Punctuation and symbols break words, as whitespace does."""
    return unicodedata.category(char)[0] in "PS"


def normalize(text: str) -> str:
    """The form near-duplicates are compared in: NFKC, invisible format characters (zero-width spaces and joiners,
    soft hyphens) dropped, look-alike Cyrillic and Greek letters as Latin, case folded, apostrophes dropped, other
    punctuation and symbols as spaces, whitespace runs as one space."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(char for char in text if unicodedata.category(char) != "Cf")
    text = text.translate(_HOMOGLYPHS).casefold().translate(_APOSTROPHES)
    return " ".join("".join(" " if _separator(char) else char for char in text).split())


def shingles(text: str, size: int = SHINGLE_WORDS) -> frozenset[tuple[str, ...]]:
    """The word ``size``-grams of the normalized text; a shorter text is one."""
    words = normalize(text).split()
    if len(words) <= size:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


class LeakIndex:
    """Held-out texts by shingle, so a candidate's nearest held-out text (by Jaccard similarity of shingle sets) is
    found from the shingles it shares, not by comparing it with every held-out text."""

    def __init__(self, held_out: Sequence[tuple[str, str]]) -> None:
        self._keys = [key for key, _ in held_out]
        self._sizes: list[int] = []
        self._postings: defaultdict[tuple[str, ...], list[int]] = defaultdict(list)
        for index, (_, text) in enumerate(held_out):
            grams = shingles(text)
            self._sizes.append(len(grams))
            for gram in grams:
                self._postings[gram].append(index)

    def nearest(self, text: str) -> tuple[str, float] | None:
        """The key of the most similar held-out text and the similarity, or None when none shares a shingle."""
        grams = shingles(text)
        shared = Counter(index for gram in grams for index in self._postings.get(gram, ()))
        if not shared:
            return None
        similarity = {i: count / (len(grams) + self._sizes[i] - count) for i, count in shared.items()}
        best = max(similarity, key=lambda i: (similarity[i], -i))  # ties: the first held-out text
        return self._keys[best], similarity[best]

    def copied(self, text: str, threshold: float = LEAK_THRESHOLD) -> str | None:
        """The key of the held-out text ``text`` is at least ``threshold`` similar to, or None."""
        nearest = self.nearest(text)
        return nearest[0] if nearest is not None and nearest[1] >= threshold else None


def leaks(texts: Sequence[str], held_out: Sequence[tuple[str, str]], threshold: float = LEAK_THRESHOLD) -> list[tuple[int, str, float]]:
    """(index, held-out key, similarity) of each text whose nearest held-out text is at least ``threshold``
    similar (1.0 for one equal after ``normalize``)."""
    index = LeakIndex(held_out)
    found = []
    for number, text in enumerate(texts):
        nearest = index.nearest(text)
        if nearest is not None and nearest[1] >= threshold:
            found.append((number, *nearest))
    return found
