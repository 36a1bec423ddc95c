"""The verdict fast path: fixed-shape requests to OpenAI-compatible servers without DSPy's per-call path.

Why: against a server that answers short verdict requests at once, ``bineval judge`` spent 3-4 ms of client CPU a
call in DSPy's per-call path (callbacks, the adapter's messages, lm15's request objects, the cache key's hashing, a
history entry) and in hand-offs between threads: about 17 times the client CPU of a plain aiohttp loop (issue 49).
A judge sends one request shape many times with only its inputs changed, so:

- each shape is captured once (``FastLM.template``): DSPy's own path runs on slot marks in place of the inputs,
  with an engine that records the request it is handed and a cache that records the request it is asked for
  (``cache.peeking``), so the body in each schema spelling (as lm15 writes it for the server) and the cache's
  request are DSPy's, with slots where the inputs go;
- each call fills the slots (``Template``): the inputs JSON-escaped into the bytes (escaping goes character by
  character, so the parts escaped apart equal the whole escaped at once), the cache key hashed as DSPy's cache
  hashes it, so both paths read and write the same entries, as the same record;
- it is sent by aiohttp on the process's I/O loop, through the engine's own retries, rate limits, schema
  spellings, in-flight cap and replica failover (``RemoteEngine.call`` over an ``Exchange``), and read by lm15's
  reader for the server, as DSPy's path reads it.

What a reply means is the caller's (``judges.fast``). ``BINEVAL_FAST_PATH=0`` (``lm.retry.fast_path_default``) or
``judge --no-fast-path`` turns it off.
"""

from __future__ import annotations

import asyncio
import builtins
import importlib
import json
import secrets
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from hashlib import sha256
from typing import Any

import aiohttp
import dspy
import orjson
from dspy.clients.cache import _transform_value
from dspy.clients.call_result import CACHE_FORMAT, CallResult
from dspy.clients.capabilities import capabilities
from dspy.clients.errors import wrap_error
from dspy.clients.execution import IGNORED_CACHE_KEYS
from dspy.lm15 import ProviderError, Request, Response, TimeoutError, TransportError

from bineval_dspy.lm.cache import ReplyCache, peeking
from bineval_dspy.lm.engine import EngineBase
from bineval_dspy.lm.pool import ReplicaPool
from bineval_dspy.lm.remote import FORMS, RemoteEngine, Retries, billed_tokens, carries_schema, on_io_loop, spelled
from bineval_dspy.lm.stopping import OPEN_CALLS
from bineval_dspy.lm.usage import CallTally, cached_reply_tokens

MAX_REPLY_BYTES = 8 << 20  # the longest reply body the fast path reads (a verdict with logprobs is a few kB)
# lm15's HTTP reply, as its readers take it. Imported by name at run time: mypy, following the vendored package,
# loses sight of dspy's own names (dspy.LM, dspy.Module ...) in every module that imports dspy.
_HTTP_RESPONSE = importlib.import_module("dspy._vendor.lm15.providers.base").HttpResponse

_MARK = f"bineval-slot-{secrets.token_hex(8)}-"  # drawn per process: no instruction or demo holds it


class _Unfit(ValueError):
    """A captured request the fast path cannot fill exactly (an input not found once where it goes)."""


class _Pieces:
    """Bytes with slots: the fixed parts around where each input goes, filled by already-escaped inputs."""

    def __init__(self, text: bytes, marks: Sequence[bytes]) -> None:
        spots = []
        for index, mark in enumerate(marks):
            at = text.find(mark)
            if at < 0 or text.find(mark, at + 1) >= 0:
                raise _Unfit(f"input {index} is not in the request exactly once")
            spots.append((at, index, len(mark)))
        self.parts: list[bytes] = []
        self.order: list[int] = []
        last = 0
        for at, index, length in sorted(spots):
            self.parts.append(text[last:at])
            self.order.append(index)
            last = at + length
        self.parts.append(text[last:])

    def fill(self, inputs: Sequence[bytes]) -> bytes:
        filled = [self.parts[0]]
        for index, part in zip(self.order, self.parts[1:]):
            filled += (inputs[index], part)
        return b"".join(filled)


@dataclass(frozen=True)
class Template:
    """One request shape: its body in each schema spelling and its cache keys, with slots for the inputs."""

    request: Request  # as lm15's client sends it (the slot marks in it): what a reply is read against
    bodies: Mapping[str | None, _Pieces]  # schema spelling (None: the request carries no schema) -> body
    key: _Pieces | None  # the cache's request, as DSPy's cache serializes it to hash; None: the LM does not cache
    twin: _Pieces | None  # the same request without logprobs: a reply with them answers it too (``lm.cache``)
    call_kwargs: Mapping[str, Any]  # the call's settings, for a cache entry in LiteLLM's older record
    logprobs: bool
    fixed_chars: int  # the messages' characters besides the inputs, for ``--tpm``'s estimate
    max_tokens: int

    @property
    def schema(self) -> bool:
        return None not in self.bodies

    def keys(self, inputs: Sequence[str]) -> tuple[str, ...]:
        """The cache keys of the request with these inputs: its own first, then its twin's."""
        if self.key is None:
            return ()
        escaped = [orjson.dumps(text)[1:-1] for text in inputs]
        return tuple(sha256(pieces.fill(escaped)).hexdigest() for pieces in (self.key, self.twin) if pieces is not None)

    def body(self, form: str | None, escaped: Sequence[bytes]) -> bytes:
        return self.bodies[form].fill(escaped)


