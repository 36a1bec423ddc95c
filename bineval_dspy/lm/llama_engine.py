"""An in-process llama.cpp model as a DSPy 3.4 engine.

Why our own generation loop instead of ``create_chat_completion``: it reads token logprobs
straight from the last logits (no ``logits_all``, which would slow every prefill), keeps
llama.cpp's KV-cache prefix reuse across calls that share a prompt prefix, and enforces a
JSON-schema ``response_format`` with a grammar so even a 135M model returns parseable JSON.

Greedy calls that arrive together (a judge asks every question of an output at once, from threads, and the
judging runner keeps enough outputs in flight to fill ``parallel_sequences``) are gathered by ``lm._batching``
and decoded as parallel llama.cpp sequences, each output's questions side by side: a request's KV stream starts
from its neighbour's cells up to their shared prefix (an output's context is evaluated once), only the rest is
prefilled, and every decoding step runs all sequences in one batch. The tokens are the ones each request would
get alone (tested).

Greedy free text (a request with no ``response_format``: a generator's answer) is decoded on its own from an empty
cache: a neighbour's prefill rounds a 135M model's activations differently, which flipped 2 of 25 greedy IFEval
answers at 16 in flight (7 of 25 with a LoRA adapter), so a figure could not be reproduced to the item.

Free-text samples (Best-of-N's draw) are batched another way: the samples of one prompt share a single prefill,
made from an empty stream exactly as alone, its KV cells and logits copied to each sample's stream, and then decode
side by side, each drawing with its own seeded sampler (``_decoding.Sampler``). Every sample gets the tokens it
would get alone (tested), so the same command draws the same samples however they were batched.
"""

from __future__ import annotations

import ctypes
import json
import threading
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llama_cpp  # its OpenMP workers wait passively: the package chose it before any import (``bineval_dspy``)
import numpy as np
from dspy.lm15 import Message, Request, Response, Usage

from bineval_dspy.core.cores import usable_cores
from bineval_dspy.core.quiet import quiet
from bineval_dspy.enforce.runtime import Steerer
from bineval_dspy.enforce.steering import Steering, from_metadata
from bineval_dspy.enforce.vocabulary import Vocabulary
from bineval_dspy.lm._batching import Batcher, Expectation, common_prefix
from bineval_dspy.lm._decoding import MAX_TOKENS, _Decoding, _last_logits, _OwnedBatch, decode_rows, loaded, response_of
from bineval_dspy.lm._requests import (
    _batchable,
    _by_prompt,
    _by_shared_prefix,
    _cells,
    _contained,
    _fed,
    _outcome,
    _prefill,
    _sampled_text,
    _structured,
)
from bineval_dspy.lm.engine import EngineBase

DEFAULT_CONTEXT = 4096  # tokens per sequence (prompt and generation)
MAX_PARALLEL = 16  # requests decoded together at most, each in its own KV stream beside sequence 0
PROMPT_ROOM = 1024  # context cells a steered reply leaves for its prompt and forced text: a floor needing more is not enforced
STREAM_CELLS = 512  # the smallest KV stream of the parallel context; it doubles as longer requests need, up to n_ctx
quiet("llama_cpp")  # importing it logs nothing; loading a model, creating a context or a grammar may


@dataclass
class EngineStats:
    """Token accounting: how much prompt was evaluated versus reused from the KV cache."""

    calls: int = 0
    prompt_tokens: int = 0
    evaluated_prompt_tokens: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0
    per_call: list[dict[str, int]] = field(default_factory=list)


