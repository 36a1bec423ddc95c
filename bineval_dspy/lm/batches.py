"""``judge --batch``: a run's LM calls sent through an OpenAI-style batch API (``/v1/files`` + ``/v1/batches``),
which bills about half and answers within a day, for large offline runs.

Why it is built this way:

- The judge is not rewritten for batches. It runs over the rows with ``BatchEngine`` as its LM's engine: a
  request whose reply is known is answered, any other is recorded and fails (a verdict of that pass is thrown
  away). The recorded requests, exactly as the normal path would send them (lm15's wire body for the same
  server), go up as a JSONL batch; once it is done its replies are known and the judge runs again. Requests that
  depend on a reply (the explanation of a "no" under ``--explanations failures``) are recorded on that pass and
  go in a later batch. The last pass writes the rows through the normal judge path, so resume, fingerprints and
  exit codes behave as without ``--batch``; a request whose reply is missing or failed fails that call, and the
  verdict is unanswered, never a yes.
- A request's key (its ``custom_id``) is a hash of its wire body and DSPy's ``rollout_id``: the k samples of a
  vote are k requests, and a request asked twice is sent once.
- A submitted batch is recorded in ``OUT.batch.json`` (``BatchState``) before anything waits for it, so a run
  interrupted after submission resumes polling the same batch instead of paying for a second one. A batch
  collected by an earlier run lends its answered replies again; its failed requests are sent anew (a rerun
  retries, as without ``--batch``).
- The LM's model string gains ``prices.BATCH_SUFFIX``: replies are priced at batch rates (or unknown), and every
  verdict names how it was answered. DSPy's cache is off for it: the batches are the record (a rerun downloads
  the replies again), and a reply answered on a recording pass would otherwise be a free cache hit on the last
  pass, whose rows would then show none of the tokens the batch billed.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dspy
import httpx
from dspy.clients.capabilities import Capabilities, capabilities
from dspy.lm15 import LMRouter, Request, Response, RouterConfig, response_from_openai_chat
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bineval_dspy.core.console import console
from bineval_dspy.core.errors import InputError, RunError, one_line
from bineval_dspy.core.fingerprint import Fingerprint, first_difference
from bineval_dspy.core.jsonio import describe_validation_error, dumps_line, read_text, write_text_atomic
from bineval_dspy.lm.prices import BATCH_SUFFIX, price_of
from bineval_dspy.lm.retry import DEFAULT_TIMEOUT, wait_before_retry
from bineval_dspy.lm.runtime import SAMPLING_KEYS, LMOptions
from bineval_dspy.lm.usage import dollars

if TYPE_CHECKING:
    from bineval_dspy.lm.estimate import Plan

__all__ = ["BatchEngine", "BatchState", "BatchTarget", "batch_plan", "batch_target", "collect_replies", "state_path"]

OPENAI_BASE = "https://api.openai.com/v1"
ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"  # the only window OpenAI's batch API offers
MAX_REQUESTS = 50_000  # a batch's limits at OpenAI: requests, and bytes of its input file
MAX_BYTES = 190 * 1024 * 1024
MAX_ROUNDS = 4  # rounds of batches one run submits at most: a request that depends on a reply needs one more
POLL_FIRST, POLL_GROWTH, POLL_CAP = 1.0, 1.5, 60.0  # seconds between status checks: 1, 1.5, 2.25 ... up to a minute
DONE = ("completed", "failed", "expired", "cancelled")  # a batch in one of these will not change again
TRANSIENT_STATUS = (429, 500, 502, 503, 504)

_rollout: ContextVar[Any] = ContextVar("bineval_batch_rollout", default=None)


class BatchTarget(BaseModel):
    """Where a batch goes: the API base (``/files`` and ``/batches`` beside ``/chat/completions``), the lm15
    dialect and model name of the wire body, and the key."""

    model_config = ConfigDict(frozen=True)

    base_url: str
    dialect: str  # lm15's provider for the body: "vllm" for a server at --api-base (as lm.remote), else "openai-chat"
    model: str
    api_key: str = Field(repr=False)
    timeout: float = DEFAULT_TIMEOUT


def batch_target(options: LMOptions, budgeted: bool = False) -> BatchTarget:
    """The batch API of a run's LM, or one line saying why the run cannot use one: an embedded model runs in this
    process; providers other than OpenAI-style ones have batch APIs of their own; a budget (``budgeted``) cannot
    stop a batch, which is billed whole once submitted."""
    from bineval_dspy.lm.remote import _checked_url
    from bineval_dspy.lm.specs import EMBEDDED

    if budgeted:
        raise InputError("--batch: a batch is billed whole once submitted, so --max-cost and --max-calls cannot stop it; size the run with --limit")
    spec, flag = options.spec, f"{options.source} {options.spec}"
    if spec in EMBEDDED or spec.endswith(".gguf"):
        raise InputError(f"--batch: {flag} runs in this process; a batch goes to a provider's batch API (--lm openai/<model>, or --api-base)")
    prefix, _, model = spec.partition("/")
    timeout = options.timeout or DEFAULT_TIMEOUT
    if options.api_base:
        return BatchTarget(base_url=_checked_url(options.api_base), dialect="vllm", model=model or spec, api_key=options.api_key or "EMPTY", timeout=timeout)
    if prefix != "openai" or not model:
        raise InputError(f"--batch: {flag}: only OpenAI-style batch APIs (/v1/files + /v1/batches); use --lm openai/<model> or a server at --api-base")
    key = options.api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        raise InputError(f"--batch: {flag}: no API key: set OPENAI_API_KEY, or name the variable with --api-key-env")
    return BatchTarget(base_url=OPENAI_BASE, dialect="openai-chat", model=model, api_key=key, timeout=timeout)


def batch_plan(target: BatchTarget, plan: Plan) -> str:
    """The line ``--batch --dry-run`` adds to the plan: where its calls would go, in how many batches, at what price."""
    price = None if target.dialect == "vllm" else price_of(plan.model + BATCH_SUFFIX)
    most = None if price is None else plan.prompt_tokens * price.input + plan.calls * plan.completion_limit * price.output
    usd = "price unknown" if most is None else f"at most {dollars(most)} at batch rates"
    batches = max(1, -(-plan.calls // MAX_REQUESTS))
    return (
        f"--batch: would submit {plan.calls:,} request(s) in {batches} batch(es) to {target.base_url}/files and "
        f"{target.base_url}/batches (endpoint {ENDPOINT}, model {target.model}, window {COMPLETION_WINDOW}); {usd}; "
        "requests that depend on a reply (--explanations failures: the explanation of a 'no') go in a later batch; nothing was submitted"
    )


# -- the engine ---------------------------------------------------------------------------------------------------
class Reply(BaseModel):
    """One request's outcome in a batch: the chat completion it got, or why it got none."""

    body: dict[str, Any] | None = None
    error: str | None = None


