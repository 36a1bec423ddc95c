"""A verdict's request and the reading of its reply, defined once for every transport.

The signature and output model a per-question call sends, the stops that end it after the answer, and the adapters
that read its reply (whole, verdict-first, prefilled, and a batch call's) live here: DSPy's path
(``BinaryJudge``'s predictors) and the remote fast path (``judges.fast``, which captures the request DSPy's adapter
formats and reads the reply with ``read_output``) both use these, so the two cannot drift apart. Every reader goes
through ``replies.check_reply`` first: a reply that is not exactly one JSON object is no verdict.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import dspy
import json_repair
from dspy.utils.exceptions import AdapterParseError
from pydantic import BaseModel, Field

from bineval_dspy.judges.formats import MemoJSONAdapter
from bineval_dspy.judges.replies import parsed_reply, unfenced


class Answer(BaseModel):
    """Your verdict on the question: "yes" or "no", and one short sentence saying why."""

    # Output models are shown to the LM as JSON schema (docstring included); bounds live on their fields
    # so they reach the schema and a local model's grammar.

    answer: Literal["yes", "no"]
    explanation: str = Field(max_length=160, description="one short sentence saying why")


class AnswerQuestion(dspy.Signature):
    """You are a strict evaluator. Read the input and the output, then answer the yes/no question about the output.
    Answer "yes" only if the output clearly satisfies what the question asks; otherwise answer "no"."""

    input: str = dspy.InputField(desc="the task input the output responds to")
    output: str = dspy.InputField(desc="the output being evaluated")
    question: str = dspy.InputField(desc="a yes/no question about the output")
    verdict: Answer = dspy.OutputField()


# Verdict-first decoding stops the JSON right after the answer: the explanation key comes next.
EXPLANATION_STOP = '"explanation"'
# What a verdict-first reply must start with, as the schema orders it: an optional chain of thought (a JSON string),
# then the verdict object whose first key is the answer. Anchored at the start: prose that merely mentions
# '"answer": "yes"' (a refusal quoting the schema) is no verdict.
_VERDICT_START = re.compile(
    r'\s*\{\s*(?:"reasoning"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*)?"verdict"\s*:\s*\{\s*"answer"\s*:\s*"(yes|no)"\s*(?:,|\}|$)'
)


class StrictJSONAdapter(MemoJSONAdapter):
    """DSPy's JSON adapter, reading only a reply that is one JSON object with one answer (``replies.check_reply``):
    prose around a quoted schema, a second object or a key given twice is a parse error, so the verdict is
    unanswered. A reply cut short by the token limit is still repaired as DSPy does."""

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        whole = parsed_reply(self, signature, completion)
        read = self.read_whole(signature, whole) if whole is not None else None
        return read if read is not None else super().parse(signature, unfenced(completion))


class VerdictFirstAdapter(StrictJSONAdapter):
    """JSON adapter for a reply cut off after the verdict's answer (``EXPLANATION_STOP``): the reply must start
    as the schema says, and the answer is read there, never searched for elsewhere in the text."""

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        parsed_reply(self, signature, completion)
        match = _VERDICT_START.match(unfenced(completion))
        answer = match.group(1) if match else _whole_reply_answer(unfenced(completion))
        if answer is None:
            raise AdapterParseError(
                adapter_name=type(self).__name__,
                signature=signature,
                lm_response=completion,
                message="the reply does not start with the schema's verdict answer",
            )
        fields: dict[str, Any] = {"verdict": Answer(answer=answer, explanation="")}  # type: ignore[arg-type]
        if "reasoning" in signature.output_fields:
            repaired = json_repair.loads(completion)
            fields["reasoning"] = str(repaired.get("reasoning", "")) if isinstance(repaired, dict) else ""
        return fields


# The start of a verdict reply, given in the prompt as the assistant's own text by the prefilled format: the next
# token is the answer.
VERDICT_PREFILL = '{"verdict": {"answer": "'
_PREFILLED_ANSWER = re.compile(r'(yes|no)(?:"|$)')
REPLY_START = re.compile(r"\A")  # the prefilled format's verdict token is the reply's first


class PrefilledVerdictAdapter(StrictJSONAdapter):
    """The prefilled verdict format: ``VERDICT_PREFILL`` ends the prompt as the start of the assistant's reply, so
    the first generated token is the answer: one decoding step for a verdict, its P(yes) read there, and the
    explanation (``explain``) decoded after it. The reply must start with yes or no and the closing quote (a
    verdict-only call stops at that quote); anything else is a parse error, so the verdict is unanswered."""

    def __init__(self, explain: bool) -> None:
        super().__init__()
        self.explain = explain

    def format(self, signature: type[dspy.Signature], demos: list[dict[str, Any]], inputs: dict[str, Any]) -> list[dict[str, Any]]:
        return [*super().format(signature, demos, inputs), {"role": "assistant", "content": VERDICT_PREFILL}]

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        if self.explain:
            return super().parse(signature, VERDICT_PREFILL + (completion or ""))
        match = _PREFILLED_ANSWER.match(completion or "")
        if match is None:
            raise AdapterParseError(
                adapter_name=type(self).__name__, signature=signature, lm_response=completion,
                message="the reply does not start with yes or no",
            )
        return {"verdict": Answer(answer=match.group(1), explanation="")}  # type: ignore[arg-type]


def _whole_reply_answer(completion: str | None) -> str | None:
    """The verdict's answer when the whole reply is one JSON object of the schema (a server that ignored the stop
    and wrote the keys in another order); None for anything else, prose around an object included."""
    try:
        obj = json.loads(completion or "")
    except ValueError:
        return None
    verdict = obj.get("verdict") if isinstance(obj, dict) else None
    answer = verdict.get("answer") if isinstance(verdict, dict) else None
    return answer if answer in ("yes", "no") else None


class BatchAdapter(MemoJSONAdapter):
    """JSON adapter whose parse keeps whatever verdicts the reply holds (validated one by one by ``batch.read_batch``);
    a reply that is not one JSON object of verdicts (prose around it, a key given twice, more answers than
    questions) is a parse error: every question unanswered."""

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        asked = len(signature.output_fields["verdicts"].annotation.model_fields)
        whole = parsed_reply(self, signature, completion, answers=asked)  # one object, each key once, at the start
        repaired = whole if whole is not None else json_repair.loads(unfenced(completion))
        verdicts = repaired.get("verdicts") if isinstance(repaired, dict) else None
        if not isinstance(verdicts, dict):
            raise AdapterParseError(
                adapter_name=type(self).__name__, signature=signature, lm_response=completion, message="the reply holds no object of verdicts"
            )
        return {"verdicts": verdicts}


def read_output(adapter: dspy.Adapter, signature: type[dspy.Signature], output: dict[str, Any] | str) -> tuple[Any, Any]:
    """The parsed verdict and logprobs of one LM output, as DSPy's adapter reads a per-question call's
    (``Adapter._call_postprocess``: an empty reply is a parse error, then ``adapter.parse``): the fast path's reading,
    so a reply it gets is read as DSPy's path reads the same reply."""
    given = output if isinstance(output, dict) else {"text": output}
    if not given.get("text"):
        raise AdapterParseError(
            adapter_name=type(adapter).__name__, signature=signature, lm_response=str(output),
            message="The LM returned an empty or null response.",
        )  # fmt: skip
    return adapter.parse(signature, given["text"]).get("verdict"), given.get("logprobs") or None
