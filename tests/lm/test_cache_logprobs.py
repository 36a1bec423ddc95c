"""A reply with logprobs also answers the same request without them (``lm/cache.py``): a hard-answer judge after a
P(yes) judge on the same questions sends nothing, and a reply that gave no verdict is still asked again.

The real DSPy LM, our remote engine and the disk cache run against a scripted OpenAI-compatible server."""

from __future__ import annotations

import json

from bineval_dspy import cli
from bineval_dspy.core.errors import ExitCode
from bineval_dspy.core.jsonio import read_jsonl
from bineval_dspy.core.schema import Checklist, Question
from tests.fake_openai import completion, scripted_server, verdict


def reply_with_logprobs(body: dict) -> tuple[int, dict]:
    """A "yes" verdict; with the answer token's top candidates when the request asks for logprobs."""
    content = verdict("yes")
    if not body.get("logprobs"):
        return 200, completion(body, content)
    head, tail = content.split('"yes"', 1)
    tokens = [head + '"', "yes", '"' + tail]
    top = [{"token": "yes", "logprob": -0.2}, {"token": "no", "logprob": -1.7}]
    entries = [{"token": t, "logprob": -0.2, "top_logprobs": top if t == "yes" else []} for t in tokens]
    return 200, completion(body, content, logprobs={"content": entries})


def write_inputs(tmp_path):
    questions = [Question(text="Is it short?", dimension="d"), Question(text="Is it polite?", dimension="d")]
    (tmp_path / "c.json").write_text(Checklist(task="t", dimensions=["d"], questions=questions).model_dump_json())
    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"input": f"in {i}", "output": f"out {i}"}) + "\n" for i in range(2)))


def judge(tmp_path, server, out: str, *extra: str) -> int:
    args = ["judge", "--checklist", str(tmp_path / "c.json"), "--data", str(tmp_path / "d.jsonl"), "-o", str(tmp_path / out)]
    return cli.main([*args, "--cache-dir", str(tmp_path / "cache"), *server.lm_args(), *extra])


def verdicts(path) -> list[dict]:
    return [v for _, obj in read_jsonl(path) for v in obj["bineval"]["scorecard"]["verdicts"]]


def test_a_hard_answer_judge_after_a_p_yes_judge_sends_nothing(tmp_path):
    write_inputs(tmp_path)
    with scripted_server(reply_with_logprobs) as server:
        assert judge(tmp_path, server, "p.jsonl", "--probability") == ExitCode.OK
        sent = len(server.bodies)
        assert sent == 4 and all(b.get("logprobs") for b in server.bodies)
        assert all(v["p_yes"] is not None and v["p_yes"] > 0.5 for v in verdicts(tmp_path / "p.jsonl"))
        assert judge(tmp_path, server, "hard.jsonl") == ExitCode.OK
        assert len(server.bodies) == sent  # every hard answer came from the P(yes) replies
    assert [v["answer"] for v in verdicts(tmp_path / "hard.jsonl")] == [v["answer"] for v in verdicts(tmp_path / "p.jsonl")]


def test_the_other_way_round_asks_for_logprobs(tmp_path):
    write_inputs(tmp_path)
    with scripted_server(reply_with_logprobs) as server:
        assert judge(tmp_path, server, "hard.jsonl") == ExitCode.OK
        assert judge(tmp_path, server, "p.jsonl", "--probability") == ExitCode.OK
        assert len(server.bodies) == 8  # a reply without logprobs cannot give P(yes): asked again
    assert all(v["p_yes"] is not None for v in verdicts(tmp_path / "p.jsonl"))


def test_a_p_yes_reply_that_gave_no_verdict_is_asked_again_by_the_hard_judge(tmp_path):
    write_inputs(tmp_path)
    replies = {"now": lambda body: "I cannot answer that."}
    with scripted_server(lambda body: replies["now"](body)) as server:
        assert judge(tmp_path, server, "p.jsonl", "--probability") == ExitCode.INCOMPLETE
        sent = len(server.bodies)
        replies["now"] = reply_with_logprobs
        assert judge(tmp_path, server, "hard.jsonl") == ExitCode.OK
        assert len(server.bodies) == sent + 4  # neither the request nor its logprob-free twin kept the bad reply
    assert [v["answer"] for v in verdicts(tmp_path / "hard.jsonl")] == ["yes"] * 4
