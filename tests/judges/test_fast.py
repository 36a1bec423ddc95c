"""The verdict fast path (``judges.fast``, ``lm.fastpath``) against DSPy's per-call path, on a real local HTTP server:
the same request bytes, the same scorecards and usage, the same cache entries (either path's cache answers the
other's requests), for every per-question judge option. Only the server is scripted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dspy
import pytest

from bineval_dspy.core.schema import Checklist, JudgeOptions, Question
from bineval_dspy.judges.fast import FIELDS, FastJudge
from bineval_dspy.judges.runner import judge_rows, parallelism
from bineval_dspy.lm import remote, runtime
from bineval_dspy.lm.cache import peeking
from bineval_dspy.lm.runtime import LMOptions
from bineval_dspy.programs.judge_file import JudgeFile, file_judge, run_file
from tests.fake_openai import completion, scripted_server

QUESTIONS = ["Is Q0 met?", "Is Q1 met?", "Is Q2 met?", "Does Q3 hold?", "Is Q4 prose?"]


@pytest.fixture(autouse=True)
def fresh_format_memory(monkeypatch):
    monkeypatch.setattr(remote, "_server_forms", {})


def reply(body: dict) -> Any:
    """A judge server: yes to Q1 and Q3 (P(yes) 0.8), no to the others (0.3), 0.5 for the content-free output;
    prose for Q4 (no verdict on either path); logprobs when asked; a chain of thought when the schema has one."""
    text = body["messages"][-1]["content"]
    p_yes = 0.5 if "\nN/A\n" in text else 0.8 if ("Q1" in text or "Q3" in text) else 0.3
    answer = "yes" if p_yes >= 0.5 else "no"
    if "Q4" in text:
        return completion(body, "I would say yes, mostly.")
    verdict = {"verdict": {"answer": answer, "explanation": f"because {answer}"}}
    if "reasoning" in json.dumps(body.get("response_format", {})):
        verdict = {"reasoning": "thought about it", **verdict}
    content = json.dumps(verdict)
    logprobs = None
    if body.get("logprobs"):
        head, tail = content.split(f'"answer": "{answer}', 1)
        top = [{"token": "yes", "logprob": _log(p_yes), "bytes": None}, {"token": "no", "logprob": _log(1 - p_yes), "bytes": None}]
        logprobs = {"content": [
            {"token": head + '"answer": "', "logprob": 0.0, "bytes": None, "top_logprobs": []},
            {"token": answer, "logprob": _log(p_yes if answer == "yes" else 1 - p_yes), "bytes": None, "top_logprobs": top},
            {"token": tail, "logprob": 0.0, "bytes": None, "top_logprobs": []},
        ]}  # fmt: skip
    return 200, completion(body, content, logprobs=logprobs)


def _log(p: float) -> float:
    import math

    return math.log(p)


def inputs(tmp_path: Path) -> tuple[Path, Path]:
    checklist = tmp_path / "checklist.json"
    questions = [Question(text=text, dimension="d", weight=-1.0 if i == 3 else 1.0) for i, text in enumerate(QUESTIONS)]
    checklist.write_text(Checklist(task="t", dimensions=["d"], questions=questions).model_dump_json())
    data = tmp_path / "rows.jsonl"
    rows = [{"input": f'Row {i}: "quoted" text, a tab\\t, é and 日本', "output": f"answer {i}\nwith\\ escapes \u2028"} for i in range(4)]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return checklist, data


def judged(tmp_path: Path, url: str, options: dict[str, Any], *, fast: bool, cache: str, out: str) -> list[dict]:
    checklist, data = inputs(tmp_path)
    config = JudgeFile(
        checklist=checklist, data=data, output=tmp_path / out, judge=JudgeOptions(**options), lm=LMOptions(spec="openai/m", api_base=url),
        cache_dir=tmp_path / cache, concurrency=8, fast_path=fast, overwrite=True,
    )  # fmt: skip
    run_file(config)
    return [json.loads(line) for line in (tmp_path / out).read_text().splitlines()]


OPTIONS = [
    {},
    {"chain_of_thought": True},
    {"samples": 3},
    {"probability": True},
    {"calibration": "content_free", "probability": True},
    {"explanations": "failures"},
    {"explanations": "none"},
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "default")
def test_both_paths_send_the_same_bytes_and_give_the_same_scorecards(tmp_path, options):
    with scripted_server(reply) as server:
        slow = judged(tmp_path, server.url, options, fast=False, cache="dspy-cache", out="dspy.jsonl")
        dspy_bodies = sorted(server.raw)
        server.raw.clear()
        fast = judged(tmp_path, server.url, options, fast=True, cache="fast-cache", out="fast.jsonl")
        fast_bodies = sorted(server.raw)
    assert fast_bodies == dspy_bodies and len(fast_bodies) > len(QUESTIONS)
    assert fast == slow
    verdicts = [v for row in fast for v in row["bineval"]["scorecard"]["verdicts"]]
    assert {v["answer"] for v in verdicts} >= {"yes", "no", "unanswered"}  # answers, and Q4's prose refused on both
    if options.get("probability"):
        assert any(v["p_yes"] is not None for v in verdicts)


@pytest.mark.parametrize("first, second", [(False, True), (True, False)], ids=["dspy-then-fast", "fast-then-dspy"])
def test_either_paths_cache_answers_the_other(tmp_path, first, second):
    """The keys are equal: a cache one path filled answers every request of the other (Q4's prose is not kept,
    so it is asked again), and the rows are the same."""
    options = {"probability": True}
    with scripted_server(reply) as server:
        before = judged(tmp_path, server.url, options, fast=first, cache="cache", out="first.jsonl")
        asked = len(server.raw)
        after = judged(tmp_path, server.url, options, fast=second, cache="cache", out="second.jsonl")
    again = len(server.raw) - asked
    assert again == len(before)  # one call a row: the unparsed Q4 reply, forgotten on both paths
    hits = [row["bineval"]["usage"] for row in after]
    assert all(usage["lm_calls"] == len(QUESTIONS) and usage["tokens"] == 2 for usage in hits)  # Q4's new call bills
    strip = lambda rows: [{**row, "bineval": {**row["bineval"], "usage": None}} for row in rows]  # noqa: E731
    assert strip(after) == strip(before)


def test_the_fast_key_is_the_key_dspys_cache_makes(tmp_path):
    """The cache key the fast path fills in equals the one DSPy's cache computes for the same call."""
    checklist, data = inputs(tmp_path)
    with scripted_server(reply) as server:
        lm = runtime.configure(LMOptions(spec="openai/m", api_base=server.url), tmp_path / "cache")
        config = JudgeFile(checklist=checklist, data=data, judge=JudgeOptions(probability=True), lm=LMOptions(spec="openai/m", api_base=server.url))
        judge = file_judge(config, lm.model)
        fast = FastJudge.of(judge)
        assert fast is not None
        template, config_, adapter = fast.shapes[0, True]
        values = ('in "1"\n\\ é', "out\t2 \u2028", "Is it? 日本")
        with peeking() as looked_up, dspy.context(adapter=adapter):
            judge.answer(**dict(zip(FIELDS, values)), config=config_)
    (request,) = looked_up
    key, twin = template.keys(values)
    assert key == dspy.cache.cache_key(request, remote_ignored())
    assert twin == dspy.cache.cache_key({k: v for k, v in request.items() if k not in ("logprobs", "top_logprobs")}, remote_ignored())


