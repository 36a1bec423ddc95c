"""The engine a batched run judges with: it answers from batch replies by request key, and records the requests
it has no reply for (their calls fail: that pass's verdicts are thrown away)."""

from __future__ import annotations

import hashlib
import json
import threading
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

import dspy
from dspy.clients.capabilities import Capabilities, capabilities
from dspy.lm15 import LMRouter, Request, Response, RouterConfig, response_from_openai_chat
from pydantic import BaseModel

from bineval_dspy.core.errors import BinevalError
from bineval_dspy.lm.batches.target import BatchTarget
from bineval_dspy.lm.prices import BATCH_SUFFIX
from bineval_dspy.lm.runtime import SAMPLING_KEYS

_rollout: ContextVar[Any] = ContextVar("bineval_batch_rollout", default=None)


class Reply(BaseModel):
    """One request's outcome in a batch: the chat completion it got, or why it got none."""

    body: dict[str, Any] | None = None
    error: str | None = None


class BatchPending(BinevalError, RuntimeError):
    """A request recorded for the next batch: this pass's call fails, its verdict is thrown away."""


class BatchReplyMissing(BinevalError, RuntimeError):
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

    def __deepcopy__(self, memo: dict[str, Any]) -> BatchEngine:
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

