"""One request's decoding on a llama.cpp context: greedy choice under a JSON grammar, stop sequences, token
limits and logprobs read from raw logits, shared by the engine's sequential and parallel paths so both decode
alike; and the llama.cpp buffers the engine owns."""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np
from dspy.lm15 import Config, TokenLogprob, TopLogprob

os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # before llama.cpp loads (see llama_engine)
import llama_cpp

_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)


def _last_logits(llama: Any) -> np.ndarray:
    """A view of the raw logits of the last evaluated position (no copy, no grammar mask)."""
    pointer = llama._ctx.get_logits_ith(-1)
    return np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(llama.n_vocab(),))


def _logits_at(llama: Any, index: int) -> np.ndarray:
    """A copy of the raw logits of batch row ``index`` (the next decode overwrites the buffer)."""
    pointer = llama_cpp.llama_get_logits_ith(llama._ctx.ctx, index)
    return np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(llama.n_vocab(),)).copy()


def _apply_sampler(sampler: Any, candidates: np.ndarray) -> None:
    """Run a llama.cpp sampler (here: a grammar) over candidate tokens in place; rejected ones get -inf."""
    array = llama_cpp.llama_token_data_array(
        data=candidates.ctypes.data_as(llama_cpp.llama_token_data_p), size=len(candidates), selected=-1, sorted=False
    )
    llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))


class _OwnedBatch:
    """A llama_batch this engine allocated (one sequence id per token), freed with the model."""

    def __init__(self, n_tokens: int) -> None:
        self.batch = llama_cpp.llama_batch_init(n_tokens, 0, 1)

    def close(self) -> None:
        if self.batch is not None:
            llama_cpp.llama_batch_free(self.batch)
            self.batch = None


class _Decoding:
    """One request's generation state: grammar, stop sequences, token limit, logprobs. Shared by the sequential
    and the parallel paths, so both stop, mask and account exactly alike."""

    def __init__(self, llama: Any, config: Config, grammar: Any, greedy: bool) -> None:
        self.llama = llama
        self.max_tokens = config.max_tokens or 256
        self.top_n = None if config.logprobs is None else int(config.logprobs)
        self.stops = [config.stop] if isinstance(config.stop, str) else list(config.stop or [])
        self.out: list[int] = []
        self.logprobs: list[TokenLogprob] = []
        self.finish = "length"
        self.text: str | None = None
        vocab = llama._model.vocab
        self.check = (
            llama_cpp.llama_sampler_init_grammar(vocab, grammar._grammar.encode(), grammar._root.encode())
            if grammar is not None and greedy
            else None
        )
        self._one = np.zeros(1, dtype=_TOKEN_DATA)

    def choose(self, logits: np.ndarray) -> int:
        """The greedy token: the grammar is asked about the best raw token first, and masks the whole vocabulary
        only when it rejects it (the same tokens as masking every step, at a fraction of the cost)."""
        token = int(np.argmax(logits))
        if self.check is not None:
            self._one[0] = (token, 0.0, 0.0)
            _apply_sampler(self.check, self._one)
            if not np.isfinite(self._one[0]["logit"]):
                allowed = np.zeros(len(logits), dtype=_TOKEN_DATA)
                allowed["id"] = np.arange(len(logits))
                allowed["logit"] = logits
                _apply_sampler(self.check, allowed)
                token = int(allowed["id"][np.argmax(allowed["logit"])])
            llama_cpp.llama_sampler_accept(self.check, token)
        return token

    def accept(self, token: int, logits: np.ndarray) -> bool:
        """Record ``token`` (produced from ``logits``); False once generation is over."""
        llama = self.llama
        if llama_cpp.llama_vocab_is_eog(llama._model.vocab, token):
            self.finish = "stop"
            return False
        if self.top_n is not None:
            self.logprobs.append(_token_logprob(llama, logits, token, self.top_n))
        self.out.append(token)
        if self.stops:  # decoding every step only matters when a stop sequence may appear
            text = llama.detokenize(self.out).decode("utf-8", "ignore")
            hit = next((s for s in self.stops if s and s in text), None)
            if hit:
                self.text, self.finish = text[: text.index(hit)], "stop"
                return False
        return len(self.out) < self.max_tokens

    def result(self) -> tuple[str, int, tuple | None, str]:
        text = self.text if self.text is not None else self.llama.detokenize(self.out).decode("utf-8", "ignore")
        return text, len(self.out), (tuple(self.logprobs) if self.top_n is not None else None), self.finish

    def close(self) -> None:
        if self.check is not None:
            llama_cpp.llama_sampler_free(self.check)
            self.check = None


def _token_logprob(llama: Any, logits: np.ndarray, token: int, top_n: int) -> TokenLogprob:
    """Log-softmax of the raw logits that produced ``token`` (before any grammar mask)."""
    shifted = logits - logits.max()
    log_probs = shifted - np.log(np.exp(shifted).sum())
    best = np.argpartition(-log_probs, top_n)[:top_n]
    best = best[np.argsort(-log_probs[best])]

    def piece(t: int) -> str:
        return llama.detokenize([int(t)]).decode("utf-8", "ignore")

    return TokenLogprob(
        token=piece(token),
        logprob=float(log_probs[token]),
        top=tuple(TopLogprob(token=piece(t), logprob=float(log_probs[t])) for t in best),
    )
