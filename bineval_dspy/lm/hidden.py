"""What an embedded model *reads* at the answer position, instead of what it says: the hidden state of every layer at
the last prompt token, the mean state over named spans of the prompt (the output's tokens, the question's), and the
yes/no logit gap at the last token.

A 135M judge answers "yes" to nearly everything, yet its hidden state still separates the outputs a strong judge
passes from those it fails (a linear probe reads it: ``judges.probe``). One forward pass and no decoding gives both
features; the span means come from the same pass (``pool`` turns per-token states into them, so another backend that
returns per-token states of every layer plugs in there). The GGUF model is read by transformers (dequantized to float32: the same weights the embedded engine runs,
rounded otherwise), since llama.cpp returns one layer only and the layer is chosen on validation.

Prompts come in groups that share a prefix (one output's questions; one article's summaries): the prefix is
evaluated once and every branch continues from its KV cells (a walk of the prompts' token trie), so a group of
twelve questions costs little more than one, and the next group starts from the cells it shares with the last (an
article's sixteen summaries judged one after another read the article once). A span that lies in a shared prefix (the
output, before its questions) is pooled from the states kept for that prefix's positions. Features are cached on disk
per model file, prompt and spans, like any LM call: a rerun computes nothing again.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import digest
from bineval_dspy.lm._batching import common_prefix
from bineval_dspy.lm.engine import engine_of

YES_TOKENS = ("yes", "Yes", " yes", " Yes", "YES")
NO_TOKENS = ("no", "No", " no", " No", "NO")
FORMAT = 3  # what a cached reading holds, part of every key: 2 added span means (1 held the last token only); 3 drops
# readings format 2 cached whose last-token state a later prompt of the same walk could overwrite (fixed in pool)
Span = tuple[int, int]  # [start, end): characters of a prompt, or tokens once mapped


@dataclass(frozen=True)
class Reading:
    """One prompt's features: the hidden state of every layer (0: the embeddings) at its last token, the yes/no
    logit gap there (log-sum-exp of the yes spellings minus that of the no spellings), and each named span's mean
    state over its tokens (``pooled``: name -> (layers + 1, width))."""

    hidden: np.ndarray  # (layers + 1, width), float32
    gap: float
    pooled: Mapping[str, np.ndarray] = field(default_factory=dict)

    def states(self, pooling: str) -> np.ndarray:
        """Every layer's state pooled as ``pooling`` ("last", or a span's name); a span the prompt was read without
        is an error (a head that needs it gives no verdict), never zeros."""
        if pooling == "last":
            return self.hidden
        if pooling not in self.pooled:
            raise InputError(f"this reading has no {pooling!r} span (read with: {', '.join(['last', *self.pooled])})")
        return self.pooled[pooling]


def pool(states: np.ndarray, spans: Mapping[str, Span]) -> dict[str, np.ndarray]:
    """Per-token states of every layer ``(layers + 1, tokens, width)`` as the last token's (``"last"``) and each
    span's mean over its tokens ``[start, end)``: a pure function, so any backend that returns per-token states
    (transformers here, llama.cpp's evaluation callback) pools the same way. An empty span is refused. Every array
    is a copy: the torch walk reuses one buffer, and a later branch's rows must not change an earlier reading."""
    out = {"last": np.array(states[:, -1], dtype=np.float32)}
    for name, (start, end) in spans.items():
        if not 0 <= start < end <= states.shape[1]:
            raise InputError(f"span {name!r}: tokens [{start}, {end}) are not inside the prompt's {states.shape[1]}")
        out[name] = states[:, start:end].mean(axis=1, dtype=np.float64).astype(np.float32)
    return out


def token_spans(offsets: Sequence[tuple[int, int]], spans: Mapping[str, Span]) -> dict[str, Span]:
    """Character spans as token spans: the tokens whose characters overlap the span (``offsets``: each token's
    characters, as a fast tokenizer's offset mapping gives them). A span no token overlaps is left out."""
    out = {}
    for name, (start, end) in spans.items():
        inside = [k for k, (a, b) in enumerate(offsets) if a < end and b > start and b > a]
        if inside:
            out[name] = (inside[0], inside[-1] + 1)
    return out


Backend = Literal["torch", "llama"]
BACKENDS: tuple[Backend, ...] = ("torch", "llama")


class HiddenStates:
    """Reads ``Reading``s of prompts from a GGUF model in this process, cached in ``cache_dir`` (None: not kept).

    ``backend``: "torch" runs transformers on the dequantized float32 weights (a second model beside the engine);
    "llama" reads llama.cpp's own quantized forward pass (``lm.llama_states``), so a verdict costs the engine's prefill.
    The two agree closely but not bit for bit, so the backend is part of every cache key (torch's keys keep the shape
    they had before there was a choice: only ``FORMAT`` moves them) and a head records the one it was trained on."""

    def __init__(self, gguf: Path, model: str, cache_dir: Path | None = None, backend: Backend = "torch") -> None:
        if backend not in BACKENDS:
            raise InputError(f"hidden-state backend {backend!r}: one of {', '.join(BACKENDS)}")
        self.gguf = gguf
        self.model = model  # the model string (it names the file's digest): part of every cache key
        self.backend = backend
        self._lock = threading.Lock()
        self._store = _Store(cache_dir / "hidden.sqlite") if cache_dir is not None else None
        self.computed = 0  # prompts evaluated (not read from the cache) by this reader
        self._kept: _Kept | None = None  # the last walk's root: its tokens, KV cache and states
        self._llama: Any = None  # the llama backend's LlamaStates, made on the first read

    def tokenizer(self) -> Any:
        if self.backend == "llama":  # transformers' tokenizer only: no float32 model beside the engine
            from bineval_dspy.lm.llama_states import tokenizer_of

            return tokenizer_of(self.gguf)
        return _loaded(self.gguf)[1]

    def depth(self) -> int:
        """The model's layers (a reading holds depth + 1 states: the embeddings, then each layer's)."""
        if self.backend == "llama":
            return int(self._llama_states().depth())
        return int(_loaded(self.gguf)[0].config.num_hidden_layers)

    @property
    def evaluated(self) -> int:
        """Prompt tokens llama.cpp evaluated for this reader (the llama backend; torch's walk does not count them)."""
        return int(self._llama.evaluated) if self._llama is not None else 0

    def key(self, prompt: str, spans: Mapping[str, Span]) -> str:
        """The cache key of a prompt's reading: format, model, backend (torch's left out), spans and text."""
        backend = "" if self.backend == "torch" else f"backend {self.backend}\n"
        return digest(f"{FORMAT}\n{self.model}\n{backend}{json.dumps(sorted(spans.items()))}\n{prompt}")

    def read(self, prompts: Sequence[str], spans: Sequence[Mapping[str, Span]] | None = None) -> list[Reading]:
        """The readings of ``prompts`` (rendered text, specials included), in order; shared prefixes evaluated once.
        ``spans``: per prompt, named character spans whose mean states the reading also holds."""
        marks = [dict(s) for s in spans] if spans is not None else [{} for _ in prompts]
        keys = [self.key(p, m) for p, m in zip(prompts, marks)]
        found = self._store.get(keys) if self._store is not None else {}
        todo = sorted({k: (p, m) for k, p, m in zip(keys, prompts, marks) if k not in found}.items())
        if todo:
            with self._lock:
                if self.backend == "llama":
                    todo.sort(key=lambda item: item[1][0])  # by text: prompts sharing a prefix one after another
                    readings = self._read_llama([p for _, (p, _) in todo], [m for _, (_, m) in todo])
                else:
                    model, tokenizer, yes, no = _loaded(self.gguf)
                    encoded = [_encode(tokenizer, p, m) for _, (p, m) in todo]
                    readings, self._kept = _walk(model, [e[0] for e in encoded], [e[1] for e in encoded], yes, no, self._kept)
                self.computed += len(todo)
            new = {key: _rounded(r) for (key, _), r in zip(todo, readings)}
            if self._store is not None:
                self._store.put(new)
            found = {**found, **new}
        return [found[k] for k in keys]

    def _llama_states(self) -> Any:
        if self._llama is None:
            from bineval_dspy.lm.llama_states import LlamaStates

            self._llama = LlamaStates(self.gguf)
        return self._llama

    def _read_llama(self, prompts: list[str], spans: list[dict[str, Span]]) -> list[Reading]:
        """Each prompt's reading from llama.cpp on the tokens ``_encode`` gives (the spans are counted in them).
        Prompts without spans go through ``last_states``: their shared context evaluated once, their tails side by
        side. A prompt with spans is read alone with every token's final layer asked, continuing from the cells it
        shares with the last call, so one output's questions still evaluate the output once."""
        states, tokenizer = self._llama_states(), self.tokenizer()
        yes, no = states.token_ids(YES_TOKENS), states.token_ids(NO_TOKENS)

        def reading(per_layer: np.ndarray, logits: np.ndarray, pooled: dict[str, np.ndarray]) -> Reading:
            gap = np.logaddexp.reduce(logits[yes].astype(np.float64)) - np.logaddexp.reduce(logits[no].astype(np.float64))
            return Reading(hidden=np.array(per_layer, dtype=np.float32), gap=float(gap), pooled=pooled)

        encoded = [_encode(tokenizer, p, m) for p, m in zip(prompts, spans)]
        out: dict[int, Reading] = {}
        plain = [i for i, (_, marks) in enumerate(encoded) if not marks]
        for i, (per_layer, logits) in zip(plain, states.last_states([encoded[i][0] for i in plain]) if plain else []):
            out[i] = reading(per_layer, logits, {})
        for i, (tokens, marks) in enumerate(encoded):
            if marks:
                per_token, logits = states.states(tokens, every_output=True)
                pooled = pool(per_token, marks)
                out[i] = reading(pooled.pop("last"), logits, pooled)
        return [out[i] for i in range(len(prompts))]


def reader_for(lm: Any, cache_dir: Path | None, source: str = "the judge's LM", backend: Backend = "torch") -> HiddenStates:
    """The hidden-state reader of ``lm``'s model through ``backend`` (a head is read through the one it was trained
    on); an LM that does not run a model file in this process (a server, an adapter applied by llama.cpp) is refused
    in one line: its server returns tokens and logprobs, not states."""
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
    return _reader(Path(path), model, cache_dir, backend)


@functools.cache
def _reader(path: Path, model: str, cache_dir: Path | None, backend: Backend) -> HiddenStates:
    return HiddenStates(path, model, cache_dir, backend)


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


def _encode(tokenizer: Any, prompt: str, spans: Mapping[str, Span]) -> tuple[list[int], dict[str, Span]]:
    """The prompt's token ids and its spans in tokens: from the offset mapping a fast tokenizer gives, else by
    counting the tokens of the text before each span's ends (exact but at a boundary a merge straddles)."""
    try:
        encoded = tokenizer(prompt, add_special_tokens=False, return_offsets_mapping=True)
        return list(encoded.input_ids), token_spans(encoded.offset_mapping, spans)
    except NotImplementedError:  # a slow tokenizer: no offsets
        ids = tokenizer(prompt, add_special_tokens=False).input_ids
        count = lambda end: len(tokenizer(prompt[:end], add_special_tokens=False).input_ids)  # noqa: E731
        found = {name: (count(a), count(b)) for name, (a, b) in spans.items()}
        return list(ids), {name: (a, b) for name, (a, b) in found.items() if a < b}


def _rounded(reading: Reading) -> Reading:
    """The reading as the disk keeps it (float16 states), so a computed reading and a cached one are the same."""
    half = lambda a: a.astype(np.float16).astype(np.float32)  # noqa: E731
    return Reading(hidden=half(reading.hidden), gap=reading.gap, pooled={k: half(v) for k, v in reading.pooled.items()})


class _Kept:
    """What one walk leaves to the next: the root's tokens, their KV cells, and every position's states of every layer
    written so far (``states[:, k]``: position k; a position past the root is overwritten by the next branch)."""

    def __init__(self, root: list[int], cache: Any, states: np.ndarray) -> None:
        self.root, self.cache, self.states = root, cache, states


def _walk(
    model: Any, prompts: list[list[int]], spans: list[dict[str, Span]], yes: list[int], no: list[int], kept: _Kept | None
) -> tuple[list[Reading], _Kept]:
    """Every prompt's reading, walking the token trie: the prompts' common prefix continues from the cells ``kept``
    from the last walk shares with it, a prefix shared by several prompts is evaluated once into the KV cache, each
    branch continues from it, and the cache is cropped back after the branch. Each forward writes its tokens' states
    into one buffer at their positions, so a leaf pools its whole prompt (prefix included) from it without copying.
    Returns the readings and what to keep for the next walk."""
    import torch
    from transformers import DynamicCache

    out: list[Reading | None] = [None] * len(prompts)
    config = model.config
    longest = max(len(p) for p in prompts)
    shape = (config.num_hidden_layers + 1, 0, config.hidden_size)
    states = kept.states if kept is not None else np.zeros(shape, dtype=np.float32)
    if states.shape[1] < longest:  # grow the buffer, keeping the positions the kept root wrote
        grown = np.zeros((shape[0], max(longest, 2 * states.shape[1]), shape[2]), dtype=np.float32)
        grown[:, : states.shape[1]] = states
        states = grown

    def forward(tokens: list[int], cache: Any, at: int) -> Any:
        with torch.inference_mode():
            result = model(
                input_ids=torch.tensor([tokens]), cache=cache, use_cache=True, output_hidden_states=True,
                logits_to_keep=1,
            )
            states[:, at : at + len(tokens)] = torch.stack([h[0] for h in result.hidden_states]).float().numpy()
        return result

    def visit(members: list[int], cache: Any, done: int) -> None:
        """Prompts ``members`` all start with the ``done`` tokens already in ``cache``: those that share more are
        continued together from the cells of what they share."""
        for part in _branches(prompts, members, done):
            if len(part) > 1:
                shared = min(len(common_prefix([prompts[i] for i in part])), min(len(prompts[i]) for i in part) - 1)
                if shared > done:
                    forward(prompts[part[0]][done:shared], cache, done)
                    visit(part, cache, shared)
                    _crop_to(cache, done)
                    continue
            for i in part:
                leaf(i, cache, done)

    def leaf(i: int, cache: Any, done: int) -> None:
        result = forward(prompts[i][done:], cache, done)
        _crop_to(cache, done)
        pooled = pool(states[:, : len(prompts[i])], spans[i])
        logits = result.logits[0, -1].float()
        gap = float(torch.logsumexp(logits[yes], 0) - torch.logsumexp(logits[no], 0))
        out[i] = Reading(hidden=pooled.pop("last"), gap=gap, pooled=pooled)

    if getattr(config, "sliding_window", None):  # a windowed layer's cells cannot be cropped back: no sharing
        for i in range(len(prompts)):
            leaf(i, DynamicCache(), 0)
        return [r for r in out if r is not None], _Kept([], DynamicCache(), states)
    root = common_prefix(prompts)[: min(len(p) for p in prompts) - 1]
    old, cache = (kept.root, kept.cache) if kept is not None else ([], DynamicCache())
    reuse = len(common_prefix([old, root]))
    _crop_to(cache, reuse)
    if len(root) > reuse:
        forward(root[reuse:], cache, reuse)
    visit(list(range(len(prompts))), cache, len(root))
    return [r for r in out if r is not None], _Kept(root, cache, states)


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
    """Readings on disk: one SQLite table keyed by the model, spans and prompt's digest; the last token's states and
    each span's mean, stacked, as float16 bytes (format 1's table, ``readings``, is left as it was and not read)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        try:
            with self._connect() as db:
                db.execute("CREATE TABLE IF NOT EXISTS pooled (key TEXT PRIMARY KEY, layers INT, width INT, gap REAL, names TEXT, states BLOB)")
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
                query = f"SELECT key, layers, width, gap, names, states FROM pooled WHERE key IN ({marks})"
                for key, layers, width, gap, names, blob in db.execute(query, chunk):
                    stacked = np.frombuffer(blob, dtype=np.float16).astype(np.float32).reshape(-1, layers, width)
                    spans = [n for n in names.split(",") if n]
                    found[key] = Reading(hidden=stacked[0], gap=gap, pooled=dict(zip(spans, stacked[1:])))
        return found

    def put(self, readings: dict[str, Reading]) -> None:
        rows = [
            (k, *r.hidden.shape, r.gap, ",".join(r.pooled), np.stack([r.hidden, *r.pooled.values()]).astype(np.float16).tobytes())
            for k, r in readings.items()
        ]
        with self._lock, self._connect() as db:
            db.executemany("INSERT OR REPLACE INTO pooled VALUES (?, ?, ?, ?, ?, ?)", rows)
