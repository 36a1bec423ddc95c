"""One request's decoding on a llama.cpp context: greedy choice or seeded sampling under a JSON grammar, stop
sequences, token limits and logprobs read from raw logits, shared by the engine's sequential and parallel paths so
both decode alike; and what the engine owns of llama.cpp: its batch buffers, the rows decoded through them
(``decode_rows``), and every model loaded, closed at exit (``loaded``)."""

from __future__ import annotations

import atexit
import ctypes
import weakref
from typing import Any

import llama_cpp
import numpy as np
from dspy.lm15 import Config, Message, Request, Response, TokenLogprob, TopLogprob, Usage

from bineval_dspy.enforce.runtime import END, Steerer

MAX_TOKENS = 256  # a reply's token limit when a request names none

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


class Sampler:
    """Seeded temperature sampling with top-k, top-p and min-p (llama.cpp's defaults: 40, 0.95, 0.05).

    Our own rather than llama.cpp's sampler chain, which lives in the context and serves one sequence: here a
    sample's tokens depend only on its logits and its seed, so the samples of one prompt decoded side by side are
    the tokens each would get alone (tested).
    """

    def __init__(self, config: Config) -> None:
        self.temperature = float(config.temperature or 0.0)
        self.top_k = config.top_k or 40
        self.top_p = config.top_p if config.top_p is not None else 0.95
        self.min_p = 0.05
        self.rng = np.random.default_rng(config.seed if config.seed is not None else None)

    def draw(self, logits: np.ndarray) -> int:
        """One token from ``logits`` (raw; a grammar's rejected tokens at -inf)."""
        k = min(self.top_k, int(np.isfinite(logits).sum())) or 1
        best = np.argpartition(-logits, k - 1)[:k]
        best = best[np.argsort(-logits[best], kind="stable")]
        scaled = logits[best].astype(np.float64) / self.temperature
        p = np.exp(scaled - scaled[0])
        p /= p.sum()
        keep = p >= self.min_p * p[0]
        keep &= np.concatenate(([True], np.cumsum(p)[:-1] < self.top_p))  # the smallest head reaching top_p
        p = np.where(keep, p, 0.0)
        cumulative = np.cumsum(p / p.sum())
        return int(best[min(int(np.searchsorted(cumulative, self.rng.random(), side="right")), k - 1)])


class _Decoding:
    """One request's generation state: grammar, sampler, stop sequences, token limit, logprobs and, when the
    request carries constraints to enforce, their ``Steerer``. Shared by the sequential and the parallel paths, so
    both stop, mask and account exactly alike.

    What the engine evaluates after each step is ``feed()``: the kept token, followed by any text the steerer
    forces (its tokens in the same batch); after an end of text the steerer turned into forced text, only that."""

    def __init__(self, llama: Any, config: Config, grammar: Any, greedy: bool, steer: Steerer | None = None) -> None:
        self.llama = llama
        self.max_tokens = config.max_tokens or MAX_TOKENS
        self.top_n = None if config.logprobs is None else int(config.logprobs)
        self.stops = [config.stop] if isinstance(config.stop, str) else list(config.stop or [])
        self.out: list[int] = []
        self.logprobs: list[TokenLogprob] = []
        self.finish = "length"
        self.text: str | None = None
        vocab = llama._model.vocab
        self.check = (
            llama_cpp.llama_sampler_init_grammar(vocab, grammar._grammar.encode(), grammar._root.encode())
            if grammar is not None
            else None
        )
        self.sampler = None if greedy else Sampler(config)
        self._one = np.zeros(1, dtype=_TOKEN_DATA)
        self.steer = steer
        self._feed: list[int] = []

    def start(self) -> list[int]:
        """The tokens of the text the reply is forced to open with (none without a steerer)."""
        return self._forced(self.steer.start()) if self.steer is not None else []

    def _forced(self, text: str | None) -> list[int]:
        return self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=False) if text else []

    def feed(self) -> list[int]:
        """What to evaluate before the next step (see the class docstring)."""
        return self._feed

    def choose(self, logits: np.ndarray) -> int:
        """The next token: greedy, or drawn by the sampler. Under a steerer, from the logits its masks leave, and
        the next best while it refuses the best (a refused token is masked for this step). Greedy asks the grammar
        about the best raw token first and masks the whole vocabulary only when it rejects it (the same tokens as
        masking every step, at a fraction of the cost); a sample is drawn from the masked vocabulary."""
        if self.steer is None:
            token = self._pick(logits)
        else:
            # an empty reply falls back to the model's own best token; never past a grammar, which would abort on it
            token = self.steer.choose(self.steer.masked(logits), self._pick, raw=logits if self.check is None else None)
        if self.check is not None:
            llama_cpp.llama_sampler_accept(self.check, token)
        return token

    def _pick(self, logits: np.ndarray) -> int:
        if self.check is None:
            return self.sampler.draw(logits) if self.sampler is not None else int(np.argmax(logits))
        if self.sampler is not None:
            return self.sampler.draw(self._masked(logits))
        token = int(np.argmax(logits))
        return token if self._allows(token) else int(np.argmax(self._masked(logits)))

    def continue_from(self, prefill: list[int]) -> None:
        """Advance the grammar through a prefill's tokens (the start of the reply, given in the prompt), so the
        generation continues it. A prefill the grammar refuses is a ValueError, checked before llama.cpp's grammar
        sees the token (it aborts the process on a token it cannot accept)."""
        if self.check is None:
            return
        for token in prefill:
            if not self._allows(token):
                raise ValueError("the reply's prefill does not fit its response format")
            llama_cpp.llama_sampler_accept(self.check, token)

    def _allows(self, token: int) -> bool:
        """Whether the grammar accepts ``token`` next."""
        self._one[0] = (token, 0.0, 0.0)
        _apply_sampler(self.check, self._one)
        return bool(np.isfinite(self._one[0]["logit"]))

    def _masked(self, logits: np.ndarray) -> np.ndarray:
        """``logits`` with every token the grammar rejects next at -inf (indexed by token id)."""
        allowed = np.zeros(len(logits), dtype=_TOKEN_DATA)
        allowed["id"] = np.arange(len(logits))
        allowed["logit"] = logits
        _apply_sampler(self.check, allowed)
        masked = np.empty(len(logits), dtype=np.float32)
        masked[allowed["id"]] = allowed["logit"]  # by token id, whatever order the sampler left
        return masked

    def accept(self, token: int, logits: np.ndarray) -> bool:
        """Record ``token`` (produced from ``logits``); False once generation is over."""
        llama = self.llama
        if llama_cpp.llama_vocab_is_eog(llama._model.vocab, token):
            forced = self.steer.ended() if self.steer is not None else None
            if forced:
                self._feed = self._forced(forced)
                return True
            self.finish = "stop"
            return False
        if self.top_n is not None:
            self.logprobs.append(_token_logprob(llama, logits, token, self.top_n))
        self.out.append(token)
        self._feed = [token]
        if self.steer is not None:
            forced = self.steer.accepted(token)
            if forced == END:
                self.finish = "stop"
                return False
            self._feed += self._forced(forced)
        if self.stops:  # decoding every step only matters when a stop sequence may appear
            text = llama.detokenize(self.out).decode("utf-8", "ignore")
            hit = next((s for s in self.stops if s and s in text), None)
            if hit:
                self.text, self.finish = text[: text.index(hit)], "stop"
                return False
        return len(self.out) < self.max_tokens

    def result(self) -> tuple[str, int, tuple[Any, ...] | None, str]:
        if self.steer is not None:
            self.text = self.steer.finish() if self.steer.phase != "done" else self.steer.text
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


