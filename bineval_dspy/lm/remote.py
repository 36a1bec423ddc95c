"""OpenAI-compatible servers named by ``--api-base`` (vLLM, llama.cpp, llama-cpp-python, Ollama) as a DSPy engine.

Why an engine of our own around DSPy's native one:

- DSPy's ``JSONAdapter`` sends a JSON schema only to an LM that declares schema support, and it knows nothing
  about a model on a private server, so it sent none and small models answered in free text. This engine
  declares the support, so the adapter sends the judge's schema.
- Servers spell schema-constrained output differently: OpenAI, vLLM and llama.cpp's ``llama-server`` take
  ``{"type": "json_schema", ...}``; llama-cpp-python's server rejects that type (HTTP 500) and takes
  ``{"type": "json_object", "schema": ...}``. A refused spelling is retried once in the next one and not sent
  to that server again in this process; until a server has accepted a spelling, schema requests to it go one at
  a time, so the calls in flight together do not each meet the refusal.
- Retries are ours, not DSPy's: HTTP 429 and 503 honoured with ``Retry-After``, exponential backoff with jitter,
  all inside the call's ``--timeout`` budget (``bineval_dspy.lm.retry``); optional client-side ``--rpm`` and
  ``--tpm`` limits; throttled and retried calls counted in ``usage``.
- A llama.cpp server (``llama-server``, llama-cpp-python's ``llama_cpp.server``) takes a GBNF ``grammar``: named
  as ``llamacpp/<model>``, its engine steers decoding (``Generator(enforce=...)``) by sending the request's
  constraints as a grammar (``enforce.grammar``); what a grammar cannot express is reported as not enforced. Any
  other server takes no grammar, and an enforcing program is refused before its first call.
- Every call runs on the process's one asyncio loop (``call`` over an ``Exchange``), whichever client sends it: DSPy's
  lm15 client for DSPy's calls, aiohttp for the verdict fast path's (``lm.fastpath``), so both get the same retries,
  limits, spellings, deadlines and (``lm.pool``) failover.
- The server is part of the model string (``openai/m@http://host:8000/v1``): DSPy leaves ``api_base`` out
  of its cache key, so two servers answering to the same model name would otherwise share cached answers.
"""

from __future__ import annotations

import asyncio
import builtins
import importlib
import random
import threading
import time
from collections.abc import Coroutine
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from dspy.clients.engines.lm15_engine import AsyncLM15Engine, timeouts_for
from dspy.lm15 import (
    InvalidRequestError,
    LM15Error,
    LMRouter,
    RateLimitError,
    Request,
    Response,
    RouterConfig,
    ServerError,
    TimeoutError,
    TransportError,
)

from bineval_dspy.core.errors import InputError, keep_secret
from bineval_dspy.enforce.grammar import code_digest, to_gbnf, unexpressed
from bineval_dspy.enforce.steering import CODE_KEY, METADATA_KEY, Steering, from_metadata
from bineval_dspy.lm.engine import ENGINE_CODE_KEY, EngineBase
from bineval_dspy.lm.retry import DEFAULT_TIMEOUT, RateLimiter, wait_before_retry
from bineval_dspy.lm.usage import report_retries

__all__ = ["DEFAULT_TIMEOUT", "GRAMMAR_PROVIDER", "RETRIES", "Exchange", "RemoteEngine", "Retries", "on_io_loop"]

GRAMMAR_PROVIDER = "llamacpp"  # `lm` llamacpp/<model> with `api_base`: a llama.cpp server, which takes a grammar

RETRIES = 1  # LiteLLM provider models (no --api-base): DSPy's one retry; servers at --api-base: lm.retry's policy
# lm15's own read and connect timeouts, raised inside its TransportError. Imported by name at run time, as
# ``fastpath`` imports lm15's HTTP reply: mypy, following the vendored package, loses sight of dspy's own names.
_transports = importlib.import_module("dspy._vendor.lm15.transports")
_CLIENT_TIMEOUTS = (_transports.ReadTimeout, _transports.ConnectTimeout)
TRANSIENT = (RateLimitError, ServerError, TimeoutError, TransportError)  # worth another try after a wait
THROTTLED_STATUS = (429, 503)  # the server says: not now

# Schema spellings in the order tried: OpenAI's, llama-cpp-python's, then JSON mode with the schema left to the prompt.
FORMS = ("json_schema", "json_object_schema", "json_object")


