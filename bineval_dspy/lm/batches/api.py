"""The four calls of an OpenAI-style batch API (upload, create, status, content), retried through transient
failures within the call's budget."""

from __future__ import annotations

import random
import time
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from bineval_dspy.core.errors import RunError, one_line
from bineval_dspy.core.jsonio import describe_validation_error
from bineval_dspy.lm.batches.target import COMPLETION_WINDOW, ENDPOINT, BatchTarget
from bineval_dspy.lm.retry import wait_before_retry

TRANSIENT_STATUS = (429, 500, 502, 503, 504)


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
                    raise (Gone if response.status_code in (404, 410) else RunError)(f"{method} {url}: {failure}")
                after = _retry_after(response)
            wait = wait_before_retry(retry, after, started + self.target.timeout - time.monotonic(), self._rng)
            if wait is None:
                raise RunError(f"{method} {url}: {failure}")
            retry += 1
            time.sleep(wait)


class Gone(RunError):
    """The server has no such object (HTTP 404 or 410): a result file it deleted, say. Asking again cannot help."""


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

