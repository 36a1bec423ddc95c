"""``verdict.read_output`` (the fast path's reading of a reply) against DSPy's own (``Adapter._call_postprocess``):
for every per-question adapter and replies good, cut short, wrapped in prose or empty, both give the same verdict
and logprobs, or both refuse the reply."""

from __future__ import annotations

from typing import Any

import pytest
from dspy.utils.exceptions import AdapterParseError

from bineval_dspy.judges.verdict import (
    AnswerQuestion,
    PrefilledVerdictAdapter,
    StrictJSONAdapter,
    VerdictFirstAdapter,
    read_output,
)

ADAPTERS = [StrictJSONAdapter(), VerdictFirstAdapter(), PrefilledVerdictAdapter(False), PrefilledVerdictAdapter(True)]
REPLIES: list[Any] = [
    '{"verdict": {"answer": "yes", "explanation": "it does"}}',
    '{"verdict": {"answer": "no", ',
    'yes", "explanation": "it does"}}',
    'no"',
    'Sure! {"verdict": {"answer": "yes", "explanation": "x"}}',
    "",
    {"text": '{"verdict": {"answer": "no", "explanation": "not so"}}', "logprobs": {"content": []}},
    {"text": None},
]


def _outcome(read: Any) -> tuple[str, Any]:
    try:
        return "read", read()
    except AdapterParseError:
        return "refused", None


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: f"{type(a).__name__}{getattr(a, 'explain', '')}")
@pytest.mark.parametrize("reply", REPLIES)
def test_the_fast_reading_is_dspys(adapter, reply):
    def dspys() -> tuple[Any, Any]:
        value = adapter._call_postprocess(AnswerQuestion, AnswerQuestion, [reply], lm=None, lm_kwargs={})[0]
        return value["verdict"], value.get("logprobs")

    assert _outcome(lambda: read_output(adapter, AnswerQuestion, reply)) == _outcome(dspys)