R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class Exchange(Protocol[R_co]):
    """One request to a server, as the engine's retries, rate limits, schema spellings and failover carry it,
    whichever client sends it: DSPy's lm15 client (``LM15Exchange``) or the verdict fast path's (``lm.fastpath``)."""

    @property
    def schema(self) -> bool: ...  # it carries a JSON schema, spelled as the server takes it

    def tokens(self) -> int: ...  # an estimate of what it may bill, for ``--tpm``

    def billed(self, reply: Any) -> int | None: ...  # the tokens a reply says it billed

    async def send(self, engine: RemoteEngine, form: str | None, seconds: float) -> R_co: ...  # one attempt; form: its schema's spelling


@dataclass
class Retries:
    """What one call met, counted once a call in ``usage``: a server throttling it, and a retry."""

    throttled: bool = False
    retried: bool = False


@dataclass
class _ServerForm:
    """What one server takes: the first spelling it has not refused, and whether one was accepted. Until one is,
    schema requests to it go one at a time, so a refusal costs one request per process, not one per request in
    flight."""

    index: int = 0
    settled: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # held on the I/O loop, where every attempt runs


_server_forms: dict[str, _ServerForm] = {}  # api_base -> what that server takes
_forms_lock = threading.Lock()


def _server_form(api_base: str) -> _ServerForm:
    with _forms_lock:
        return _server_forms.setdefault(api_base, _ServerForm())


