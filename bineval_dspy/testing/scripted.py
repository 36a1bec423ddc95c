"""A scripted DSPy 3.4 engine: a Python function plays the LM, so program logic is tested without a model."""

from __future__ import annotations

import json
from collections.abc import Callable

import dspy
from dspy.lm15 import Message, Request, Response, Usage

Script = Callable[[Request], str]
"""Computes the LM's reply text from the request DSPy's adapter built."""


class ScriptedEngine:
    """A DSPy engine whose reply is computed by ``script(request) -> str``; records every request."""

    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "response_format", "logprobs", "seed"})

    def __init__(self, script: Script) -> None:
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
        return self  # program.deepcopy() must keep one engine, so recorded requests stay in one place


def scripted_lm(script: Script) -> dspy.LM:
    """An uncached, no-retry LM around a script: every call reaches the script."""
    return dspy.LM("custom/scripted", engine=ScriptedEngine(script), cache=False, num_retries=0)


def verdict_json(answer: str, explanation: str = "because") -> str:
    """A ``BinaryJudge`` reply in JSON, as its JSONAdapter expects it."""
    return json.dumps({"verdict": {"answer": answer, "explanation": explanation}})


def question_of(request: Request) -> str:
    """The question block of a judge prompt, for scripts that answer per question."""
    text = request.messages[-1].text
    return text.split("[[ ## question ## ]]")[1].split("Respond with")[0].strip()
