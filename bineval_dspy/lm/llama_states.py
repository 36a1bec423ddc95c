"""Every layer's hidden state of a prompt, read from llama.cpp's own quantized forward pass in this process.

Why: the torch reader (``lm.hidden``) dequantizes the GGUF to float32 and runs a second model beside the engine,
which made a probe verdict cost more than a generated one. llama.cpp computes the same states anyway; its
scheduler's evaluation callback (``cb_eval``) asks, node by node, whether we want a tensor and then hands it over
once computed. We ask for the token embeddings (``embd``), each layer's output (``l_out-<il>``) and the final
norm (``result_norm``), so one prefill gives what transformers' ``output_hidden_states`` gives: depth + 1 states per
token, index 0 the embeddings and the last one normed (transformers replaces its last state by the normed one).

The contract of ``states``: positions ``first`` to the end of ``tokens``, every layer, float32. Prompts of one
output share everything before the question, so the context keeps the KV cells *and the states* of the longest
prefix it shares with the last call: only the tail is evaluated, the prefix's rows are copied from memory. The
final layer is the exception llama.cpp makes: its last block runs on the rows that produce logits only, so with
``every_output=False`` (the cheap default) the last layer's row is filled at the last token only and is NaN at every
other position (an average over it is NaN, never a silent number); ``every_output=True`` asks logits at every
evaluated token (the lm_head on each, about a quarter more work) and fills it everywhere.

``last_states`` is the probe's cheap path: one output's prompts share its context, which is evaluated once on
sequence 0, and the questions' tails are decoded side by side in one batch, each on a sequence copied from those
cells (a unified KV cache: copying tags cells, and a batch's rows keep their order), as the one-token verdict does.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np

from bineval_dspy.core.cores import usable_cores
from bineval_dspy.core.quiet import quiet
from bineval_dspy.lm._batching import common_prefix

SEQUENCES = 16  # prompt tails decoded side by side at most, each its own sequence beside sequence 0
CHUNK = 512  # tokens per decode: one llama.cpp micro-batch, so each callback sees one chunk's rows in order
EMBEDDINGS = "embd"  # the token embeddings (``inp_embd`` names the vector-input path llama.cpp leaves unused)
LAYER = "l_out-"
FINAL = "result_norm"
quiet("llama_cpp")  # loading a model or making a context may log


def _ggml() -> Any:
    """libggml-base, the loaded copy the llama.cpp bindings use: its accessors read a tensor without ctypes mirrors
    of ``struct ggml_tensor`` (whose layout changes between ggml versions)."""
    lib = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so"))
    lib.ggml_get_name.argtypes, lib.ggml_get_name.restype = [ctypes.c_void_p], ctypes.c_char_p
    lib.ggml_nelements.argtypes, lib.ggml_nelements.restype = [ctypes.c_void_p], ctypes.c_int64
    lib.ggml_nrows.argtypes, lib.ggml_nrows.restype = [ctypes.c_void_p], ctypes.c_int64
    lib.ggml_nbytes.argtypes, lib.ggml_nbytes.restype = [ctypes.c_void_p], ctypes.c_size_t
    lib.ggml_is_contiguous.argtypes, lib.ggml_is_contiguous.restype = [ctypes.c_void_p], ctypes.c_bool
    lib.ggml_backend_tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
    lib.ggml_backend_tensor_get.restype = None
    return lib


class LlamaStates:
    """Reads per-token hidden states of prompts from a GGUF model with llama.cpp; one lock serializes its context."""

    def __init__(self, gguf: Path, *, n_ctx: int = 4096, n_threads: int | None = None, flash_attn: bool = True) -> None:
        from llama_cpp._internals import LlamaBatch, LlamaContext, LlamaModel

        self.gguf = Path(gguf)
        self._lock = threading.Lock()
        self._lib = _ggml()
        self._model = LlamaModel(path_model=str(self.gguf), params=llama_cpp.llama_model_default_params(), verbose=False)
        self._layers = int(llama_cpp.llama_model_n_layer(self._model.model))
        self._width = int(self._model.n_embd())
        self._wanted = {EMBEDDINGS: 0, FINAL: self._layers, **{f"{LAYER}{il}": il + 1 for il in range(self._layers - 1)}}
        self._rows: dict[int, np.ndarray] = {}  # layer index -> the current chunk's rows, filled by the callback
        self._failure = ""  # why the callback could not read a tensor (raised after the decode)
        self._callback = llama_cpp.ggml_backend_sched_eval_callback(self._on_tensor)  # held: C keeps the pointer
        params = llama_cpp.llama_context_default_params()
        threads = n_threads or usable_cores()
        params.n_ctx, params.n_batch, params.n_ubatch = n_ctx, CHUNK, CHUNK
        params.n_threads, params.n_threads_batch = threads, threads
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash_attn else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        params.cb_eval, params.cb_eval_user_data = self._callback, None
        params.n_seq_max, params.kv_unified = SEQUENCES + 1, True  # one stream: a batch's rows stay in their order
        self._ctx = LlamaContext(model=self._model, params=params, verbose=False)
        self._batch = LlamaBatch(n_tokens=CHUNK, embd=0, n_seq_max=1, verbose=False)
        self._memory = llama_cpp.llama_get_memory(self._ctx.ctx)
        self.n_ctx = n_ctx
        self._kept: list[int] = []  # the tokens whose KV cells sequence 0 holds
        self._buffer = np.empty((self._layers + 1, 0, self._width), np.float32)  # their states, then spare rows
        self.evaluated = 0  # tokens evaluated (not reused from the kept prefix): what a caller's cost is

    def depth(self) -> int:
        """The model's layers (a position holds depth + 1 states: the embeddings, then each layer's)."""
        return self._layers

    def tokenize(self, text: str) -> list[int]:
        """Tokens of a rendered prompt, special tokens parsed and no BOS added (as the engine tokenizes)."""
        return list(self._model.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def token_ids(self, words: Sequence[str]) -> list[int]:
        """The ids of those ``words`` that are one token each (the yes/no spellings a logit gap compares)."""
        return sorted({ids[0] for ids in (self.tokenize(w) for w in words) if len(ids) == 1})

    def states(self, tokens: Sequence[int], first: int = 0, *, every_output: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(states of positions ``first``.. of ``tokens``: (depth + 1, n, width) float32; the last token's logits).

        Only the part after the prefix shared with the previous call is evaluated; the final layer's row is NaN
        before the last token unless ``every_output`` (see the module docstring)."""
        tokens = list(tokens)
        if not tokens or not 0 <= first < len(tokens):
            raise ValueError(f"states of positions {first}.. of a prompt of {len(tokens)} tokens")
        if len(tokens) > self.n_ctx:
            raise ValueError(f"a prompt of {len(tokens)} tokens exceeds the reader's context of {self.n_ctx}")
        with self._lock:
            # the last token is always evaluated: its logits are returned; with every_output, the prefix kept must
            # carry a final layer everywhere too, which a cheap call's NaN rows do not
            keep = min(len(common_prefix([self._kept, tokens])), len(tokens) - 1)
            if every_output and keep and np.isnan(self._buffer[-1, :keep]).any():
                keep = 0
            llama_cpp.llama_memory_seq_rm(self._memory, 0, keep, -1)
            self._kept = tokens[:keep]  # what the cells hold, whatever the decodes below do
            self._grow(len(tokens))
            logits = np.empty(0, np.float32)
            for start in range(keep, len(tokens), CHUNK):
                chunk = tokens[start : start + CHUNK]
                self._buffer[:, start : start + len(chunk)], logits = self._decode(chunk, start, every_output, start + CHUNK >= len(tokens))
                self._kept = tokens[: start + len(chunk)]
            self.evaluated += len(tokens) - keep
            return self._buffer[:, first : len(tokens)].copy(), logits

    def last_states(self, prompts: Sequence[Sequence[int]]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each prompt's last-token states (depth + 1, width) and logits, the prompts' common prefix evaluated once
        (continuing from the kept cells) and their tails decoded side by side, SEQUENCES at a time, each on its own
        sequence copied from the prefix's cells: one output's questions cost one prefill and one batched pass."""
        lists = [list(p) for p in prompts]
        if not lists or not all(lists):
            raise ValueError("states of an empty prompt")
        root = common_prefix(lists)[: min(map(len, lists)) - 1]
        out: list[tuple[np.ndarray, np.ndarray]] = []
        for start in range(0, len(lists), SEQUENCES):
            if root:
                self.states(root)  # the shared context on sequence 0, kept for the next call
            with self._lock:
                if not root:  # nothing shared: no stale cells may reach the tails
                    llama_cpp.llama_memory_seq_rm(self._memory, 0, 0, -1)
                    self._kept = []
                out += self._tails(lists[start : start + SEQUENCES], len(root))
        return out

    def _tails(self, prompts: list[list[int]], done: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Decode every prompt's tokens from ``done`` on, prompt i on sequence i + 1 (its cells dropped after)."""
        rows = [(t, done + j, seq, j == len(p) - done - 1) for seq, p in enumerate(prompts, 1) for j, t in enumerate(p[done:])]
        found: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # sequence -> its last token's states and logits
        try:
            for seq in range(1, len(prompts) + 1):
                llama_cpp.llama_memory_seq_cp(self._memory, 0, seq, -1, -1)
            batch = self._batch.batch
            for begin in range(0, len(rows), CHUNK):
                chunk = rows[begin : begin + CHUNK]
                for k, (token, position, seq, last) in enumerate(chunk):
                    batch.token[k], batch.pos[k], batch.n_seq_id[k], batch.logits[k] = token, position, 1, last
                    batch.seq_id[k][0] = seq
                batch.n_tokens = len(chunk)
                self._rows, self._failure = {}, ""
                status = llama_cpp.llama_decode(self._ctx.ctx, batch)
                if status != 0 or self._failure or len(self._rows) != self._layers + 1:
                    raise RuntimeError(self._failure or f"llama_decode failed ({status}) on a batch of {len(chunk)} tails' tokens")
                ends = [k for k, row in enumerate(chunk) if row[3]]
                for n, k in enumerate(ends):  # the final layer holds the logits rows only, in batch order
                    states = np.stack([self._rows[layer][k] for layer in range(self._layers)] + [self._rows[self._layers][n]])
                    pointer = llama_cpp.llama_get_logits_ith(self._ctx.ctx, k)
                    found[chunk[k][2]] = (states, np.ctypeslib.as_array(pointer, shape=(self._model.n_vocab(),)).copy())
            self.evaluated += len(rows)
        finally:
            for seq in range(1, len(prompts) + 1):
                llama_cpp.llama_memory_seq_rm(self._memory, seq, -1, -1)
        return [found[seq] for seq in range(1, len(prompts) + 1)]

    def _grow(self, rows: int) -> None:
        """Room for ``rows`` positions' states (doubling, so a growing prompt copies the kept states rarely)."""
        if rows > self._buffer.shape[1]:
            size = max(rows, 2 * self._buffer.shape[1], 256)
            grown = np.empty((self._layers + 1, size, self._width), np.float32)
            grown[:, : len(self._kept)] = self._buffer[:, : len(self._kept)]
            self._buffer = grown

    def _decode(self, chunk: list[int], position: int, every_output: bool, last: bool) -> tuple[np.ndarray, np.ndarray]:
        """One micro-batch: its states (final layer at the output rows only) and its last token's logits."""
        self._rows, self._failure = {}, ""
        self._batch.set_batch(chunk, n_past=position, logits_all=every_output)
        status = llama_cpp.llama_decode(self._ctx.ctx, self._batch.batch)
        if status != 0:
            raise RuntimeError(f"llama_decode failed ({status}) on {len(chunk)} tokens at position {position}")
        if self._failure:
            raise RuntimeError(self._failure)
        missing = sorted(set(range(self._layers + 1)) - set(self._rows))
        if missing:
            raise RuntimeError(f"llama.cpp handed out no state for layer(s) {missing} of {self.gguf.name}")
        out = np.full((self._layers + 1, len(chunk), self._width), np.nan, np.float32)
        for layer, rows in self._rows.items():
            if layer < self._layers or every_output:
                out[layer] = rows
            elif last:
                out[layer, -1] = rows[-1]  # llama.cpp asks logits at a chunk's end: kept at the prompt's only
        pointer = llama_cpp.llama_get_logits_ith(self._ctx.ctx, -1)
        logits = np.ctypeslib.as_array(pointer, shape=(self._model.n_vocab(),)).copy()
        return out, logits

    def _on_tensor(self, tensor: int, ask: bool, _user: Any) -> bool:
        """llama.cpp's scheduler callback: asked whether a node is wanted (its name), then handed the computed node.
        Returning True goes on computing; an exception must not cross into C, so a failure is noted instead."""
        try:
            name = (self._lib.ggml_get_name(tensor) or b"").decode()
            layer = self._wanted.get(name)
            if ask or layer is None:
                return layer is not None
            rows, count = int(self._lib.ggml_nrows(tensor)), int(self._lib.ggml_nelements(tensor))
            if count != rows * self._width or self._lib.ggml_nbytes(tensor) != 4 * count or not self._lib.ggml_is_contiguous(tensor):
                self._failure = f"{name}: not a contiguous float32 tensor of width {self._width} ({count} elements in {rows} rows)"
                return True
            data = np.empty((rows, self._width), np.float32)
            self._lib.ggml_backend_tensor_get(tensor, data.ctypes.data, 0, data.nbytes)
            self._rows[layer] = data
        except Exception as exc:  # pragma: no cover - a ctypes failure; reported by _decode, never swallowed
            self._failure = f"reading a llama.cpp tensor failed: {exc}"
        return True

    def close(self) -> None:
        """Free the context, the batch and the weights (the object is unusable after)."""
        with self._lock:
            self._batch.close()
            self._ctx.close()
            self._model.close()


_LOADING = threading.Lock()  # transformers' lazy imports are not safe from several threads at once


def tokenizer_of(gguf: Path) -> Any:
    """transformers' tokenizer of the GGUF, loaded once a process (the probe's prompts are rendered by it)."""
    with _LOADING:
        return _tokenizer(Path(gguf))


@functools.cache
def _tokenizer(gguf: Path) -> Any:
    """transformers' tokenizer of the GGUF (its chat template renders the probe's prompts), without the model."""
    quiet("transformers")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