class RemoteEngine(EngineBase):
    """One OpenAI-compatible server: DSPy's native lm15 client pointed at ``api_base``, plus the schema spelling,
    retries with backoff inside the call's timeout budget, optional client-side rate limits and a cap on the
    requests in flight (``limit_in_flight``)."""

    in_process = False  # calls run in parallel (see ``bineval_dspy.lm.specs.is_local``)
    supports_response_schema = True
    supports_function_calling = False
    supports_reasoning = False
    supported_params = frozenset(
        {"temperature", "max_tokens", "top_p", "stop", "seed", "response_format", "logprobs", "top_logprobs"}
    )

    def __init__(
        self,
        spec: str,
        api_base: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        rpm: float | None = None,
        tpm: float | None = None,
    ) -> None:
        self.spec = spec
        self.api_base = _checked_url(api_base)
        self.timeout = timeout
        self.limiter = RateLimiter(rpm, tpm)
        self._slots: asyncio.Semaphore | None = None
        self._rng = random.Random()
        self.connections = DEFAULT_CONNECTIONS
        prefix, _, model = spec.partition("/")
        # lm15's dialect for the server: Ollama's own, else its open-server one (vLLM's). That sends ``max_tokens``,
        # which every server takes, where the ``openai/`` prefix would send api.openai.com's ``max_completion_tokens``
        # (llama-cpp-python ignores it and generates without limit).
        provider = "ollama" if prefix in ("ollama", "ollama_chat") else "vllm"
        self.supports_steering = prefix == GRAMMAR_PROVIDER  # constraints go out as its ``grammar`` field
        self.steering_code = code_digest() if self.supports_steering else ""
        self.wire_model = f"{provider}:{model}"  # the model as lm15 routes it
        self._provider, self._api_key = provider, api_key
        keep_secret(api_key)  # a server may echo a key it refuses into its error
        self._client = self._connect(None)

    @property
    def client(self) -> AsyncLM15Engine:
        """lm15's client for this server."""
        return self._client

    def dialect(self) -> Any:
        """lm15's writer and reader of this server's requests and replies, sending nothing (what the verdict fast
        path renders its bodies and reads its replies with: the bytes and readings lm15's client would make)."""
        config = RouterConfig(api_keys={self._provider: self._api_key or "EMPTY"}, base_urls={self._provider: self.api_base}, env={})
        return LMRouter(config).lm(self.wire_model)

    def _connect(self, connections: int | None) -> AsyncLM15Engine:
        """lm15's client with a pool of ``connections`` (None: lm15's default, 100). env={}: only --api-key-env's
        key reaches the server, never an ambient OPENAI_API_KEY; keyless local servers still expect a bearer
        value, hence vLLM's placeholder."""
        return AsyncLM15Engine(
            RouterConfig(
                api_keys={self._provider: self._api_key or "EMPTY"},
                base_urls={self._provider: self.api_base},
                timeouts=timeouts_for(self.timeout),
                env={},
                max_connections=connections,
            )
        )

    @property
    def model(self) -> str:
        """The LM's model string: the spec and the server, so cache keys and verdicts tell servers apart."""
        return f"{self.spec}@{self.api_base}"

    def __deepcopy__(self, memo: dict[str, Any]) -> RemoteEngine:
        return self  # program copies share one connection pool

    def limit_in_flight(self, most: int | None) -> bool:
        """At most ``most`` requests of this engine open at once (``judge --concurrency``); None: no cap. A cap
        above lm15's pool of 100 connections widens the pool to it: requests past the pool would wait for a
        connection and time out on a healthy server."""
        self._slots = asyncio.Semaphore(most) if most else None
        if most:
            self.widen(most)
        return True

    def widen(self, connections: int) -> None:
        """A pool of at least ``connections`` connections to the server (lm15's default is 100; the fast path's
        pool is as large)."""
        if connections > self.connections:
            self.connections = connections
            self._client = self._connect(connections)

    def complete(self, request: Request) -> Response:
        """DSPy's door: one request through ``call``, on the I/O loop; its throttling and retries are counted in
        the ``usage`` of the work around it."""
        retries = Retries()
        try:
            return on_io_loop(self.call(LM15Exchange(self._grammared(request)), retries))
        finally:
            report_retries(retries.throttled, retries.retried)

    async def call(self, exchange: Exchange[R], retries: Retries) -> R:
        """Send one request, again after a transient failure while the call's budget lasts (``lm.retry``); what it
        met is noted in ``retries``."""
        started = time.monotonic()
        deadline = started + 2 * self.timeout  # retries start within the first timeout; no call outlives twice it
        retry = 0
        while True:
            try:
                return await self.attempt(exchange, deadline)
            except TRANSIENT as exc:
                retries.throttled = retries.throttled or _throttles(exc)
                remaining = started + self.timeout - time.monotonic()
                wait = wait_before_retry(retry, exc.retry_after, remaining, self._rng)
                if wait is None:
                    raise
                retries.retried, retry = True, retry + 1
                await asyncio.sleep(wait)

    async def attempt(self, exchange: Exchange[R], deadline: float) -> R:
        """One attempt, after the client-side rate limits allow it, in one of the in-flight slots (a pool of
        replicas retries on another server instead of here)."""
        estimate = exchange.tokens() if self.limiter.limited else 0
        if self.limiter.limited:
            await self.limiter.wait(estimate)
        async with self._slots if self._slots is not None else nullcontext():
            reply = await self._send(exchange, deadline)
        if self.limiter.limited:
            billed = exchange.billed(reply)
            self.limiter.settle(estimate, billed if billed is not None else estimate)
        return reply

    def unsteerable(self, steering: Steering) -> str:
        """What of ``steering`` this server's grammar cannot make true (``enforce.grammar.unexpressed``)."""
        missing = unexpressed(steering) if self.supports_steering else tuple(steering.model_dump(exclude_defaults=True))
        return f"this LM's grammar cannot express it ({', '.join(m.replace('_', ' ') for m in missing)})" if missing else ""

    async def _send(self, exchange: Exchange[R], deadline: float) -> R:
        """One request; a schema goes out in the spelling this server takes, found once per process."""
        if not exchange.schema:
            return await self._within(exchange, None, deadline)
        form = _server_form(self.api_base)
        if not form.settled:
            async with form.lock:  # one request at a time finds out; the others wait for its answer
                while not form.settled:
                    index = form.index
                    try:
                        reply = await self._within(exchange, FORMS[index], deadline)
                    except (InvalidRequestError, ServerError) as exc:
                        if index == len(FORMS) - 1 or not _refuses_format(exc):
                            raise
                        form.index = index + 1
                        continue
                    form.settled = True
                    return reply
        return await self._within(exchange, FORMS[form.index], deadline)

    def _grammared(self, request: Request) -> Request:
        """``request`` with the Steering its metadata carries sent as a GBNF ``grammar`` (lm15 sends extensions
        verbatim) and taken out of the metadata, which no server is sent. A server that takes no grammar gets no
        constrained request: decoding it plainly would read as enforced."""
        steering = from_metadata(request.config.extensions)
        if steering is None:
            return request
        if not self.supports_steering:
            raise InputError(f"{self.model} takes no grammar; only a llama.cpp server named {GRAMMAR_PROVIDER}/<model> decodes under constraints")
        extensions = dict(request.config.extensions or {})
        metadata = {k: v for k, v in extensions.pop("metadata").items() if k not in (METADATA_KEY, CODE_KEY, ENGINE_CODE_KEY)}
        extensions["grammar"] = to_gbnf(steering, request.config.max_tokens or GRAMMAR_MAX_TOKENS)
        if metadata:
            extensions["metadata"] = metadata
        return replace(request, config=replace(request.config, extensions=extensions))

    async def _within(self, exchange: Exchange[R], form: str | None, deadline: float) -> R:
        """The request, cancelled (its connection closed) at ``deadline``: a client's timeouts bound each read, so
        a reply dripped a byte at a time would otherwise never time out."""
        seconds = deadline - time.monotonic()
        if seconds <= 0:
            raise TimeoutError(f"no complete reply within the call's {2 * self.timeout:g} s")
        try:
            async with asyncio.timeout(seconds):
                return await exchange.send(self, form, seconds)
        except LM15Error:
            raise
        except builtins.TimeoutError:  # the deadline's, not the client's
            raise TimeoutError(f"no complete reply within the call's {2 * self.timeout:g} s") from None


