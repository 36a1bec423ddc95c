"""Shared fixtures: scripted LMs for our own logic, and DSPy settings isolated per test."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable

import dspy
import pytest
from dspy.lm15 import Message, Request, Response, Usage


class ScriptedEngine:
    """A DSPy engine whose reply is computed by ``script(request) -> str``; records every request."""

    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "response_format", "logprobs", "seed"})

    def __init__(self, script: Callable[[Request], str]) -> None:
        self.script = script
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Response:
        self.requests.append(request)
        text = self.script(request)
        return Response(
            id=f"s{len(self.requests)}",
            model=request.model,
            message=Message.assistant(text),
            finish_reason="stop",
            usage=Usage(input_tokens=1, output_tokens=1),
        )

    def __deepcopy__(self, memo: dict) -> ScriptedEngine:
        return self


def scripted_lm(script: Callable[[Request], str]) -> dspy.LM:
    """An uncached, no-retry LM around a script: every call reaches the script."""
    return dspy.LM("custom/scripted", engine=ScriptedEngine(script), cache=False, num_retries=0)


def verdict_json(answer: str, explanation: str = "because") -> str:
    return json.dumps({"verdict": {"answer": answer, "explanation": explanation}})


def question_of(request: Request) -> str:
    """The question block of a judge prompt."""
    text = request.messages[-1].text
    return text.split("[[ ## question ## ]]")[1].split("Respond with")[0].strip()


@pytest.fixture(autouse=True)
def isolated_dspy():
    """Memory-only cache and default settings for every test, restored afterwards."""
    from dspy.dsp.utils.settings import DEFAULT_CONFIG

    original_cache = dspy.cache
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)
    yield
    dspy.configure(**copy.deepcopy(DEFAULT_CONFIG), inherit_config=False)
    dspy.cache = original_cache