class BatchPending(RuntimeError):
    """A request recorded for the next batch: this pass's call fails, its verdict is thrown away."""


class BatchReplyMissing(RuntimeError):
    """A request the batches did not answer (failed there, expired, or never sent): its verdict is unanswered."""


class BatchEngine:
    """A DSPy engine answering from batch replies by request key; with ``recording`` on, a request without one is
    kept for the next batch (and its call fails)."""

    def __init__(self, target: BatchTarget, declared: Capabilities) -> None:
        self.target = target
        self.supports_function_calling = declared.function_calling  # what the adapter asks of the normal LM
        self.supports_reasoning = declared.reasoning
        self.supports_response_schema = declared.response_schema
        self.supported_params = declared.params
        self.replies: dict[str, Reply] = {}
        self.recorded: dict[str, dict[str, Any]] = {}  # key -> wire body, for the next batch
        self.recording = True
        self._lock = threading.Lock()
        router = LMRouter(RouterConfig(api_keys={target.dialect: target.api_key}, base_urls={target.dialect: target.base_url}, env={}))
        self._wire_model = f"{target.dialect}:{target.model}"
        self._dialect = router.lm(self._wire_model)

    def __deepcopy__(self, memo: dict) -> BatchEngine:
        return self  # program copies share the replies

    def body(self, request: Request) -> dict[str, Any]:
        """The chat-completions body the normal path would send for ``request`` (lm15's serializer for the server)."""
        built = self._dialect.build_request(replace(request, model=self._wire_model), False)
        return json.loads(built.body)

    def complete(self, request: Request) -> Response:
        body = self.body(request)
        key = request_key(body, _rollout.get())
        with self._lock:
            reply = self.replies.get(key)
            if reply is None and self.recording:
                self.recorded.setdefault(key, body)
        if reply is None:
            if self.recording:
                raise BatchPending(f"request {key} goes in the next batch")
            raise BatchReplyMissing(f"request {key}: no reply in the batch")
        if reply.body is None:
            raise BatchReplyMissing(f"request {key} failed in the batch: {reply.error}")
        return response_from_openai_chat(reply.body, model=self.target.model, response_format=request.config.response_format)