def remote_ignored() -> list[str]:
    from dspy.clients.execution import IGNORED_CACHE_KEYS

    return IGNORED_CACHE_KEYS


def test_the_switch_sends_every_call_through_dspy(tmp_path, monkeypatch):
    """``BINEVAL_FAST_PATH=0`` is the default the run's setting takes; off, no call goes through the fast path."""
    from bineval_dspy.lm import fastpath

    monkeypatch.setenv("BINEVAL_FAST_PATH", "0")
    sent: list[object] = []
    original = fastpath.VerdictExchange.send

    async def counted(self, *args):
        sent.append(self)
        return await original(self, *args)

    monkeypatch.setattr(fastpath.VerdictExchange, "send", counted)
    checklist, data = inputs(tmp_path)
    with scripted_server(reply) as server:
        assert JudgeFile(checklist=checklist, data=data).fast_path is False
        judged(tmp_path, server.url, {}, fast=False, cache="c", out="o.jsonl")
        assert sent == [] and server.raw
        judged(tmp_path, server.url, {}, fast=True, cache="c2", out="o2.jsonl")
    assert sent


def test_a_judge_the_fast_path_does_not_take_keeps_dspys(tmp_path):
    """Batch scoring (and an LM that is not on our remote engine) stays on DSPy's path."""
    checklist, data = inputs(tmp_path)
    with scripted_server(reply) as server:
        lm = runtime.configure(LMOptions(spec="openai/m", api_base=server.url), tmp_path / "cache")
        batch = file_judge(JudgeFile(checklist=checklist, data=data, judge=JudgeOptions(scoring="batch")), lm.model)
        assert FastJudge.of(batch) is None
        per_question = file_judge(JudgeFile(checklist=checklist, data=data), lm.model)
        assert FastJudge.of(per_question) is not None
        with dspy.context(lm=dspy.LM("openai/m", engine=_Plain(), cache=False)):
            assert FastJudge.of(per_question) is None
        rows = list(judge_rows(batch, Checklist.model_validate_json(checklist.read_text()), [(1, {"input": "a", "output": "b"})], total=1,
                               plan=parallelism(lm, 5, concurrency=4), show=False))  # fmt: skip
    assert rows[0][1].scorecard.verdicts