class LM15Exchange:
    """A DSPy request sent by lm15's client (the engine's own); a schema spelled for the server by ``spelled``."""

    def __init__(self, request: Request) -> None:
        self.request = request

    @property
    def schema(self) -> bool:
        return carries_schema(self.request)

    def tokens(self) -> int:
        return _token_estimate(self.request)

    def billed(self, reply: Response) -> int | None:
        return billed_tokens(reply)

    async def send(self, engine: RemoteEngine, form: str | None, seconds: float) -> Response:
        request = replace(self.request, model=engine.wire_model)
        try:
            return await engine.client.complete(spelled(request, form) if form else request)
        except TransportError as exc:
            if isinstance(exc.__cause__, _CLIENT_TIMEOUTS):  # as the fast path says it: one kind of failure
                raise TimeoutError(f"no reply within {engine.timeout:g} s") from None
            raise


def carries_schema(request: Request) -> bool:
    """Whether a request asks for a JSON schema (which servers spell differently: ``FORMS``)."""
    schema_format = request.config.response_format
    return bool(schema_format) and schema_format.get("type") == "json_schema"


def billed_tokens(response: Response) -> int | None:
    """The tokens a reply says it billed, or None."""
    usage: Any = getattr(response, "usage", None)
    total = getattr(usage, "total_tokens", None)
    return int(total) if isinstance(total, int) and total >= 0 else None


DEFAULT_CONNECTIONS = 100  # lm15's pool when none is asked for
GRAMMAR_MAX_TOKENS = 256  # the reply length a grammar's free text is sized for when a request names none
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def on_io_loop(work: Coroutine[Any, Any, R]) -> R:
    """``work`` run on the I/O loop, its result (or exception) returned to this thread, which waits for it."""
    loop = io_loop()
    if getattr(_running, "loop", None) is loop:
        work.close()
        raise RuntimeError("on_io_loop: called from the I/O loop itself; await the work there")
    return asyncio.run_coroutine_threadsafe(work, loop).result()


_running = threading.local()


def io_loop() -> asyncio.AbstractEventLoop:
    """The process's one event loop for remote calls, on a daemon thread: every engine's requests run there, so a
    call past its deadline is cancelled rather than left reading."""
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_serve, args=(_loop,), name="bineval-remote-io", daemon=True).start()
        return _loop


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    _running.loop = loop
    loop.run_forever()


def _checked_url(api_base: str) -> str:
    """An http(s) URL without credentials, a query string or a fragment: the URL lands in model strings, scorecards,
    fingerprints and cache keys, so nothing secret may ride in it (and an endpoint path is appended to it). An error
    names the host only, never the rest."""
    url = urlsplit(api_base)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise InputError(f"`api_base` {url.scheme or '?'}://{url.hostname or '?'}...: expected an http(s) URL such as http://127.0.0.1:8000/v1")
    if url.username or url.password:
        raise InputError(f"`api_base` {url.hostname}: put the key in `api_key_env`, not in the URL")
    if url.query or url.fragment:
        raise InputError(f"`api_base` {url.hostname}: drop the URL's query string; a key goes in `api_key_env`, not in the URL")
    return api_base.rstrip("/")


def spelled(request: Request, form: str) -> Request:
    """The request with its JSON-schema ``response_format`` in one server dialect."""
    config = request.config
    if form == "json_schema":
        return request
    if form == "json_object":
        return replace(request, config=replace(config, response_format={"type": "json_object"}))
    # No canonical response_format expresses llama-cpp-python's spelling; extensions reach the wire verbatim.
    spelled = {"type": "json_object", "schema": config.response_format["schema"]}
    return replace(
        request,
        config=replace(
            config, response_format=None, extensions={**(config.extensions or {}), "response_format": spelled}
        ),
    )


def _refuses_format(exc: InvalidRequestError | ServerError) -> bool:
    """Whether an error is the server refusing the response_format spelling (servers name the field they reject)."""
    text = str(exc).lower()
    return "response_format" in text or "json_schema" in text


def _throttles(exc: LM15Error) -> bool:
    """Whether a failure is the server throttling (429, or 503 "busy"), not a fault."""
    return isinstance(exc, RateLimitError) or getattr(exc, "status", None) in THROTTLED_STATUS


def _token_estimate(request: Request) -> int:
    """Tokens a request may bill, before it is sent, for ``--tpm``: about four characters a token of its
    messages, plus its completion limit."""
    chars = sum(len(getattr(part, "text", "") or "") for message in request.messages for part in message.parts)
    return chars // 4 + int(request.config.max_tokens or 0)


