"""No unusable reply is replayed, whoever asked (``lm/cache.ForgetUnparsed``): a reply no adapter could parse leaves
nothing in the cache, so a rerun after the LM is fixed asks again (issue 32, item 4)."""

from __future__ import annotations

import json

import dspy
import pytest

from bineval_dspy import cli
from bineval_dspy.lm import cache
from bineval_dspy.testing.scripted import ScriptedEngine
from tests.fake_openai import scripted_server


class Topic(dspy.Signature):
    """Name the topic."""

    text: str = dspy.InputField()
    topic: str = dspy.OutputField()


def test_a_reply_no_adapter_parses_is_asked_again_a_parsed_one_is_replayed(tmp_path):
    cache.install(tmp_path / "cache")
    replies = iter(["no JSON at all", json.dumps({"topic": "sea"}), "unused"])
    engine = ScriptedEngine(lambda request: next(replies))
    lm = dspy.LM("custom/cached", engine=engine, cache=True, num_retries=0)
    ask = dspy.Predict(Topic)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        with pytest.raises(dspy.utils.exceptions.AdapterParseError):
            ask(text="waves")
        assert ask(text="waves").topic == "sea"  # the unparsed reply was not replayed: the LM was asked again
        assert ask(text="waves").topic == "sea"  # the parsed one is
    assert len(engine.requests) == 2


def test_generate_asks_the_tick_writer_again_after_its_reply_did_not_parse(tmp_path, capsys):
    suite = tmp_path / "s.jsonl"
    row = {"key": 1, "prompt": "Write about the ocean.", "instruction_id_list": ["keywords:existence"], "kwargs": [{"keywords": ["ocean"]}]}
    suite.write_text(json.dumps(row) + "\n")
    broken = {"writer": True}

    def reply(body: dict) -> str:
        text = json.dumps(body)
        if "questions" in text and "code_checked" in text:  # the TICK question writer
            return "I cannot write questions." if broken["writer"] else json.dumps({"questions": {"items": ["Is the response about the sea?", "Is the tone of the response calm?"]}})
        if "verdict" in text:
            return json.dumps({"verdict": {"answer": "yes", "explanation": "ok"}})
        return "The ocean is vast."

    argv = ["generate", "--suite", str(suite), "--best-of", "2", "-o", str(tmp_path / "out.jsonl"), "--cache-dir", str(tmp_path / "cache")]
    with scripted_server(reply) as server:
        assert cli.main([*argv, *server.lm_args()]) == 1  # failed LM work, as an unanswered verdict (issue 46)
        assert "got no TICK questions" in capsys.readouterr().err
        writer_calls = sum("code_checked" in json.dumps(b) for b in server.bodies)
        broken["writer"] = False
        assert cli.main([*argv, *server.lm_args(), "--overwrite"]) == 0
        assert sum("code_checked" in json.dumps(b) for b in server.bodies) == writer_calls + 1  # asked again, not replayed
    record = json.loads((tmp_path / "out.jsonl").read_text())
    assert any(not check["judge"].startswith("code:") for check in record["checks"])
