"""OpenAI-compatible servers named by ``--api-base`` (vLLM, llama.cpp, llama-cpp-python, Ollama) as a DSPy engine.

Why an engine of our own around DSPy's native one:

- DSPy's ``JSONAdapter`` sends a JSON schema only to an LM that declares schema support, and it knows nothing
  about a model on a private server, so it sent none and small models answered in free text. This engine
  declares the support, so the adapter sends the judge's schema.
- Servers spell schema-constrained output differently: OpenAI, vLLM and llama.cpp's ``llama-server`` take
  ``{"type": "json_schema", ...}``; llama-cpp-python's server rejects that type (HTTP 500) and takes
  ``{"type": "json_object", "schema": ...}``. A refused spelling is retried once in the next one and not sent
  to that server again in this process.
- The server is part of the model string (``openai/m@http://host:8000/v1``): DSPy leaves ``api_base`` out
  of its cache key, so two servers answering to the same model name would otherwise share cached answers.
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlsplit

import dspy
from dspy.clients.engines.lm15_engine import LM15Engine, timeouts_for
from dspy.lm15 import InvalidRequestError, LM15Error, Request, Response, RouterConfig, ServerError

from bineval_dspy.core.errors import InputError

DEFAULT_TIMEOUT = 120.0  # seconds to wait for a server's answer to one call
RETRIES = 1  # one retry of a transient failure: a dead or hung server costs at most 2 x timeout + 1 s per call
# DSPy sleeps for a server's Retry-After before its retry, however long: "Retry-After: 100000" would stall a run
# for a day. The wait is capped at the call timeout, so a throttling server costs at most 3 x timeout per call.

# Schema spellings in the order tried: OpenAI's, llama-cpp-python's, then JSON mode with the schema left to the prompt.
_FORMS = ("json_schema", "json_object_schema", "json_object")
_first_form: dict[str, int] = {}  # api_base -> index in _FORMS of the first spelling that server has not refused


class RemoteEngine:
    """One OpenAI-compatible server: DSPy's native lm15 client pointed at ``api_base``, plus the schema spelling."""

    in_process = False  # calls run in parallel (see ``bineval_dspy.lm.specs.is_local``)
    supports_response_schema = True
    supports_function_calling = False
    supports_reasoning = False
    supported_params = frozenset(
        {"temperature", "max_tokens", "top_p", "stop", "seed", "response_format", "logprobs", "top_logprobs"}
    )

    def __init__(
        self, spec: str, api_base: str, *, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.spec = spec
        self.api_base = _checked_url(api_base)
        self.timeout = timeout
        prefix, _, model = spec.partition("/")
        # lm15's dialect for the server: Ollama's own, else its open-server one (vLLM's). That sends ``max_tokens``,
        # which every server takes, where the ``openai/`` prefix would send api.openai.com's ``max_completion_tokens``
        # (llama-cpp-python ignores it and generates without limit).
        provider = "ollama" if prefix in ("ollama", "ollama_chat") else "vllm"
        self._wire_model = f"{provider}:{model}"
        # env={}: only --api-key-env's key reaches the server, never an ambient OPENAI_API_KEY; keyless local
        # servers still expect a bearer value, hence vLLM's placeholder.
        self._client = LM15Engine(
            RouterConfig(
                api_keys={provider: api_key or "EMPTY"},
                base_urls={provider: self.api_base},
                timeouts=timeouts_for(timeout),
                env={},
            )
        )

    @property
    def model(self) -> str:
        """The LM's model string: the spec and the server, so cache keys and verdicts tell servers apart."""
        return f"{self.spec}@{self.api_base}"

    def __deepcopy__(self, memo: dict) -> RemoteEngine:
        return self  # program copies share one connection pool

    def complete(self, request: Request) -> Response:
        """Send one request (see ``_send``); a server's Retry-After is capped at the call timeout."""
        try:
            return self._send(request)
        except LM15Error as exc:
            if exc.retry_after is not None and exc.retry_after > self.timeout:
                exc.retry_after = self.timeout
            raise

    def _send(self, request: Request) -> Response:
        """One request; a schema goes out in the first spelling this server has not refused."""
        request = replace(request, model=self._wire_model)
        schema_format = request.config.response_format
        if not schema_format or schema_format.get("type") != "json_schema":
            return self._client.complete(request)
        first = _first_form.get(self.api_base, 0)
        for index in range(first, len(_FORMS) - 1):
            try:
                return self._client.complete(_spelled(request, _FORMS[index]))
            except (InvalidRequestError, ServerError) as exc:
                if not _refuses_format(exc):
                    raise
                _first_form[self.api_base] = index + 1
        return self._client.complete(_spelled(request, _FORMS[-1]))


def remote_lm(
    spec: str,
    api_base: str,
    *,
    api_key: str | None,
    timeout: float,
    temperature: float,
    max_tokens: int,
    cache: bool,
    **kwargs,
) -> dspy.LM:
    """A ``dspy.LM`` calling the server at ``api_base`` (DSPy's cache and retries, our engine)."""
    engine = RemoteEngine(spec, api_base, api_key=api_key, timeout=timeout)
    return dspy.LM(
        engine.model,
        engine=engine,
        temperature=temperature,
        max_tokens=max_tokens,
        cache=cache,
        num_retries=RETRIES,
        **kwargs,
    )


def _checked_url(api_base: str) -> str:
    """An http(s) URL without credentials (they would land in model strings, scorecards and cache keys)."""
    url = urlsplit(api_base)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise InputError(f"--api-base {api_base}: expected an http(s) URL such as http://127.0.0.1:8000/v1")
    if url.username or url.password:
        raise InputError(f"--api-base {url.hostname}: put the key in --api-key-env, not in the URL")
    return api_base.rstrip("/")


def _spelled(request: Request, form: str) -> Request:
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