class _Plain:
    def complete(self, request):
        raise RuntimeError("not called")


SLOW_VERIFIER = '''
import time

import bineval_dspy


@bineval_dspy.verifier("mine:slow_ok", rule="Passes, slowly.")
def slow_ok(response: str) -> bool:
    time.sleep(0.6)
    return True
'''


@pytest.mark.usefixtures("own_verifiers")
def test_a_slow_verifier_beside_a_fast_server_loses_no_verdict(tmp_path):
    """Issue 55, break 4: code checks ran inside each row's coroutine on the one I/O loop, so a slow verifier held
    every other row's replies until their calls timed out (2, then 18, of 24 verdicts lost). They run off the loop."""
    from bineval_dspy.testing.server import FixedDelayServer, serving
    from bineval_dspy.verifiers import load_verifier_file

    (tmp_path / "slow.py").write_text(SLOW_VERIFIER)
    load_verifier_file(tmp_path / "slow.py")
    checklist = tmp_path / "checklist.json"
    questions = [Question(text="Is it slow?", dimension="d", verifier="mine:slow_ok"), Question(text="Is it clear?", dimension="d")]
    checklist.write_text(Checklist(task="t", dimensions=["d"], questions=questions).model_dump_json())
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"input": f"in {i}", "output": f"out {i}"}) + "\n" for i in range(8)))
    with serving(FixedDelayServer(delay=0.1, slots=8)) as server:
        config = JudgeFile(
            checklist=checklist, data=data, output=tmp_path / "out.jsonl", lm=LMOptions(spec="openai/m", api_base=server.url, timeout=1.0),
            cache_dir=tmp_path / "cache", concurrency=8, fast_path=True,
        )  # fmt: skip
        run_file(config)
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    answers = [v["answer"] for row in rows for v in row["bineval"]["scorecard"]["verdicts"]]
    assert len(rows) == 8 and answers == ["yes"] * 16, [v["explanation"] for row in rows for v in row["bineval"]["scorecard"]["verdicts"]]