class BatchLM(dspy.LM):
    """A ``dspy.LM`` that lets its engine see the call's ``rollout_id`` (DSPy keeps it out of the request), so the
    samples of a vote are separate batch requests."""

    def __call__(self, prompt: Any = None, *, messages: Any = None, **kwargs: Any) -> Any:
        token = _rollout.set(kwargs.get("rollout_id", self.kwargs.get("rollout_id")))
        try:
            return super().__call__(prompt, messages=messages, **kwargs)
        finally:
            _rollout.reset(token)


def request_key(body: dict[str, Any], rollout: Any) -> str:
    """A request's ``custom_id``: the hash of its wire body and rollout, stable across runs and processes."""
    text = json.dumps({"body": body, "rollout": rollout}, sort_keys=True, ensure_ascii=False)
    return "bineval-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def batch_lm(lm: dspy.LM, target: BatchTarget) -> tuple[BatchLM, BatchEngine]:
    """The LM a batched run judges with: ``lm``'s sampling settings and capabilities, a ``BatchEngine``, the model
    string with ``BATCH_SUFFIX`` (batch prices), and no DSPy cache."""
    engine = BatchEngine(target, capabilities(lm))
    settings = {key: lm.kwargs[key] for key in SAMPLING_KEYS if lm.kwargs.get(key) is not None}
    if "max_completion_tokens" in settings:  # a reasoning model's spelling: the engine's dialect writes its own
        settings["max_tokens"] = settings.pop("max_completion_tokens")
    batched = BatchLM(lm.model + BATCH_SUFFIX, engine=engine, cache=False, num_retries=0, **settings)
    return batched, engine


# -- the batch API ------------------------------------------------------------------------------------------------
class RequestCounts(BaseModel):
    total: int = 0
    completed: int = 0
    failed: int = 0


