"""The judge's JSON adapter builds a signature's system message and response schema once (``judges.formats``): what
it sends is exactly what DSPy's ``JSONAdapter`` sends, and a new signature
(new instructions) gets its own prompt."""

from __future__ import annotations

import dspy

from bineval_dspy.judges import formats
from bineval_dspy.judges.verdict import AnswerQuestion, StrictJSONAdapter


class _SchemaLM:
    supported_params = frozenset({"response_format"})
    supports_response_schema = True


INPUTS = {"input": "Write a haiku.", "output": "An old pond.", "question": "Is it a haiku?"}


def test_the_messages_and_schema_are_dspys_own():
    ours, dspys = StrictJSONAdapter(), dspy.JSONAdapter()
    assert ours.format(AnswerQuestion, [], INPUTS) == dspys.format(AnswerQuestion, [], INPUTS)
    mine, theirs = {}, {}
    ours._prepare_response_format(_SchemaLM(), mine, AnswerQuestion)
    dspys._prepare_response_format(_SchemaLM(), theirs, AnswerQuestion)
    assert mine["response_format"].model_json_schema() == theirs["response_format"].model_json_schema()
    assert mine["response_format"].model_json_schema()["properties"]["verdict"]


def test_a_signature_is_formatted_once(monkeypatch):
    built = []
    original = dspy.JSONAdapter.format_field_structure
    monkeypatch.setattr(dspy.JSONAdapter, "format_field_structure", lambda self, sig: built.append(sig) or original(self, sig))
    adapter = formats.MemoJSONAdapter()
    first = adapter.format(AnswerQuestion, [], INPUTS)
    second = adapter.format(AnswerQuestion, [], {**INPUTS, "question": "Is it short?"})
    assert built == [AnswerQuestion]
    assert first[0] == second[0] and first[1] != second[1]  # one system message, each its own question
    schemas = []
    monkeypatch.setattr(formats.dspy.JSONAdapter, "_prepare_response_format", lambda self, lm, kw, sig: schemas.append(sig) or kw.update(response_format={"type": "json_object"}))
    for _ in range(3):
        adapter._prepare_response_format(_SchemaLM(), {}, AnswerQuestion)
    assert schemas == [AnswerQuestion]


def test_new_instructions_make_a_new_prompt():
    adapter = formats.MemoJSONAdapter()
    told = AnswerQuestion.with_instructions("Answer as a lenient grader.")
    assert "lenient grader" in adapter.format(told, [], INPUTS)[0]["content"]
    assert "lenient grader" not in adapter.format(AnswerQuestion, [], INPUTS)[0]["content"]


def test_an_lm_without_schema_support_gets_json_mode_and_one_without_the_param_gets_none():
    adapter = formats.MemoJSONAdapter()
    plain = type("PlainLM", (), {"supported_params": frozenset({"response_format"}), "supports_response_schema": False})()
    bare = type("BareLM", (), {"supported_params": frozenset(), "supports_response_schema": False})()
    json_mode, nothing = {}, {}
    adapter._prepare_response_format(plain, json_mode, AnswerQuestion)
    adapter._prepare_response_format(bare, nothing, AnswerQuestion)
    assert json_mode == {"response_format": {"type": "json_object"}} and nothing == {}


REPLIES = [
    '{"verdict": {"answer": "yes", "explanation": "it is"}}',
    '{"reasoning": "five, seven, five", "verdict": {"answer": "no", "explanation": "not a haiku"}}',
    '{"verdict": {"answer": "maybe", "explanation": "unsure"}}',  # refused by the model: DSPy's parse says why
    '{"verdict": {"answer": "yes", "explanation": "' + "x" * 200 + '"}}',  # over the explanation's bound
    '{"verdict": {"answer": "yes", "explanation": "ok"}, "extra": 1}',
    '{"verdict": "yes"}',
    '{"verdict": {"answer": "yes", "explanation": "cut',  # cut short: repaired, as DSPy repairs it
]


def _read(adapter: dspy.Adapter, signature: type[dspy.Signature], reply: str) -> object:
    try:
        return adapter.parse(signature, reply)
    except Exception as exc:  # the error's kind and words are part of what a verdict says
        return f"{type(exc).__name__}: {exc}"


def test_a_whole_reply_is_read_as_dspys_parse_reads_it():
    """The fields read without DSPy's repair and per-call validators (``read_whole``) are the ones its ``parse`` gives,
    and a reply they do not fit gets DSPy's own reading or error."""
    dspys_only = type("StrictJSONAdapter", (StrictJSONAdapter,), {"read_whole": lambda self, signature, obj: None})()  # every reply to DSPy's parse
    ours = StrictJSONAdapter()
    thinking = dspy.ChainOfThought(AnswerQuestion).predict.signature
    for signature in (AnswerQuestion, thinking):
        for reply in REPLIES:
            assert _read(ours, signature, reply) == _read(dspys_only, signature, reply), reply
    assert ours.read_whole(AnswerQuestion, {"verdict": {"answer": "yes", "explanation": "e"}}) is not None  # the quick reading is taken
