"""Constraints on a server: a llama.cpp server (``llamacpp/<model>`` at ``api_base``) gets them as its GBNF
``grammar`` field and never the metadata that carries them; a constraint its grammar cannot express is recorded
as not enforced; any other remote LM is refused in one line before any call. A scripted server stands in for
llama.cpp (the real one: ``tests/lm/test_remote_server.py``)."""

from __future__ import annotations

import dspy
import pytest

from bineval_dspy.core.errors import InputError
from bineval_dspy.enforce.grammar import code_digest
from bineval_dspy.enforce.steering import METADATA_KEY, Steering, metadata
from bineval_dspy.lm.engine import ENGINE_CODE_KEY, engine_of
from bineval_dspy.lm.remote import RemoteEngine
from bineval_dspy.lm.specs import make_lm
from bineval_dspy.programs.generator import Generator, check_steerable, generate_row
from bineval_dspy.suites.rows import SuiteRow
from bineval_dspy.testing import ScriptedEngine
from tests.fake_openai import scripted_server

PROMPT = "Describe a river. Do not use any commas. Do not use the words cat or dog. Answer with less than 3 sentences."
REPLY = "A river runs to the sea and the sea is wide."


def test_a_llama_cpp_server_gets_a_grammar_and_no_metadata():
    with scripted_server(lambda body: REPLY) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False)
        with dspy.context(lm=lm):
            record = generate_row(SuiteRow(key="1", prompt=PROMPT, instruction_id_list=["punctuation:no_comma"], kwargs=[{}]), Generator(enforce="extracted"))
    (body,) = server.bodies
    assert "metadata" not in body and METADATA_KEY not in str(body)
    assert body["grammar"].startswith("root ::= ") and "," not in body["grammar"].split("gap-")[1].split("\n")[0]
    statuses = {d.instruction_id: (d.status, d.reason) for d in record.enforcement.decisions}
    assert statuses == {
        "punctuation:no_comma": ("enforced", ""),
        "keywords:forbidden_words": ("unenforceable", "this LM's grammar cannot express it (forbidden words)"),
        "length_constraints:number_sentences": ("unenforceable", "this LM's grammar cannot express it (max sentences)"),
    }
    assert record.enforcement.held == {"punctuation:no_comma": True}  # checked by code, on the reply


class GrammarEngine(ScriptedEngine):
    """A scripted engine that steers as a grammar server does (what it is sent is recorded, before any cache)."""

    supports_steering = True
    steering_code = code_digest()

    def unsteerable(self, steering: Steering) -> str:
        return RemoteEngine("llamacpp/m", "http://127.0.0.1:1/v1").unsteerable(steering)


def test_the_grammar_code_is_part_of_a_steered_request():
    """Replies cached under another grammar compiler are not replayed: its digest is in the request DSPy keys on."""
    engine = GrammarEngine(lambda request: REPLY)
    with dspy.context(lm=dspy.LM("custom/grammar", engine=engine, cache=False, num_retries=0)):
        Generator(enforce="extracted")(prompt=PROMPT)
    (request,) = engine.requests
    sent = request.config.extensions["metadata"]
    assert sent[ENGINE_CODE_KEY] == code_digest() and "forbidden" not in sent[METADATA_KEY]


def test_metadata_of_its_own_still_reaches_the_server():
    with scripted_server(lambda body: REPLY) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False)
        lm("hi", metadata={**metadata(Steering(case="lower")), "label": "x"})
    (body,) = server.bodies
    assert body["metadata"] == {"label": "x"} and "[0-9\\x5Fa-z]" in body["grammar"]


@pytest.mark.parametrize("spec", ["openai/m", "hosted_vllm/m"])
def test_a_server_that_takes_no_grammar_is_refused_before_any_call(spec):
    with scripted_server(lambda body: REPLY) as server:
        lm = make_lm(spec, api_base=server.url, cache=False)
        with pytest.raises(InputError, match=r"cannot decode under constraints") as refused:
            check_steerable(Generator(enforce="extracted"), lm)
        assert "\n" not in str(refused.value)
        with pytest.raises(Exception, match="takes no grammar"):  # and a steered request that got past it fails
            lm("hi", metadata=metadata(Steering(case="lower")))
    assert server.bodies == []


def test_a_provider_model_is_refused():
    lm = make_lm("openai/gpt-4o-mini", api_key="k")
    with pytest.raises(InputError, match="cannot decode under constraints"):
        check_steerable(Generator(enforce="annotated"), lm)


def test_replicas_of_a_llama_cpp_server_steer_as_one():
    lm = make_lm("llamacpp/m", api_base="http://127.0.0.1:1/v1", replicas=["http://127.0.0.1:2/v1"])
    engine = engine_of(lm)
    assert engine.supports_steering
    assert "forbidden words" in engine.unsteerable(Steering(forbidden_words=("cat",)))
    assert engine.unsteerable(Steering(case="lower", title=True)) == ""


def test_a_llama_cpp_model_needs_its_server():
    with pytest.raises(InputError, match="llama.cpp server"):
        make_lm("llamacpp/m")
