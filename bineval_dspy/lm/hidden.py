"""What an embedded model *reads* at the answer position, instead of what it says: the hidden state of every layer at
the last prompt token, and the yes/no logit gap there.

A 135M judge answers "yes" to nearly everything, yet its hidden state still separates the outputs a strong judge
passes from those it fails (a linear probe reads it: ``judges.probe``). One forward pass and no decoding gives both
features. The GGUF model is read by transformers (dequantized to float32: the same weights the embedded engine runs,
rounded otherwise), since llama.cpp returns one layer only and the layer is chosen on validation.

Prompts come in groups that share a prefix (one output's questions; one article's summaries): the prefix is
evaluated once and every branch continues from its KV cells (a walk of the prompts' token trie), so a group of
twelve questions costs little more than one, and the next group starts from the cells it shares with the last (an
article's sixteen summaries judged one after another read the article once). Features are cached on disk per model file and prompt, like any LM
call: a rerun computes nothing again.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import digest
from bineval_dspy.lm._batching import common_prefix
from bineval_dspy.lm.engine import engine_of

YES_TOKENS = ("yes", "Yes", " yes", " Yes", "YES")
NO_TOKENS = ("no", "No", " no", " No", "NO")


@dataclass(frozen=True)
class Reading:
    """One prompt's features: the hidden state of every layer (0: the embeddings) at its last token, and the yes/no
    logit gap there (log-sum-exp of the yes spellings minus that of the no spellings)."""

    hidden: np.ndarray  # (layers + 1, width), float32
    gap: float


class HiddenStates:
    """Reads ``Reading``s of prompts from a GGUF model in this process, cached in ``cache_dir`` (None: not kept)."""

    def __init__(self, gguf: Path, model: str, cache_dir: Path | None = None) -> None:
        self.gguf = gguf
        self.model = model  # the model string (it names the file's digest): part of every cache key
        self._lock = threading.Lock()
        self._store = _Store(cache_dir / "hidden.sqlite") if cache_dir is not None else None
        self.computed = 0  # prompts evaluated (not read from the cache) by this reader
        self._kept: tuple[list[int], Any] | None = None  # the last walk's root: its tokens and KV cache

    def tokenizer(self) -> Any:
        return _loaded(self.gguf)[1]

    def depth(self) -> int:
        """The model's layers (a reading holds depth + 1 states: the embeddings, then each layer's)."""
        return int(_loaded(self.gguf)[0].config.num_hidden_layers)

    def read(self, prompts: Sequence[str]) -> list[Reading]:
        """The readings of ``prompts`` (rendered text, specials included), in order; shared prefixes evaluated once."""
        keys = [digest(f"{self.model}\n{p}") for p in prompts]
        found = self._store.get(keys) if self._store is not None else {}
        todo = sorted({k: p for k, p in zip(keys, prompts) if k not in found}.items())
        if todo:
            with self._lock:
                model, tokenizer, yes, no = _loaded(self.gguf)
                ids = [tokenizer(p, add_special_tokens=False).input_ids for _, p in todo]
                readings, self._kept = _walk(model, ids, yes, no, self._kept)
                self.computed += len(todo)
            new = {key: _rounded(r) for (key, _), r in zip(todo, readings)}
            if self._store is not None:
                self._store.put(new)
            found = {**found, **new}
        return [found[k] for k in keys]


def reader_for(lm: Any, cache_dir: Path | None, source: str = "the judge's LM") -> HiddenStates:
    """The hidden-state reader of ``lm``'s model; an LM that does not run a model file in this process (a server, an
    adapter applied by llama.cpp) is refused in one line: its server returns tokens and logprobs, not states."""
    engine = engine_of(lm)
    model = str(getattr(lm, "model", ""))
    path = engine.model_path
    if not engine.in_process or path is None:
        raise InputError(
            f"{source} {model}: a probe reads hidden states, which only a model in this process gives (smollm2, "
            "gemma3-270m or a .gguf path); for a server, fit P(yes) thresholds instead"
        )
    if "+lora-" in model:
        raise InputError(f"{source} {model}: a probe reads the base model's states; a LoRA adapter is not applied to them")
    return _reader(Path(path), model, cache_dir)


@functools.cache
def _reader(path: Path, model: str, cache_dir: Path | None) -> HiddenStates:
    return HiddenStates(path, model, cache_dir)


_LOADING = threading.Lock()  # transformers' lazy imports and a first load are not safe from several threads at once


def _loaded(gguf: Path) -> tuple[Any, Any, list[int], list[int]]:
    """The float32 model, its tokenizer and the ids of the single-token yes/no spellings: read once a process."""
    with _LOADING:
        return _load(gguf)


@functools.cache
def _load(gguf: Path) -> tuple[Any, Any, list[int], list[int]]:
    from bineval_dspy.core.quiet import quiet

    quiet("transformers")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from bineval_dspy.core.cores import usable_cores

    torch.set_num_threads(usable_cores())
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    model.eval()

    def single(words: Sequence[str]) -> list[int]:
        ids = [tokenizer(w, add_special_tokens=False).input_ids for w in words]
        return sorted({i[0] for i in ids if len(i) == 1})

    return model, tokenizer, single(YES_TOKENS), single(NO_TOKENS)


def _rounded(reading: Reading) -> Reading:
    """The reading as the disk keeps it (float16 states), so a computed reading and a cached one are the same."""
    return Reading(hidden=reading.hidden.astype(np.float16).astype(np.float32), gap=reading.gap)


def _walk(
    model: Any, prompts: list[list[int]], yes: list[int], no: list[int], kept: tuple[list[int], Any] | None
) -> tuple[list[Reading], tuple[list[int], Any]]:
    """Every prompt's reading, walking the token trie: the prompts' common prefix continues from the cells ``kept``
    from the last walk shares with it, a prefix shared by several prompts is evaluated once into the KV cache, each
    branch continues from it, and the cache is cropped back after the branch. Returns the readings and the root to keep for the next walk."""
    import torch
    from transformers import DynamicCache

    out: list[Reading | None] = [None] * len(prompts)

    def forward(tokens: list[int], cache: Any) -> Any:
        with torch.inference_mode():
            return model(
                input_ids=torch.tensor([tokens]), cache=cache, use_cache=True, output_hidden_states=True,
                logits_to_keep=1,
            )

    def visit(members: list[int], cache: Any, done: int) -> None:
        """Prompts ``members`` all start with the ``done`` tokens already in ``cache``: those that share more are
        continued together from the cells of what they share."""
        for part in _branches(prompts, members, done):
            if len(part) > 1:
                shared = min(len(common_prefix([prompts[i] for i in part])), min(len(prompts[i]) for i in part) - 1)
                if shared > done:
                    forward(prompts[part[0]][done:shared], cache)
                    visit(part, cache, shared)
                    _crop_to(cache, done)
                    continue
            for i in part:
                leaf(i, cache, done)

    def leaf(i: int, cache: Any, done: int) -> None:
        result = forward(prompts[i][done:], cache)
        _crop_to(cache, done)
        hidden = torch.stack([h[0, -1] for h in result.hidden_states]).float().numpy()
        logits = result.logits[0, -1].float()
        gap = float(torch.logsumexp(logits[yes], 0) - torch.logsumexp(logits[no], 0))
        out[i] = Reading(hidden=hidden, gap=gap)

    if getattr(model.config, "sliding_window", None):  # a windowed layer's cells cannot be cropped back: no sharing
        for i in range(len(prompts)):
            leaf(i, DynamicCache(), 0)
        return [r for r in out if r is not None], ([], DynamicCache())
    root = common_prefix(prompts)[: min(len(p) for p in prompts) - 1]
    old, cache = kept if kept is not None else ([], DynamicCache())
    reuse = len(common_prefix([old, root]))
    _crop_to(cache, reuse)
    if len(root) > reuse:
        forward(root[reuse:], cache)
    visit(list(range(len(prompts))), cache, len(root))
    return [r for r in out if r is not None], (root, cache)


def _crop_to(cache: Any, length: int) -> None:
    """Keep the first ``length`` positions of ``cache``."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def _branches(prompts: list[list[int]], members: list[int], at: int) -> list[list[int]]:
    """``members`` grouped by their token at position ``at``, in first-seen order."""
    groups: dict[int, list[int]] = {}
    for i in members:
        groups.setdefault(prompts[i][at], []).append(i)
    return list(groups.values())


