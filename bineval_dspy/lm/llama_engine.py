"""An in-process llama.cpp model as a DSPy 3.4 engine.

Why our own generation loop instead of ``create_chat_completion``: it reads token logprobs
straight from the last logits (no ``logits_all``, which would slow every prefill), keeps
llama.cpp's KV-cache prefix reuse across calls that share a prompt prefix, and enforces a
JSON-schema ``response_format`` with a grammar so even a 135M model returns parseable JSON.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from dspy.lm15 import Config, Message, Request, Response, TokenLogprob, TopLogprob, Usage

# llama.cpp's OpenMP workers spin while waiting by default; on a busy 2-core machine that starves every
# other process (and this one). Passive waiting must be chosen before the library loads.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
import llama_cpp  # noqa: E402

DEFAULT_CONTEXT = 4096
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)


def _last_logits(llama: Any) -> np.ndarray:
    """A view of the raw logits of the last evaluated position (no copy, no grammar mask)."""
    pointer = llama._ctx.get_logits_ith(-1)
    return np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(llama.n_vocab(),))


def _apply_sampler(sampler: Any, candidates: np.ndarray) -> None:
    """Run a llama.cpp sampler (here: a grammar) over candidate tokens in place; rejected ones get -inf."""
    array = llama_cpp.llama_token_data_array(
        data=candidates.ctypes.data_as(llama_cpp.llama_token_data_p), size=len(candidates), selected=-1, sorted=False
    )
    llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))


@dataclass
class EngineStats:
    """Token accounting: how much prompt was evaluated versus reused from the KV cache."""

    calls: int = 0
    prompt_tokens: int = 0
    evaluated_prompt_tokens: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0
    per_call: list[dict[str, int]] = field(default_factory=list)


class LlamaCppEngine:
    """DSPy engine running a GGUF model with llama-cpp-python in this process.

    One lock guards the llama context (it is not thread-safe); ``__deepcopy__`` returns
    ``self`` so program copies share one set of weights.
    """

    in_process = True  # calls serialize on one context; see ``bineval_dspy.lm.specs.is_local``
    supports_response_schema = True
    supports_function_calling = False
    supports_reasoning = False
    supported_params = frozenset(
        {"temperature", "max_tokens", "top_p", "top_k", "stop", "seed", "response_format", "logprobs", "top_logprobs"}
    )

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = DEFAULT_CONTEXT,
        n_threads: int | None = None,
        reuse_prefix: bool = True,
        record_calls: bool = False,
    ) -> None:
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.reuse_prefix = reuse_prefix
        self.record_calls = record_calls
        self.stats = EngineStats()
        self._lock = threading.Lock()
        self._llama: Any = None
        self._formatter: Any = None
        self._grammars: dict[str, Any] = {}

    def __deepcopy__(self, memo: dict) -> LlamaCppEngine:
        return self

    # -- model loading -------------------------------------------------------------
    def _load(self) -> Any:
        if self._llama is None:
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            llama = Llama(
                model_path=str(self.model_path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_batch=512,
                verbose=False,
            )
            template = llama.metadata.get("tokenizer.chat_template")
            if template:
                eos = llama.detokenize([llama.token_eos()]).decode("utf-8", "ignore")
                bos = llama.detokenize([llama.token_bos()]).decode("utf-8", "ignore")
                self._formatter = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos)
            self._llama = llama
        return self._llama

    def tokenize(self, text: str) -> list[int]:
        """Tokens of a rendered prompt (special tokens parsed), for benchmarks and budgets."""
        return self._load().tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def render(self, request: Request) -> str:
        """The prompt text for a request, through the model's own chat template."""
        self._load()
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages += [{"role": m.role, "content": m.text} for m in request.messages]
        if self._formatter is not None:
            return self._formatter(messages=messages).prompt
        turns = "".join(f"{m['role']}: {m['content']}\n" for m in messages)
        return turns + "assistant: "

    def _grammar(self, response_format: dict | None) -> Any:
        if not response_format or response_format.get("type") not in ("json_schema", "json_object"):
            return None
        from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

        schema = response_format.get("schema")
        key = json.dumps(schema, sort_keys=True) if schema else ""
        if key not in self._grammars:
            self._grammars[key] = (
                LlamaGrammar.from_json_schema(key, verbose=False) if schema else LlamaGrammar.from_string(JSON_GBNF, verbose=False)
            )
        return self._grammars[key]

    # -- the engine contract -------------------------------------------------------
    def complete(self, request: Request) -> Response:
        """Run one chat request and return text, usage and (if asked) logprobs."""
        with self._lock:
            started = time.perf_counter()
            llama = self._load()
            config: Config = request.config
            tokens = self.tokenize(self.render(request))
            if len(tokens) >= self.n_ctx:
                raise ValueError(f"prompt of {len(tokens)} tokens does not fit the context of {self.n_ctx}")
            reused = self._reusable_prefix(llama, tokens)
            text, generated, logprobs, finish = self._generate(llama, tokens, reused, config)
            self._account(len(tokens), len(tokens) - reused, generated, time.perf_counter() - started)
            response_id = f"llama-{self.stats.calls}"  # read under the lock: another thread may be counting
        return Response(
            id=response_id,
            model=request.model,
            message=Message.assistant(text),
            finish_reason=finish,
            usage=Usage(input_tokens=len(tokens), output_tokens=generated),
            logprobs=logprobs,
        )

    def _reusable_prefix(self, llama: Any, tokens: list[int]) -> int:
        """How many leading tokens llama.cpp will keep from the previous call's KV cache."""
        if not self.reuse_prefix:
            llama.reset()
            return 0
        cached = llama.input_ids[: llama.n_tokens].tolist()
        common = 0
        for a, b in zip(cached, tokens):
            if a != b:
                break
            common += 1
        return min(common, len(tokens) - 1)

    def _generate(self, llama: Any, tokens: list[int], reused: int, config: Config) -> tuple[str, int, tuple | None, str]:
        temperature = 0.0 if config.temperature is None else float(config.temperature)
        grammar = self._grammar(config.response_format)
        if temperature > 0:
            llama.set_seed(config.seed if config.seed is not None else random.randrange(2**31))
            stream = llama.generate(
                tokens,
                temp=temperature,
                top_k=config.top_k or 40,
                top_p=config.top_p if config.top_p is not None else 0.95,
                min_p=0.05,
                repeat_penalty=1.0,
                reset=True,
                grammar=grammar,
            )
        else:
            stream = self._greedy(llama, tokens, reused, grammar)
        max_tokens = config.max_tokens or 256
        top_n = self._top_logprobs(config)
        stops = [config.stop] if isinstance(config.stop, str) else list(config.stop or [])
        out: list[int] = []
        logprobs: list[TokenLogprob] = []
        finish = "length"
        with closing(stream):
            for token in stream:
                if llama_cpp.llama_vocab_is_eog(llama._model.vocab, token):
                    finish = "stop"
                    break
                if top_n is not None:
                    logprobs.append(self._token_logprob(llama, token, top_n))
                out.append(token)
                if stops:  # decoding every step only matters when a stop sequence may appear
                    text = llama.detokenize(out).decode("utf-8", "ignore")
                    hit = next((s for s in stops if s and s in text), None)
                    if hit:
                        return text[: text.index(hit)], len(out), (tuple(logprobs) if top_n is not None else None), "stop"
                if len(out) >= max_tokens:
                    break
        text = llama.detokenize(out).decode("utf-8", "ignore")
        return text, len(out), (tuple(logprobs) if top_n is not None else None), finish

    @staticmethod
    def _greedy(llama: Any, tokens: list[int], reused: int, grammar: Any) -> Iterator[int]:
        """Greedy decoding that asks the grammar about the best raw token first and masks the whole vocabulary
        only when the grammar rejects it: the same tokens as masking every step, at a fraction of the cost."""
        llama.n_tokens = reused  # keep the KV cache of the shared prefix; eval drops everything after it
        llama.eval(tokens[reused:])
        vocab = llama._model.vocab
        check = llama_cpp.llama_sampler_init_grammar(vocab, grammar._grammar.encode(), grammar._root.encode()) if grammar else None
        one = np.zeros(1, dtype=_TOKEN_DATA)
        try:
            while True:
                logits = _last_logits(llama)
                token = int(np.argmax(logits))
                if check is not None:
                    one[0] = (token, 0.0, 0.0)
                    _apply_sampler(check, one)
                    if not np.isfinite(one[0]["logit"]):
                        allowed = np.zeros(len(logits), dtype=_TOKEN_DATA)
                        allowed["id"] = np.arange(len(logits))
                        allowed["logit"] = logits
                        _apply_sampler(check, allowed)
                        token = int(allowed["id"][np.argmax(allowed["logit"])])
                    llama_cpp.llama_sampler_accept(check, token)
                yield token
                llama.eval([token])
        finally:
            if check is not None:
                llama_cpp.llama_sampler_free(check)

    @staticmethod
    def _top_logprobs(config: Config) -> int | None:
        """Number of alternatives per token, or None when logprobs were not requested."""
        return None if config.logprobs is None else int(config.logprobs)

    @staticmethod
    def _token_logprob(llama: Any, token: int, top_n: int) -> TokenLogprob:
        """Log-softmax of the raw logits that produced ``token`` (before any grammar mask)."""
        logits = _last_logits(llama)
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

    def _account(self, prompt: int, evaluated: int, generated: int, seconds: float) -> None:
        stats = self.stats
        stats.calls += 1
        stats.prompt_tokens += prompt
        stats.evaluated_prompt_tokens += evaluated
        stats.generated_tokens += generated
        stats.seconds += seconds
        if self.record_calls:
            stats.per_call.append({"prompt": prompt, "evaluated": evaluated, "generated": generated})