class _Recorder(EngineBase):
    """An engine that keeps the request DSPy hands it and answers none (the call fails), declaring what the
    recorded LM's engine declares, so the adapter builds the same request."""

    def __init__(self, lm: dspy.LM) -> None:
        declared = capabilities(lm)
        self.supports_function_calling = declared.function_calling
        self.supports_reasoning = declared.reasoning
        self.supports_response_schema = declared.response_schema
        self.supported_params = declared.params
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Response:
        self.requests.append(request)
        raise _Unfit("recorded, not sent")


@dataclass(frozen=True)
class Reply:
    """One call's reply as DSPy's LM returns it (text, or text and logprobs), and the cache entries it is under."""

    output: Any
    keys: tuple[str, ...]


class FastLM:
    """A ``dspy.LM`` on our remote engine (one server or a pool of replicas), called by the fast path."""

    def __init__(self, lm: dspy.LM, engine: RemoteEngine | ReplicaPool) -> None:
        self.lm = lm
        self.engine = engine
        self.model: str = lm.model
        self._first = engine.replicas[0] if isinstance(engine, ReplicaPool) else engine

    @classmethod
    def of(cls, lm: Any) -> FastLM | None:
        """The fast path for ``lm``, or None where it does not apply: an LM that is not a ``dspy.LM`` on our
        remote engine, or one that caches with a cache other than ours."""
        engine = getattr(lm, "engine", None)
        if type(lm) is not dspy.LM or not isinstance(engine, (RemoteEngine, ReplicaPool)):
            return None
        if lm.cache and not isinstance(dspy.cache, ReplyCache):
            return None
        return cls(lm, engine)

    def template(self, call: Callable[[dspy.LM, dict[str, str]], object], fields: Sequence[str]) -> Template | None:
        """The request ``call`` makes (given the LM to call and its inputs by field), captured with slots for
        ``fields``; None when it cannot be filled exactly (then the caller keeps DSPy's path)."""
        marks = {name: f"{_MARK}{name}" for name in fields}
        recorder = _Recorder(self.lm)
        with peeking() as looked_up, dspy.context(callbacks=[], disable_history=True):
            try:
                call(self.lm.copy(engine=recorder), marks)
            except Exception:  # the recorder fails every call; what it recorded is what counts
                pass
        if len(recorder.requests) != 1 or len(looked_up) != int(bool(self.lm.cache)):
            return None
        try:
            return self._template(recorder.requests[0], looked_up[0] if looked_up else None, [marks[name] for name in fields])
        except _Unfit:
            return None

    def _template(self, captured: Request, cached: dict[str, Any] | None, marks: list[str]) -> Template:
        encoded = [mark.encode() for mark in marks]
        request = replace(captured, model=self._first.wire_model)
        dialect = self._first.dialect()
        forms: tuple[str | None, ...] = FORMS if carries_schema(request) else (None,)
        bodies = {form: _Pieces(dialect.build_request(spelled(request, form) if form else request, False).body, encoded) for form in forms}
        key = twin = None
        call_kwargs: dict[str, Any] = {}
        if cached is not None:
            params = {k: _transform_value(v) for k, v in cached.items() if k not in IGNORED_CACHE_KEYS}
            key = _Pieces(orjson.dumps(params, option=orjson.OPT_SORT_KEYS), encoded)
            if params.get("logprobs"):
                bare = {k: v for k, v in params.items() if k not in ("logprobs", "top_logprobs")}
                twin = _Pieces(orjson.dumps(bare, option=orjson.OPT_SORT_KEYS), encoded)
            call_kwargs = {k: v for k, v in cached.items() if k not in ("model", "messages", "_fn_identifier")}
        text = "".join(getattr(part, "text", "") or "" for message in request.messages for part in message.parts)
        for mark in marks:
            text = text.replace(mark, "")
        return Template(
            request=request, bodies=bodies, key=key, twin=twin, call_kwargs=call_kwargs, logprobs=request.config.logprobs is not None,
            fixed_chars=len(text), max_tokens=int(request.config.max_tokens or 0),
        )  # fmt: skip

    async def ask(self, template: Template, inputs: Sequence[str], tally: CallTally) -> Reply:
        """The reply to ``template`` filled with ``inputs``: from the cache, else from the server (then kept);
        counted in ``tally``. A failed call raises DSPy's error for it, as DSPy's path would."""
        keys = template.keys(inputs) if self.lm.cache else ()
        cache: ReplyCache = dspy.cache
        if keys and (record := cache.read(keys[0])) is not None:
            tally.hit(self.model, cached_reply_tokens(record))
            return Reply(self._output(record, template), keys)
        retries = Retries()
        try:
            with OPEN_CALLS.counting():  # the first Ctrl-C says how many calls it waits for
                response = await self.engine.call(VerdictExchange(template, inputs), retries)
        except Exception as exc:
            tally.count(self.model)
            raise wrap_error(exc, model=self.model) from exc
        finally:
            tally.throttled += retries.throttled
            tally.retried += retries.retried
        result = CallResult.native(response, logprobs=template.logprobs)
        tally.count(self.model, result.usage)
        if keys:
            cache.write(keys, result.dump())
        return Reply(result.outputs[0], keys)

    def close(self) -> None:
        """Close the aiohttp pools of this LM's servers (a later call opens new ones)."""
        engines = self.engine.replicas if isinstance(self.engine, ReplicaPool) else [self.engine]
        wires = [wire for engine in engines if (wire := _wires.pop(engine, None)) is not None]
        if wires:
            on_io_loop(_close(wires))

    def forget(self, reply: Reply) -> None:
        """Drop a reply that gave no verdict from the cache: a rerun asks again."""
        cache: ReplyCache = dspy.cache
        for key in reply.keys:
            cache.forget(key)

    def _output(self, record: Any, template: Template) -> Any:
        """The output a cache entry holds: DSPy's record, or LiteLLM's raw reply of an older cache."""
        if isinstance(record, dict) and record.get("_dspy_format") == CACHE_FORMAT:
            return record["outputs"][0]
        return CallResult.legacy(self.lm, record, kwargs=dict(template.call_kwargs)).outputs[0]