class _Store:
    """Readings on disk: one SQLite table keyed by the model and prompt's digest, the states as float16 bytes."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        try:
            with self._connect() as db:
                db.execute("CREATE TABLE IF NOT EXISTS readings (key TEXT PRIMARY KEY, layers INT, width INT, gap REAL, hidden BLOB)")
        except sqlite3.DatabaseError as exc:  # a damaged or foreign file: say which, and what to do
            raise InputError(f"{path}: not a usable cache of hidden states ({exc}); delete it, the states are read again") from None

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=60)

    def get(self, keys: Sequence[str]) -> dict[str, Reading]:
        found: dict[str, Reading] = {}
        with self._lock, self._connect() as db:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                for key, layers, width, gap, blob in db.execute(f"SELECT key, layers, width, gap, hidden FROM readings WHERE key IN ({marks})", chunk):
                    hidden = np.frombuffer(blob, dtype=np.float16).astype(np.float32).reshape(layers, width)
                    found[key] = Reading(hidden=hidden, gap=gap)
        return found

    def put(self, readings: dict[str, Reading]) -> None:
        rows = [(k, *r.hidden.shape, r.gap, r.hidden.astype(np.float16).tobytes()) for k, r in readings.items()]
        with self._lock, self._connect() as db:
            db.executemany("INSERT OR REPLACE INTO readings VALUES (?, ?, ?, ?, ?)", rows)