def response_of(request: Request, decoding: _Decoding, prompt: list[int], kept: int, name: str) -> Response:
    """A finished decoding as ``request``'s response named ``name``: ``prompt``'s tokens, ``kept`` of them reused
    from the KV cache."""
    text, n_generated, logprobs, finish = decoding.result()
    return Response(
        id=name,
        model=request.model,
        message=Message.assistant(text),
        finish_reason=finish,
        usage=Usage(input_tokens=len(prompt), output_tokens=n_generated, cache_read_tokens=kept),
        logprobs=logprobs,
    )


def decode_rows(llama: Any, batch: Any, rows: list[tuple[int, int, int, bool, int]]) -> dict[int, np.ndarray]:
    """Decode (token, position, sequence, wants logits, request) rows in ``batch`` (the engine's ``_OwnedBatch``'s),
    n_batch at a time; the logits of each request's last row, copied before the next decode overwrites them."""
    found: dict[int, np.ndarray] = {}
    for start in range(0, len(rows), llama.n_batch):
        chunk = rows[start : start + llama.n_batch]
        for k, (token, position, seq, wants, _) in enumerate(chunk):
            batch.token[k] = token
            batch.pos[k] = position
            batch.n_seq_id[k] = 1
            batch.seq_id[k][0] = seq
            batch.logits[k] = wants
        batch.n_tokens = len(chunk)
        status = llama_cpp.llama_decode(llama._ctx.ctx, batch)
        if status != 0:
            raise RuntimeError(f"llama_decode failed with status {status} (KV cache full?)")
        for k, (_, _, _, wants, i) in enumerate(chunk):
            if wants:
                found[i] = _logits_at(llama, k)
    return found


_LOADED: weakref.WeakSet[Any] = weakref.WeakSet()  # every llama.cpp model this process loaded and still holds


def loaded(llama: Any) -> Any:
    """``llama`` (a ``llama_cpp.Llama``), to be closed at exit (``_close_loaded``)."""
    _LOADED.add(llama)
    return llama


@atexit.register
def _close_loaded() -> None:
    """Close every loaded model before the interpreter tears down: a model still held then (a cache, a cycle) is
    freed by llama-cpp-python's ``__del__`` after its C bindings are gone, which prints a ``TypeError`` traceback
    on a run that succeeded. A closed model's ``__del__`` does nothing."""
    for llama in list(_LOADED):
        llama.close()
