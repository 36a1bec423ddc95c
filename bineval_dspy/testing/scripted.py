"""A scripted DSPy 3.4 engine: a Python function plays the LM, so program logic is tested without a model."""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dspy
from dspy.adapters.chat_adapter import field_header_pattern
from dspy.lm15 import Message, Request, Response, TokenLogprob, TopLogprob, Usage


@dataclass(frozen=True)
class Reply:
    """A scripted reply that also carries logprobs: ``p_yes`` is the probability of "yes" (against "no") at the
    first yes/no word after the reply's last ``"answer": "``, as a judge in probability mode reads it."""

    text: str
    p_yes: float


Script = Callable[[Request], "str | Reply"]
"""Computes the LM's reply (text, or a Reply with logprobs) from the request DSPy's adapter built."""
_LAST_ANSWER = re.compile(r'(.*"answer"\s*:\s*")(yes|no)(.*)', re.DOTALL)
_FIRST_WORD = re.compile(r"()(yes|no)(.*)", re.DOTALL)  # a reply continuing a prefilled verdict starts with its word


def _logprobs(reply: Reply) -> tuple[TokenLogprob, ...]:
    """Three tokens: the text before the verdict word (none when the reply starts with it), the word with yes/no
    alternatives, the rest."""
    match = _LAST_ANSWER.match(reply.text) or _FIRST_WORD.match(reply.text)
    if match is None:
        raise ValueError(f"a Reply with p_yes needs an answer of yes or no in its text: {reply.text!r}")
    before, word, after = match.groups()
    top = tuple(TopLogprob(token=w, logprob=math.log(max(p, 1e-12))) for w, p in (("yes", reply.p_yes), ("no", 1 - reply.p_yes)))
    chosen = next(t.logprob for t in top if t.token == word)
    tokens = (TokenLogprob(token=before, logprob=0.0), TokenLogprob(token=word, logprob=chosen, top=top), TokenLogprob(token=after, logprob=0.0))
    return tokens if before else tokens[1:]


class ScriptedEngine:
    """A DSPy engine whose reply is computed by ``script(request) -> str``; records every request.

    Every reply reports ``usage`` (default: one prompt and one completion token), so cost accounting is testable.
    """

    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "response_format", "logprobs", "seed"})

    def __init__(self, script: Script, usage: Usage | None = None) -> None:
        self.script = script
        self.usage = usage or Usage(input_tokens=1, output_tokens=1)
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Response:
        self.requests.append(request)
        reply = self.script(request)
        text = reply.text if isinstance(reply, Reply) else reply
        return Response(
            id=f"s{len(self.requests)}",
            model=request.model,
            message=Message.assistant(text),
            finish_reason="stop",
            usage=self.usage,
            logprobs=_logprobs(reply) if isinstance(reply, Reply) else None,
        )

    def __deepcopy__(self, memo: dict[str, Any]) -> ScriptedEngine:
        return self  # program.deepcopy() must keep one engine, so recorded requests stay in one place


def scripted_lm(script: Script, *, model: str = "custom/scripted", usage: Usage | None = None) -> dspy.LM:
    """An uncached, no-retry LM around a script: every call reaches the script.

    ``model`` is its model string: one LiteLLM's price map knows (``openai/gpt-4o-mini``) makes its calls priced.
    """
    return dspy.LM(model, engine=ScriptedEngine(script, usage), cache=False, num_retries=0)


def verdict_json(answer: str, explanation: str = "because") -> str:
    """A ``BinaryJudge`` reply in JSON, as its JSONAdapter expects it."""
    return json.dumps({"verdict": {"answer": answer, "explanation": explanation}})


class _Probe(dspy.Signature):
    given: str = dspy.InputField()
    wanted: str = dspy.OutputField()


@functools.cache
def _requirements_opening() -> str:
    """How DSPy's chat adapters open the output requirements they append to the last input field (asked of the
    adapters themselves, so a DSPy release that rewords them changes it here too)."""
    texts = [adapter.user_message_output_requirements(_Probe) for adapter in (dspy.ChatAdapter(), dspy.JSONAdapter())]
    return os.path.commonprefix(texts)


def prompt_fields(request: Request | str) -> dict[str, str]:
    """The input fields of the request's last user message (or of a message's text, as a test server receives it) by
    name, as DSPy's chat adapters laid them out.

    Read with the adapters' own field-header pattern and without the output requirements appended to the last
    field, so a script asks ``prompt_fields(request)["question"]`` rather than matching DSPy's marker strings.
    """
    fields: dict[str, list[str]] = {}
    current: list[str] | None = None
    text = request if isinstance(request, str) else next(m.text for m in reversed(request.messages) if m.role == "user")
    for line in text.splitlines():
        header = field_header_pattern.fullmatch(line.strip())
        if header is not None:
            current = fields.setdefault(header.group(1), [])
        elif current is not None:
            current.append(line)
    values = {name: "\n".join(lines).strip() for name, lines in fields.items()}
    if values:
        last = next(reversed(values))
        opening = _requirements_opening()
        values[last] = values[last].rsplit(opening, 1)[0].strip() if opening else values[last]
    return values


def question_of(request: Request) -> str:
    """The question of a judge prompt, for scripts that answer per question."""
    return prompt_fields(request)["question"]