class BatchInfo(BaseModel):
    """What ``/v1/batches`` says of one batch (the fields we read)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    status: str
    output_file_id: str | None = None
    error_file_id: str | None = None
    request_counts: RequestCounts | None = None
    errors: dict[str, Any] | None = None


class BatchAPI:
    """The four calls of an OpenAI-style batch API; a transient failure (429, 5xx, a dropped connection) is tried
    again with backoff within ``timeout``, anything else is one ``RunError`` line naming the call."""

    def __init__(self, target: BatchTarget) -> None:
        self.target = target
        self._client = httpx.Client(headers={"Authorization": f"Bearer {target.api_key}"}, timeout=target.timeout)
        self._rng = random.Random()

    def close(self) -> None:
        self._client.close()

    def upload(self, name: str, data: bytes) -> str:
        """POST /files (purpose batch): the input file's id."""
        reply = self._call("POST", "/files", idempotent=False, data={"purpose": "batch"}, files={"file": (name, data, "application/jsonl")})
        file_id = reply.get("id")
        if not isinstance(file_id, str):
            raise RunError(f"POST {self.target.base_url}/files: the reply names no file id")
        return file_id

    def create(self, input_file_id: str) -> BatchInfo:
        """POST /batches for chat completions."""
        body = {"input_file_id": input_file_id, "endpoint": ENDPOINT, "completion_window": COMPLETION_WINDOW}
        return self._info("POST", "/batches", self._call("POST", "/batches", idempotent=False, json=body))

    def status(self, batch_id: str) -> BatchInfo:
        """GET /batches/{id}."""
        return self._info("GET", f"/batches/{batch_id}", self._call("GET", f"/batches/{batch_id}"))

    def content(self, file_id: str) -> str:
        """GET /files/{id}/content: the text of a result file."""
        return self._send("GET", f"/files/{file_id}/content", idempotent=True).text

    def _info(self, method: str, path: str, reply: dict[str, Any]) -> BatchInfo:
        try:
            return BatchInfo.model_validate(reply)
        except ValidationError as exc:
            raise RunError(f"{method} {self.target.base_url}{path}: not a batch ({describe_validation_error(exc)})") from None

    def _call(self, method: str, path: str, idempotent: bool = True, **kwargs: Any) -> dict[str, Any]:
        response = self._send(method, path, idempotent, **kwargs)
        try:
            reply = response.json()
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise RunError(f"{method} {self.target.base_url}{path}: the reply is not a JSON object")
        return reply

    def _send(self, method: str, path: str, idempotent: bool, **kwargs: Any) -> httpx.Response:
        """One call, again after a transient failure while its budget lasts; a POST only after the server said
        "not now" (429, 503), never after a dropped connection that may have created the batch."""
        url = f"{self.target.base_url}{path}"
        started, retry = time.monotonic(), 0
        while True:
            after: float | None = None
            try:
                response = self._client.request(method, url, **kwargs)
            except httpx.HTTPError as exc:
                if not idempotent:
                    raise RunError(f"{method} {url}: {one_line(exc)}") from None
                failure = one_line(exc)
            else:
                if response.status_code < 400:
                    return response
                failure = f"HTTP {response.status_code}: {_error_text(response)}"
                retryable = (429, 503) if not idempotent else TRANSIENT_STATUS
                if response.status_code not in retryable:
                    raise RunError(f"{method} {url}: {failure}")
                after = _retry_after(response)
            wait = wait_before_retry(retry, after, started + self.target.timeout - time.monotonic(), self._rng)
            if wait is None:
                raise RunError(f"{method} {url}: {failure}")
            retry += 1
            time.sleep(wait)