class LlamaCppEngine(EngineBase):
    """DSPy engine running a GGUF model with llama-cpp-python in this process.

    One lock guards the llama context (it is not thread-safe); ``__deepcopy__`` returns
    ``self`` so program copies share one set of weights. ``batching=False`` decodes every call on its own.
    Flash attention pads the attended span to 256 cells, so parallel sequences of similar length decode in one
    llama.cpp batch without changing their numbers (see ``_complete_batch``).
    """

    in_process = True  # calls serialize on one context; see ``bineval_dspy.lm.specs.is_local``
    supports_response_schema = True
    supports_prefill = True  # a request ending in an assistant message is continued from it (see ``render``)
    supports_steering = True  # constraints in a request's metadata are enforced while decoding (``enforce.runtime``)
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
        batching: bool = True,
        flash_attn: bool = True,
        lora_path: str | Path | None = None,
    ) -> None:
        self.model_path = Path(model_path)
        self.lora_path = Path(lora_path) if lora_path is not None else None  # a GGUF LoRA adapter applied to every call
        self.n_ctx = n_ctx
        self.n_threads = n_threads or usable_cores()  # every core it may use: measured best (experiments/bench_sampling.py)
        self._single_threads = 0  # the thread count now set for one-token decoding steps
        self.reuse_prefix = reuse_prefix
        self.record_calls = record_calls
        self.flash_attn = flash_attn
        self.attention_pad = 256 if flash_attn else 32  # llama.cpp pads the attended KV span to this
        self.stats = EngineStats()
        self._lock = threading.RLock()
        self._batcher: Batcher[Request, Response] | None = (
            Batcher(self._complete_batch, MAX_PARALLEL) if batching and reuse_prefix else None
        )
        self._batch: Any = None
        self._stream = 0  # KV cells per sequence of the parallel context (0: not made yet)
        self._llama: Any = None
        self._formatter: Any = None
        self._grammars: dict[str, Any] = {}
        self._vocabulary: Vocabulary | None = None

    def __deepcopy__(self, memo: dict[str, Any]) -> LlamaCppEngine:
        return self

    # -- model loading -------------------------------------------------------------
    def load(self, *, batched: int = 0) -> None:
        """Load the model now (it loads at the first call otherwise), so a file llama.cpp cannot read fails early;
        ``batched``: also the context of parallel sequences, each stream holding that many cells (made, and grown,
        at the batches that need it otherwise)."""
        with self._lock:
            llama = self._load()
            if batched:
                self._parallel_context(llama, batched)

    def _load(self) -> Any:
        if self._llama is None:
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            llama = Llama(
                model_path=str(self.model_path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,  # llama-cpp-python's default is half the cores for a single sequence
                n_threads_batch=self.n_threads,
                n_batch=512,
                flash_attn=self.flash_attn,
                lora_path=str(self.lora_path) if self.lora_path is not None else None,
                verbose=False,
            )
            loaded(llama)
            if self.lora_path is not None and not llama._lora_adapter:
                # llama-cpp-python keeps going with a NULL adapter (it checks for None, ctypes gives a NULL pointer),
                # and the first decode then crashes the process.
                llama._lora_adapter = None
                llama.close()
                raise RuntimeError("llama.cpp cannot apply it as a LoRA adapter of this model (damaged, or not an adapter)")
            template = llama.metadata.get("tokenizer.chat_template")
            if template:
                eos = llama.detokenize([llama.token_eos()]).decode("utf-8", "ignore")
                bos = llama.detokenize([llama.token_bos()]).decode("utf-8", "ignore")
                self._formatter = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos)
            self._llama = llama
        return self._llama

    def _parallel_context(self, llama: Any, cells: int) -> None:
        """Make the context one of MAX_PARALLEL + 1 sequences, each in its own KV stream (separate streams keep each
        sequence's attention layout as it would be alone) of at least ``cells`` cells. Done on the first batch, so an
        engine that never batches (generation) never holds the larger cache.

        A stream holds what its request needs (prompt and ``max_tokens``; STREAM_CELLS, doubled, at most n_ctx), not
        n_ctx: 17 streams of 4096 cells took 1.5 GB resident per engine, most of it never used. The attended span is
        the used cells padded to 256 whatever the stream's size, so a shorter stream changes no number. A longer
        request grows the context; sequence 0's cells (the cache a next call reuses) are copied over.

        llama-cpp-python's ``Llama`` builds its context with a single sequence and no option to change that.
        """
        size = STREAM_CELLS
        while size < cells:
            size *= 2
        size = min(size, self.n_ctx)
        if size <= self._stream:
            return
        from llama_cpp._internals import LlamaContext

        kept = self._sequence_zero(llama._ctx) if self._stream else None  # the single-sequence context's cache is dropped
        llama._ctx.close()  # before the next is made: the two are never held at once
        params = llama.context_params
        params.n_seq_max = MAX_PARALLEL + 1
        params.kv_unified = False
        params.n_ctx = size * (MAX_PARALLEL + 1)
        llama._ctx = llama._stack.enter_context(closing(LlamaContext(model=llama._model, params=params, verbose=False)))
        if self.lora_path is not None:  # an adapter belongs to a context: the new one must apply it too
            adapters = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(llama._lora_adapter)
            if llama_cpp.llama_set_adapters_lora(llama._ctx.ctx, adapters, 1, (ctypes.c_float * 1)(llama.lora_scale)):
                raise RuntimeError(f"llama.cpp could not apply the LoRA adapter {self.lora_path} to the batched context")
        if kept is None or llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, kept, len(kept), 0) != len(kept):
            llama.n_tokens = 0  # the new cache is empty
            llama_cpp.llama_memory_seq_rm(llama._ctx.memory, -1, -1, -1)
        self._single_threads = 0  # the new context starts from the load's thread counts
        self._stream = size

    @staticmethod
    def _sequence_zero(context: Any) -> Any:
        """Sequence 0's KV cells, as bytes llama.cpp can restore into another context."""
        size = llama_cpp.llama_state_seq_get_size(context.ctx, 0)
        data = (ctypes.c_uint8 * size)()
        return data if llama_cpp.llama_state_seq_get_data(context.ctx, data, size, 0) == size else None

    def _room(self, llama: Any, tokens: list[int], request: Request) -> None:
        """Grow the parallel context, once made, so sequence 0 holds this call's prompt and reply."""
        if self._stream:
            self._parallel_context(llama, _cells(tokens, request))

    @property
    def parallel_sequences(self) -> int:
        """How many greedy calls this engine decodes together: what a caller should keep in flight, across the
        questions of several outputs, to fill its batches (1: it runs calls one at a time)."""
        return MAX_PARALLEL if self._batcher is not None else 1

    def unsteerable(self, steering: Steering) -> str:
        """Why this model cannot make ``steering`` true: a lower bound whose reply needs more tokens than its context
        leaves beside a prompt (``PROMPT_ROOM``) would run out of context and fail the row on every rerun."""
        room = self.n_ctx - PROMPT_ROOM
        if steering.min_tokens > room:
            return f"its floor needs about {steering.min_tokens} reply tokens; the model's context of {self.n_ctx} leaves {room} beside the prompt"
        return ""

    def expect(self, n: int) -> Expectation:
        """``with engine.expect(n):`` announces n greedy calls about to arrive together, so they form one batch."""
        return Expectation(self._batcher, n)

    def tokenize(self, text: str) -> list[int]:
        """Tokens of a rendered prompt (special tokens parsed), for benchmarks and budgets."""
        return self._load().tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def render(self, request: Request) -> str:
        """The prompt text for a request, through the model's own chat template. A request whose last message is
        the assistant's is a prefill: the reply continues that text (the grammar of a ``response_format`` is
        advanced through it first, see ``_Decoding``)."""
        self._load()
        turns = list(request.messages)
        prefill = turns.pop().text if _prefill(request) is not None else ""
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages += [{"role": m.role, "content": m.text} for m in turns]
        if self._formatter is not None:
            return self._formatter(messages=messages).prompt + prefill
        return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: " + prefill

    def _grammar(self, response_format: dict[str, Any] | None) -> Any:
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
        try:
            if self._batcher is not None and _batchable(request):
                return self._batcher.submit(request)
            return self._complete_one(request)
        except (SystemExit, GeneratorExit) as exc:  # raised by steering code of a user's file (a word predicate)
            raise _contained(exc) from exc

    def _complete_one(self, request: Request) -> Response:
        with self._lock:
            started = time.perf_counter()
            llama = self._load()
            tokens = self.tokenize(self.render(request))
            if len(tokens) >= self.n_ctx:
                raise ValueError(f"prompt of {len(tokens)} tokens does not fit the context of {self.n_ctx}")
            self._room(llama, tokens, request)
            reused = self._reusable_prefix(llama, tokens, request)
            self._set_threads(llama, alone=not _batchable(request))
            text, generated, logprobs, finish = self._generate(llama, tokens, reused, request)
            self._account(len(tokens), len(tokens) - reused, generated, time.perf_counter() - started)
            response_id = f"llama-{self.stats.calls}"  # read under the lock: another thread may be counting
        return Response(
            id=response_id,
            model=request.model,
            message=Message.assistant(text),
            finish_reason=finish,
            usage=Usage(input_tokens=len(tokens), output_tokens=generated, cache_read_tokens=reused),
            logprobs=logprobs,
        )

    def _set_threads(self, llama: Any, *, alone: bool) -> None:
        """Threads for decoding steps of one token. Steps of several tokens (prefills, batches) use every thread
        (``n_threads``), and so does a call that is always decoded alone (greedy free text). A call that may also be
        decoded beside others (a verdict, a sample) takes its one-token steps on one thread: with more, llama.cpp
        splits a single row's attention across threads, which rounds otherwise than a row of a batch and changed 1
        of 64 samples (experiments/bench_sampling.py), so a call would get other tokens alone than batched."""
        single = self.n_threads if alone else 1
        if single != self._single_threads:
            llama_cpp.llama_set_n_threads(llama._ctx.ctx, single, self.n_threads)
            self._single_threads = single

    def _reusable_prefix(self, llama: Any, tokens: list[int], request: Request) -> int:
        """How many leading tokens llama.cpp will keep from the previous call's KV cache (never the last one:
        generating needs its logits); none for free text, which is prefilled from its first token."""
        if not (self.reuse_prefix and _structured(request)):
            llama.reset()
            return 0
        return min(len(common_prefix([llama.input_ids[: llama.n_tokens].tolist(), tokens])), len(tokens) - 1)

    def vocabulary(self) -> Vocabulary:
        """The model's token pieces and end ids, read once (a steerer's masks are computed over them)."""
        if self._vocabulary is None:
            llama = self._load()
            vocab = llama._model.vocab
            raw = [llama.detokenize([i]) for i in range(llama.n_vocab())]
            ends = [i for i in range(llama.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, i)]
            self._vocabulary = Vocabulary([b.decode("utf-8", "ignore") for b in raw], ends, raw)
        return self._vocabulary

    def _decoding(self, llama: Any, request: Request) -> _Decoding:
        """A request's decoding state, its grammar advanced through a prefill, its steerer made when it carries
        constraints to enforce (a JSON reply is the engine's JSON grammar)."""
        config = request.config
        steering = from_metadata(config.extensions)
        response_format = {"type": "json_object"} if steering is not None and steering.json_value else config.response_format
        steer = Steerer(steering, self.vocabulary(), config.max_tokens or MAX_TOKENS) if steering is not None else None
        decoding = _Decoding(llama, config, self._grammar(response_format), greedy=not config.temperature, steer=steer)
        prefill = _prefill(request)
        if prefill:
            try:
                decoding.continue_from(self.tokenize(prefill))
            except ValueError:
                decoding.close()
                raise
        return decoding

    def _generate(self, llama: Any, tokens: list[int], reused: int, request: Request) -> tuple[str, int, tuple[Any, ...] | None, str]:
        with closing(self._decoding(llama, request)) as decoding:
            llama.n_tokens = reused  # keep the KV cache of the shared prefix; eval drops everything after it
            llama.eval(tokens[reused:] + decoding.start())
            while True:
                logits = _last_logits(llama)
                token = decoding.choose(logits)
                if not decoding.accept(token, logits):
                    break
                llama.eval(decoding.feed())
            return decoding.result()

    # -- parallel sequences ----------------------------------------------------------
    def _complete_batch(self, requests: list[Request]) -> list[Response | BaseException]:
        """Greedy requests decoded together; one that cannot run gets its exception, the others their answers.

        Each request gets its own KV stream, filled exactly as the sequential path would fill sequence 0 when
        the requests came one after another: request k starts from the KV cells of request k-1 (or, for the
        first, of the cache) up to their common prefix, and evaluates only the rest. Decoding steps then run
        every stream in one batch, grouped by attention span. The layout must match the sequential path bit
        for bit: with a 135M model a different attention padding changes 8-bit activation rounding, and with it
        verdicts.
        """
        if len(requests) == 1:
            return [_outcome(lambda: self._complete_one(requests[0]))]
        with self._lock:
            started = time.perf_counter()
            llama = self._load()
            results: dict[int, Response | BaseException] = {}
            prompts: dict[int, list[int]] = {}
            for i, request in enumerate(requests):
                tokens = self.tokenize(self.render(request))
                if len(tokens) >= self.n_ctx:
                    results[i] = ValueError(f"prompt of {len(tokens)} tokens does not fit the context of {self.n_ctx}")
                else:
                    prompts[i] = tokens
            if prompts:
                self._parallel_context(llama, max(_cells(prompts[i], requests[i]) for i in prompts))
                self._set_threads(llama, alone=False)
                samples = {i: tokens for i, tokens in prompts.items() if _sampled_text(requests[i])}
                greedy = {i: tokens for i, tokens in prompts.items() if i not in samples}
                for part in (greedy, samples):
                    if part:
                        results.update(self._decode_streams(llama, part, requests, sampled=part is samples))
                seconds = time.perf_counter() - started
                for response in results.values():
                    if isinstance(response, Response):
                        usage = response.usage
                        evaluated = usage.input_tokens - (usage.cache_read_tokens or 0)
                        self._account(usage.input_tokens, evaluated, usage.output_tokens, seconds / len(prompts))
        return [results.get(i, RuntimeError("request not run")) for i in range(len(requests))]

    def _decode_streams(
        self, llama: Any, prompts: dict[int, list[int]], requests: list[Request], *, sampled: bool = False
    ) -> dict[int, Response | BaseException]:
        """Prefill every request in its own stream and decode them all step by step. ``sampled``: free-text samples,
        each prompt prefilled once from an empty stream (as alone) and its other samples given a copy of those cells
        and logits, so every sample's tokens are the ones it would get alone with its seed."""
        memory = llama._ctx.memory
        order = _by_prompt(prompts) if sampled else _by_shared_prefix(prompts)
        streams = {i: stream for stream, i in enumerate(order, start=1)}
        decodings: dict[int, _Decoding] = {}
        logits: dict[int, np.ndarray] = {}
        kept: dict[int, int] = {}  # prompt tokens each request took from the KV cache
        failed: dict[int, BaseException] = {}
        try:
            source, cached = 0, llama.input_ids[: llama.n_tokens].tolist()
            previous: int | None = None
            for i in order:
                tokens, stream = prompts[i], streams[i]
                llama_cpp.llama_memory_seq_rm(memory, stream, -1, -1)
                if sampled and previous is not None and prompts[previous] == tokens:  # another sample of one prompt
                    llama_cpp.llama_memory_seq_cp(memory, source, stream, -1, -1)
                    logits[i], kept[i] = logits[previous].copy(), len(tokens)
                else:
                    keep = 0 if sampled else min(len(common_prefix([cached, tokens])), len(tokens) - 1)
                    if keep:
                        llama_cpp.llama_memory_seq_cp(memory, source, stream, -1, -1)  # streams copy whole sequences only
                        llama_cpp.llama_memory_seq_rm(memory, stream, keep, -1)
                    rows = [(t, keep + j, stream, keep + j == len(tokens) - 1, i) for j, t in enumerate(tokens[keep:])]
                    logits.update(self._decode_rows(llama, rows))
                    kept[i] = keep
                try:
                    decodings[i] = self._decoding(llama, requests[i])
                except ValueError as exc:  # a prefill the grammar refuses fails this request alone
                    failed[i] = exc
                source, cached, previous = stream, tokens, i
            positions = {i: len(prompts[i]) for i in order}
            for i, decoding in decodings.items():  # forced openings, once every stream holds its prompt
                opening = decoding.start()
                if opening:
                    logits.update(self._decode_rows(llama, _fed(opening, positions[i], streams[i], i)))
                    positions[i] += len(opening)
            active = [i for i in order if i in decodings]
            while active:
                step: dict[int, list[tuple[int, int, int, bool, int]]] = {}
                for i in active:
                    token = decodings[i].choose(logits[i])
                    if decodings[i].accept(token, logits[i]):
                        fed = decodings[i].feed()  # the token, and any text forced after it
                        span = -(-(positions[i] + 1) // self.attention_pad)  # one batch per attention span, as alone
                        step.setdefault(span, []).extend(_fed(fed, positions[i], streams[i], i))
                        positions[i] += len(fed)
                active = list(dict.fromkeys(row[4] for rows in step.values() for row in rows))
                for rows in step.values():
                    logits.update(self._decode_rows(llama, rows))
            last = order[-1]  # leave sequence 0 as the sequential path would: holding the last request
            if any(d.steer is not None for d in decodings.values()):  # forced text is in the cells, not in ``out``
                llama.reset()
                return {**failed, **{i: response_of(requests[i], d, prompts[i], kept[i], f"llama-batch-{self.stats.calls}-{streams[i]}") for i, d in decodings.items()}}
            generated = decodings[last].out if last in decodings else []
            llama_cpp.llama_memory_seq_rm(memory, 0, -1, -1)
            llama_cpp.llama_memory_seq_cp(memory, streams[last], 0, -1, -1)
            state = prompts[last] + generated
            llama.input_ids[: len(state)] = state
            llama.n_tokens = len(state)
            out: dict[int, Response | BaseException] = dict(failed)
            for i, decoding in decodings.items():
                out[i] = response_of(requests[i], decoding, prompts[i], kept[i], f"llama-batch-{self.stats.calls}-{streams[i]}")
            return out
        except (Exception, SystemExit, GeneratorExit) as exc:  # a failed decode fails this batch's requests, never the process
            llama.reset()  # the cache no longer matches input_ids: start the next call from scratch
            llama_cpp.llama_memory_seq_rm(memory, -1, -1, -1)
            return {i: _contained(exc) for i in order}
        finally:
            for decoding in decodings.values():
                decoding.close()
            for stream in streams.values():
                llama_cpp.llama_memory_seq_rm(memory, stream, -1, -1)

    def _decode_rows(self, llama: Any, rows: list[tuple[int, int, int, bool, int]]) -> dict[int, np.ndarray]:
        if self._batch is None:
            self._batch = llama._stack.enter_context(closing(_OwnedBatch(llama.n_batch)))
        return decode_rows(llama, self._batch.batch, rows)

    def _account(self, prompt: int, evaluated: int, generated: int, seconds: float) -> None:
        stats = self.stats
        stats.calls += 1
        stats.prompt_tokens += prompt
        stats.evaluated_prompt_tokens += evaluated
        stats.generated_tokens += generated
        stats.seconds += seconds
        if self.record_calls:
            stats.per_call.append({"prompt": prompt, "evaluated": evaluated, "generated": generated})


