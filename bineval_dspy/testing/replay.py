"""Record/replay LMs: record a program's LM traffic once into a cassette, then replay it offline.

Why: a scripted LM must be written by hand for every prompt. A cassette is recorded from any engine or LM
(a real model included) and then answers exactly the requests it saw, without the model, and fails loudly,
naming the request, when the program starts asking something new.

A cassette is a JSON Lines file, one :class:`CassetteEntry` per line, sorted by key so re-recording the
same calls rewrites the same file. An entry is one request (model, system prompt, messages and the settings
that change the answer) with its answers in call order: a request made twice (sampling, ``n > 1``, or calls
that differ only by ``rollout_id``, which DSPy keeps out of the request) is answered in turn.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import dspy
from dspy.clients.backend_selection import CLIENT_KEYS
from dspy.lm15 import FinishReason, Message, Request, Response, TokenLogprob, TopLogprob, Usage
from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError, model_validator

from bineval_dspy.core.errors import BinevalError
from bineval_dspy.core.jsonio import write_text_atomic
from bineval_dspy.testing.scripted import Script, ScriptedEngine

PREVIEW_LINES = 4


@runtime_checkable
class CompletionEngine(Protocol):
    """What DSPy calls on a custom engine passed as ``dspy.LM(..., engine=...)``."""

    def complete(self, request: Request) -> Response: ...


class _Record(BaseModel):
    """Cassette models refuse unknown fields, so a typo in a hand-edited cassette fails instead of being dropped."""

    model_config = ConfigDict(extra="forbid")


class RecordedConfig(_Record):
    """The answer-changing generation settings of a request."""

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    response_format: dict[str, JsonValue] | None = None
    logprobs: int | None = None


ANSWER_FIELDS = tuple(RecordedConfig.model_fields)
"""The ``Config`` fields that change what a model answers; they are part of the key, other fields are not."""


class RecordedMessage(_Record):
    role: str
    text: str


class RecordedRequest(_Record):
    """What identifies a request: the model string, the system prompt, the messages and the settings."""

    model: str
    system: str | None
    messages: list[RecordedMessage]
    config: RecordedConfig

    @classmethod
    def of(cls, request: Request) -> RecordedRequest:
        """The record of a DSPy request; only text prompts can be recorded (DSPy's adapters send text)."""
        messages = [RecordedMessage(role=m.role, text=_text(m.text, f"a {m.role} message")) for m in request.messages]
        system = None if request.system is None else _text(request.system, "the system prompt")
        config = RecordedConfig(**{name: getattr(request.config, name) for name in ANSWER_FIELDS})
        return cls(model=request.model, system=system, messages=messages, config=config)

    def key(self) -> str:
        """A short digest of the canonical JSON: the same in every process and Python version (no ``hash()``)."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]

    def preview(self) -> str:
        """The first lines of the system prompt and of the last message, to recognise a request in an error."""
        parts = [("system", self.system)] if self.system else []
        parts.append((self.messages[-1].role, self.messages[-1].text))
        lines = []
        for role, text in parts:
            head = text.splitlines()[:PREVIEW_LINES] or [""]
            lines += [f"  {role}: {head[0]}", *(f"    {line}".rstrip() for line in head[1:])]
        return "\n".join(lines)

    def setting_changes(self, recorded: RecordedRequest) -> list[str]:
        """``name: recorded -> asked`` for the model and each setting that differs from ``recorded``."""
        asked = {"model": self.model, **self.config.model_dump(mode="json")}
        before = {"model": recorded.model, **recorded.config.model_dump(mode="json")}
        return [f"{name}: {before[name]!r} -> {value!r}" for name, value in asked.items() if before[name] != value]


class RecordedAlternative(_Record):
    token: str
    logprob: float


class RecordedToken(_Record):
    token: str
    logprob: float
    top: list[RecordedAlternative] = []


class RecordedResponse(_Record):
    """One answer: its text, why it stopped, its token counts and (when asked for) its logprobs."""

    text: str
    finish_reason: FinishReason = "stop"
    input_tokens: int | None = None
    output_tokens: int | None = None
    logprobs: list[RecordedToken] | None = None

    @classmethod
    def of(cls, response: Response) -> RecordedResponse:
        logprobs = None
        if response.logprobs is not None:
            logprobs = [
                RecordedToken(
                    token=t.token,
                    logprob=t.logprob,
                    top=[RecordedAlternative(token=a.token, logprob=a.logprob) for a in t.top],
                )
                for t in response.logprobs
            ]
        return cls(
            text=_text(response.text, "the reply"),
            finish_reason=response.finish_reason,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            logprobs=logprobs,
        )

    def to_response(self, model: str, id: str) -> Response:
        logprobs = None
        if self.logprobs is not None:
            logprobs = tuple(
                TokenLogprob(
                    token=t.token,
                    logprob=t.logprob,
                    top=tuple(TopLogprob(token=a.token, logprob=a.logprob) for a in t.top),
                )
                for t in self.logprobs
            )
        return Response(
            id=id,
            model=model,
            message=Message.assistant(self.text),
            finish_reason=self.finish_reason,
            usage=Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens),
            logprobs=logprobs,
        )


class CassetteEntry(_Record):
    """One line of a cassette: a request, its key (what errors name) and its answers in call order."""

    key: str
    request: RecordedRequest
    responses: list[RecordedResponse]

    @model_validator(mode="after")
    def _key_matches_request(self) -> CassetteEntry:
        if self.key != self.request.key():
            raise ValueError(f"key {self.key} does not match its request (was the request edited by hand?)")
        return self


class CassetteMiss(BinevalError, LookupError):
    """A replayed program asked something its cassette does not answer. DSPy raises it as an ``LMError`` cause."""

    def __init__(self, message: str, key: str, request: RecordedRequest) -> None:
        super().__init__(message)
        self.key = key
        self.request = request


def load_cassette(path: str | Path) -> dict[str, CassetteEntry]:
    """The entries of a cassette by key; a malformed line is reported with its line number."""
    entries: dict[str, CassetteEntry] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = CassetteEntry.model_validate_json(line)
        except ValidationError as exc:
            raise ValueError(f"{path}:{number}: not a cassette entry: {exc}") from exc
        if entry.key in entries:
            raise ValueError(f"{path}:{number}: key {entry.key} appears twice")
        entries[entry.key] = entry
    return entries


def save_cassette(path: str | Path, entries: Iterable[CassetteEntry]) -> None:
    """Write entries sorted by key, atomically, so an interrupted recording never leaves half a line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [entry.model_dump_json() + "\n" for entry in sorted(entries, key=lambda entry: entry.key)]
    write_text_atomic(path, "".join(lines))


class RecordingEngine:
    """A DSPy engine that forwards each request to an inner engine or LM and records request and answer.

    It starts a new cassette at ``path`` (replacing any old one) and rewrites it after every call, so a test
    that fails half-way still leaves what it recorded. It declares the inner engine's capabilities, so
    adapters build the same requests as they would for the inner one.
    """

    def __init__(self, inner: dspy.BaseLM | CompletionEngine, path: str | Path) -> None:
        if not isinstance(inner, (dspy.BaseLM, CompletionEngine)):
            raise TypeError(f"record a dspy.LM or an engine with complete(Request), not {type(inner).__name__}")
        self.inner = inner
        self.path = Path(path)
        self.supports_response_schema = bool(getattr(inner, "supports_response_schema", False))
        self.supported_params = frozenset(getattr(inner, "supported_params", ()) or ())
        self.entries: dict[str, CassetteEntry] = {}
        self._lock = threading.Lock()
        save_cassette(self.path, ())

    def complete(self, request: Request) -> Response:
        recorded = RecordedRequest.of(request)  # before the call: an unrecordable prompt fails without cost
        if isinstance(self.inner, dspy.BaseLM):
            response = self.inner(replace(request, model=self.inner.model))
        else:
            response = self.inner.complete(request)
        answer = RecordedResponse.of(response)
        key = recorded.key()
        with self._lock:
            entry = self.entries.setdefault(key, CassetteEntry(key=key, request=recorded, responses=[]))
            entry.responses.append(answer)
            save_cassette(self.path, self.entries.values())
        return response

    def __deepcopy__(self, memo: dict[str, Any]) -> RecordingEngine:
        return self  # program.deepcopy() must keep recording into this one cassette


class ReplayEngine:
    """A DSPy engine that answers from a cassette, each request's answers in the order they were recorded.

    A request that is not in the cassette, or asked more often than recorded, raises :class:`CassetteMiss`,
    unless a ``fallback`` script is given: then the script answers it (the cassette is not changed).
    It declares the response formats its cassette saw, so adapters shape requests as they did while recording.
    """

    def __init__(self, path: str | Path, *, fallback: Script | None = None) -> None:
        self.path = Path(path)
        self.entries = load_cassette(self.path)
        self.fallback = None if fallback is None else ScriptedEngine(fallback)
        formats = {fmt["type"] for fmt in (e.request.config.response_format for e in self.entries.values()) if fmt}
        params = frozenset(ANSWER_FIELDS)
        self.supports_response_schema = "json_schema" in formats
        self.supported_params = params if formats else params - {"response_format"}
        self._served: Counter[str] = Counter()
        self._lock = threading.Lock()

    def complete(self, request: Request) -> Response:
        recorded = RecordedRequest.of(request)
        key = recorded.key()
        with self._lock:
            entry = self.entries.get(key)
            turn = self._served[key]
            if entry is not None and turn < len(entry.responses):
                self._served[key] += 1
                return entry.responses[turn].to_response(request.model, id=f"replay-{key}-{turn + 1}")
        if self.fallback is not None:
            return self.fallback.complete(request)
        raise CassetteMiss(self._miss_message(key, recorded, entry), key, recorded)

    def _miss_message(self, key: str, recorded: RecordedRequest, entry: CassetteEntry | None) -> str:
        if entry is not None:
            problem = f"request {key} was recorded {len(entry.responses)} time(s) and is now asked once more"
        else:
            problem = f"request {key} is not in the cassette"
        lines = [f"{self.path}: {problem}.", "The prompt begins:", recorded.preview()]
        for other in self.entries.values():
            same_prompt = (other.request.system, other.request.messages) == (recorded.system, recorded.messages)
            if same_prompt and other.key != key:
                changes = "; ".join(recorded.setting_changes(other.request))
                lines.append(f"The cassette has this prompt with other settings ({changes}).")
        lines.append("Record the cassette again, or pass fallback= to answer new requests with a script.")
        return "\n".join(lines)

    def __deepcopy__(self, memo: dict[str, Any]) -> ReplayEngine:
        return self  # program copies share one cassette and one count of answers served


def recording_lm(
    inner: dspy.BaseLM | CompletionEngine, path: str | Path, *, model: str | None = None, **kwargs: Any
) -> dspy.LM:
    """An LM that records ``inner`` (a ``dspy.LM`` or an engine) into the cassette at ``path``.

    For an LM it takes over the model string and generation settings, so the requests match the ones the
    inner LM would get, but not its connection settings (``api_key``, ``api_base``...): those stay with the
    inner LM and never reach the cassette. For an engine the model string defaults to ``custom/recorded``.
    """
    if isinstance(inner, dspy.BaseLM):
        kwargs = {**{name: value for name, value in inner.kwargs.items() if name not in CLIENT_KEYS}, **kwargs}
        model = model or inner.model
    engine = RecordingEngine(inner, path)
    return dspy.LM(model or "custom/recorded", engine=engine, cache=False, num_retries=0, **kwargs)


def replay_lm(path: str | Path, *, model: str | None = None, fallback: Script | None = None, **kwargs: Any) -> dspy.LM:
    """An LM answering from the cassette at ``path``, with the cassette's model string unless ``model`` is given.

    Pass the generation settings used while recording (``temperature=``, ``max_tokens=``): they are part of
    each request's key.
    """
    engine = ReplayEngine(path, fallback=fallback)
    if model is None:
        models = sorted({entry.request.model for entry in engine.entries.values()})
        if len(models) != 1:
            raise ValueError(f"{path} holds models {models}: pass model= to choose the one to replay")
        model = models[0]
    return dspy.LM(model, engine=engine, cache=False, num_retries=0, **kwargs)


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"record/replay handles text only, and {what} is not plain text")
    return value