class VerdictExchange:
    """One filled template sent by aiohttp (an ``Exchange`` for the engine's retries, limits and failover)."""

    def __init__(self, template: Template, inputs: Sequence[str]) -> None:
        self.template = template
        self.inputs = inputs
        self._escaped: list[bytes] | None = None

    @property
    def schema(self) -> bool:
        return self.template.schema

    def tokens(self) -> int:
        return (self.template.fixed_chars + sum(len(text) for text in self.inputs)) // 4 + self.template.max_tokens

    def billed(self, reply: Response) -> int | None:
        return billed_tokens(reply)

    async def send(self, engine: RemoteEngine, form: str | None, seconds: float) -> Response:
        if self._escaped is None:  # as lm15 writes text (ensure_ascii off); a lone surrogate fails here, as there
            self._escaped = [json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8") for text in self.inputs]
        wire = _wire(engine, self.template.request)
        try:
            async with wire.session.post(wire.url, data=self.template.body(form, self._escaped), headers=wire.headers) as sent:
                http = _HTTP_RESPONSE(sent.status, sent.reason or "", list(sent.headers.items()), await _body(sent), provider=wire.dialect.provider)
        except builtins.TimeoutError:  # aiohttp's read or connect timeout; lm15's own is a TimeoutError too
            raise TimeoutError(f"no reply within {engine.timeout:g} s") from None
        except aiohttp.ClientError as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from None
        if http.status >= 400:
            raise wire.dialect._http_error(http)  # lm15's error for the status, its Retry-After read
        return wire.dialect.parse_response(self.template.request, http)


async def _body(sent: aiohttp.ClientResponse) -> bytes:
    """The reply's body, read a piece at a time and refused past ``MAX_REPLY_BYTES`` (no verdict is that long): a
    server sending megabytes per reply never fills the memory. Not retried: the same request gets the same reply."""
    body = bytearray()
    too_long = ProviderError(f"a reply over {MAX_REPLY_BYTES >> 20} MiB, which no verdict needs: not read")
    if (sent.content_length or 0) > MAX_REPLY_BYTES:
        raise too_long
    async for piece in sent.content.iter_chunked(1 << 16):
        body += piece
        if len(body) > MAX_REPLY_BYTES:
            raise too_long
    return bytes(body)


class _Wire:
    """One server's aiohttp pool and lm15 dialect, made on the I/O loop at the server's first fast call, with as
    many connections as its engine has then (``limit_in_flight`` sizes them before a run's first call)."""

    def __init__(self, engine: RemoteEngine, request: Request) -> None:
        self.dialect = engine.dialect()
        built = self.dialect.build_request(request, False)
        self.url, self.headers = built.url, dict(built.headers)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=engine.timeout, sock_read=engine.timeout)
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=engine.connections), timeout=timeout)


_wires: weakref.WeakKeyDictionary[RemoteEngine, _Wire] = weakref.WeakKeyDictionary()


async def _close(wires: list[_Wire]) -> None:
    await asyncio.gather(*(wire.session.close() for wire in wires))


def _wire(engine: RemoteEngine, request: Request) -> _Wire:
    wire = _wires.get(engine)
    if wire is None:
        wire = _wires[engine] = _Wire(engine, request)
    return wire