def _error_text(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    message = error.get("message") if isinstance(error, dict) else error
    return str(message or response.text or response.reason_phrase)[:200]


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None


# -- the state of a run's batches ------------------------------------------------------------------------------------
class SubmittedBatch(BaseModel):
    """One batch a run submitted: ``collected`` once its results were read and its verdicts written."""

    id: str
    number: int  # its input file is OUT.batch-NUMBER.jsonl until it is collected
    input_file_id: str
    keys: list[str]  # the custom_id of each request in it
    status: str
    collected: bool = False


class BatchState(BaseModel):
    """``OUT.batch.json``: the batches submitted for the run on ``OUT``, and the settings they were made for."""

    model_config = ConfigDict(extra="forbid")

    fingerprint: Fingerprint
    batches: list[SubmittedBatch] = []


def state_path(out: Path) -> Path:
    """Where the batch state of output ``out`` lives: ``OUT.batch.json`` beside it."""
    return out.with_name(out.name + ".batch.json")


def _load_state(path: Path, fingerprint: Fingerprint, overwrite: bool) -> BatchState:
    """The run's batch state: earlier batches made for these settings, else a fresh one. A batch still pending
    for other settings is refused in one line (collect it with those, or ``--overwrite`` to leave it)."""
    if not path.exists():
        return BatchState(fingerprint=fingerprint)
    try:
        state = BatchState.model_validate_json(read_text(path))
    except ValidationError as exc:
        raise InputError(f"{path}: not a batch state ({describe_validation_error(exc)}); delete it to submit anew") from None
    pending = [b for b in state.batches if not b.collected]
    difference = first_difference(state.fingerprint, fingerprint)
    if overwrite or difference:
        if pending and not overwrite:
            raise InputError(
                f"{path}: batch {pending[0].id} was submitted for other settings ({difference}); rerun with those settings "
                "to collect it, or use --overwrite to leave it and submit anew"
            )
        for batch in pending:
            console.print(f"--overwrite: batch {batch.id} is left at the provider, not collected (nor cancelled)", style="yellow")
        return BatchState(fingerprint=fingerprint)
    return state


def _save(path: Path, state: BatchState) -> None:
    write_text_atomic(path, state.model_dump_json(indent=2))


# -- the run ------------------------------------------------------------------------------------------------------
def collect_replies(
    lm: dspy.LM,
    target: BatchTarget,
    judge_all: Callable[[], object],
    out: Path,
    fingerprint: Fingerprint,
    overwrite: bool = False,
    follow_ups: bool = True,
) -> dspy.LM:
    """Get every reply the judge needs through batches; configure DSPy with the LM that answers from them, and
    return it.

    ``judge_all`` judges the rows still to do with DSPy's configured LM (its results are thrown away): it runs
    once per round, recording the requests without a reply, until a pass records none or ``MAX_ROUNDS``
    rounds of batches were sent. ``fingerprint`` (the run's, plus the batch API's address) ties ``OUT.batch.json`` to these
    settings. ``follow_ups``: whether the judge may ask again after reading a reply (``--explanations failures``);
    without, a round it submitted answers every request it recorded and no pass checks again (each pass formats
    every prompt: on a large run it costs as much as the run's own formatting). The returned LM answers what the
    batches answered; any other call fails (an unanswered verdict).
    """
    batched, engine = batch_lm(lm, target)
    api = BatchAPI(target)
    path = state_path(out)
    fingerprint = {**fingerprint, "batch_api": target.base_url}
    state = _load_state(path, fingerprint, overwrite)
    _save(path, state)
    earlier = {b.id for b in state.batches if b.collected}  # their failures are asked again
    fetched: set[str] = set()
    rounds = 0
    try:
        while True:
            engine.recorded.clear()
            with dspy.context(lm=batched):
                judge_all()
            if not engine.recorded:
                break
            unread = [b for b in state.batches if b.id not in fetched]  # of an earlier or interrupted run: first
            fresh = not unread
            if fresh:
                if rounds == MAX_ROUNDS:
                    console.print(f"--batch: {len(engine.recorded)} request(s) still unasked after {rounds} rounds of batches: unanswered", style="yellow")
                    break
                for chunk in _chunks(engine.recorded):
                    unread.append(_submit(api, chunk, out, path, state))
                rounds += 1
            for batch in unread:
                _collect(api, engine, batch, keep_failures=batch.id not in earlier, path=path, state=state)
                fetched.add(batch.id)
            if fresh and not follow_ups:  # every request recorded is answered or failed now
                break
    finally:
        api.close()
    engine.recording = False
    answered = sum(r.body is not None for r in engine.replies.values())
    failed = len(engine.replies) - answered
    if engine.replies:
        console.print(f"--batch: {answered:,} request(s) answered by {len(fetched)} batch(es)" + (f", {failed:,} failed there" if failed else ""))
    for batch in state.batches:
        batch.collected = True
        _input_file(out, batch.number).unlink(missing_ok=True)
    _save(path, state)
    dspy.configure(lm=batched)
    return batched


def _chunks(recorded: dict[str, dict[str, Any]]) -> Iterator[dict[str, str]]:
    """The recorded requests as batch input lines by key, in batches within the API's request and size limits."""
    lines: dict[str, str] = {}
    size = 0
    for key, body in recorded.items():
        line = dumps_line({"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body})
        length = len(line.encode("utf-8"))
        if lines and (len(lines) == MAX_REQUESTS or size + length > MAX_BYTES):
            yield lines
            lines, size = {}, 0
        lines[key] = line
        size += length
    if lines:
        yield lines


def _input_file(out: Path, number: int) -> Path:
    """Where the input file of a run's batch ``number`` is written: beside the output, until the batch is collected."""
    return out.with_name(f"{out.name}.batch-{number}.jsonl")


def _submit(api: BatchAPI, lines: dict[str, str], out: Path, path: Path, state: BatchState) -> SubmittedBatch:
    """Write one batch input file beside the output, upload it, create the batch and record it in the state; Ctrl-C
    waits while the batch is created and recorded, so a batch the provider bills is never one the state lacks."""
    number = len(state.batches)
    text = "".join(lines.values())
    requests = _input_file(out, number)
    write_text_atomic(requests, text)
    data = text.encode("utf-8")
    file_id = api.upload(requests.name, data)
    try:
        with _sigint_deferred():
            info = api.create(file_id)
            batch = SubmittedBatch(id=info.id, number=number, input_file_id=file_id, keys=list(lines), status=info.status)
            state.batches.append(batch)
            _save(path, state)
    except KeyboardInterrupt:
        if len(state.batches) > number:
            _left_running(state.batches[number], path)
        raise
    console.print(
        f"--batch: submitted batch {info.id}: {len(lines):,} request(s) ({len(data):,} bytes, {requests.name}); "
        "waiting for it (Ctrl-C leaves it running: rerun to collect it)"
    )
    return batch


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Ctrl-C during the block is held back and raised when it ends (Python takes signals in the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            raise KeyboardInterrupt


def _collect(api: BatchAPI, engine: BatchEngine, batch: SubmittedBatch, keep_failures: bool, path: Path, state: BatchState) -> None:
    """Wait for one batch to end, then read its replies into the engine (its failures only when ``keep_failures``:
    a batch of an earlier run lends only its answers)."""
    info = _wait(api, batch, path, state)
    if info.status == "failed":
        reasons = "; ".join(str(e.get("message", e)) for e in ((info.errors or {}).get("data") or [])[:3] if isinstance(e, dict))
        console.print(f"--batch: batch {batch.id} failed{': ' + reasons if reasons else ''}; its requests are unanswered", style="yellow")
    elif info.status != "completed":
        console.print(f"--batch: batch {batch.id} {info.status}: the requests it did not answer are unanswered", style="yellow")
    replies: dict[str, Reply] = {}
    for file_id in (info.output_file_id, info.error_file_id):
        if file_id:
            replies.update(_read_results(api.content(file_id), f"{batch.id} file {file_id}"))
    for key, reply in replies.items():
        if reply.body is not None or keep_failures:
            engine.replies[key] = reply
    if keep_failures:  # requests of this batch with no line in its results: failed too
        for key in batch.keys:
            engine.replies.setdefault(key, Reply(error=f"batch {batch.id} ({info.status}) gave no result for it"))


def _wait(api: BatchAPI, batch: SubmittedBatch, path: Path, state: BatchState) -> BatchInfo:
    """Poll a batch until it ends, saying on stderr when its status or counts change; Ctrl-C leaves it running."""
    wait, shown = POLL_FIRST, ""
    try:
        while True:
            info = api.status(batch.id)
            if info.status != batch.status:
                batch.status = info.status
                _save(path, state)
            counts = info.request_counts or RequestCounts()
            line = f"--batch: batch {batch.id} {info.status}: {counts.completed:,} of {counts.total or len(batch.keys):,} done, {counts.failed:,} failed"
            if line != shown:
                console.print(line)
                shown = line
            if info.status in DONE:
                return info
            time.sleep(wait)
            wait = min(POLL_CAP, wait * POLL_GROWTH)
    except KeyboardInterrupt:
        _left_running(batch, path)
        raise


def _left_running(batch: SubmittedBatch, path: Path) -> None:
    console.print(f"--batch: batch {batch.id} is still running at the provider; {path.name} keeps it: rerun the same command to collect it", style="yellow")


def _read_results(text: str, where: str) -> dict[str, Reply]:
    """A batch result file (output or errors) as replies by ``custom_id``; a line we cannot read answers nothing."""
    replies: dict[str, Reply] = {}
    unreadable = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            key = item["custom_id"]
        except (ValueError, KeyError, TypeError):
            unreadable += 1
            continue
        replies[key] = _reply(item)
    if unreadable:
        console.print(f"--batch: {unreadable} line(s) of batch {where} could not be read: their requests are unanswered", style="yellow")
    return replies


def _reply(item: dict[str, Any]) -> Reply:
    """One result line: a chat completion (HTTP 200 with choices), else the failure it reports."""
    raw = item.get("response")
    response: dict[str, Any] = raw if isinstance(raw, dict) else {}
    error = item.get("error")
    status = response.get("status_code")
    body = response.get("body")
    if not error and status == 200 and isinstance(body, dict) and body.get("choices"):
        return Reply(body=body)
    if isinstance(error, dict):
        return Reply(error=str(error.get("message") or error.get("code") or error))
    message = body.get("error", {}).get("message") if isinstance(body, dict) and isinstance(body.get("error"), dict) else None
    return Reply(error=f"HTTP {status}: {message or 'no completion'}")
