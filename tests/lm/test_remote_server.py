"""A real OpenAI-compatible server: llama-cpp-python's ``python -m llama_cpp.server`` on the bundled SmolLM2 GGUF,
reached by ``bineval judge`` and ``bineval generate`` through ``--api-base``.

That server rejects OpenAI's ``json_schema`` response_format, so these runs also cover the switch to its own
spelling. Marked ``server``, and ``embedded`` too: it runs the real bundled model (in the server, and in this
process for comparison), so the quick ``-m "not embedded"`` run leaves it out; ``-m server`` selects it.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dspy
import pytest
from dspy.lm15 import Config, Message, Request

from bineval_dspy import cli
from bineval_dspy.core.errors import ExitCode
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.judges.verdict import AnswerQuestion
from bineval_dspy.lm import remote as remote_engine
from bineval_dspy.lm.llama_engine import LlamaCppEngine
from bineval_dspy.lm.specs import embedded_model_path, make_lm
from bineval_dspy.suites.rows import SuiteRow

pytestmark = [pytest.mark.server, pytest.mark.embedded]

ALIAS = "smollm2"  # the model name the server answers to
READY_WITHIN = 120.0  # seconds for the server to load the model and answer /v1/models


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_ready(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"llama_cpp.server not ready within {READY_WITHIN:g} s:\n{log.read_text()[-2000:]}")


@dataclass(frozen=True)
class Served:
    url: str
    log: Path  # the server's output, uvicorn's access log (one line a request, with its status) included


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Served]:
    pytest.importorskip(
        "llama_cpp.server.app", reason="needs llama-cpp-python's server extra: pip install 'llama-cpp-python[server]'"
    )
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_model_path("smollm2")), "--model_alias", ALIAS,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "2",
    ]  # fmt: skip
    with log.open("w") as out:
        # passive OpenMP waiting, as our own engine sets it: spinning workers would starve a small machine;
        # unbuffered, so each request's access line is in the log when the test reads it
        env = {**os.environ, "OMP_WAIT_POLICY": "passive", "PYTHONUNBUFFERED": "1"}
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_ready(url, process, log)
        yield Served(url, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def server_url(served) -> str:
    return served.url


def chat_statuses(log: Path) -> list[int]:
    """The HTTP status of every chat completion the server has answered, from its access log."""
    return [int(m) for m in re.findall(r'"POST /v1/chat/completions HTTP/1\.1" (\d{3})', log.read_text())]


@pytest.fixture
def remote(server_url, monkeypatch) -> list[str]:
    """The LM options of a run through the server (llama_cpp.server started without --api_key takes any key)."""
    monkeypatch.setenv("BINEVAL_SERVER_KEY", "any")
    return [
        "--lm",
        f"openai/{ALIAS}",
        "--api-base",
        server_url,
        "--api-key-env",
        "BINEVAL_SERVER_KEY",
        "--threads",
        "2",
    ]


def answers(path: Path) -> list[str]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [v["answer"] for row in rows for v in row["bineval"]["scorecard"]["verdicts"]]


INPUT, OUTPUT = "Summarize: the cat sat on the mat all day long.", "A cat sat on a mat."


def test_judge_through_the_server_answers_like_the_embedded_engine(tmp_path, remote):
    questions = [
        "Is the output shorter than the input?",
        "Does the output mention a cat?",
        "Is the output written in French?",
    ]
    checklist = tmp_path / "checklist.json"
    checklist.write_text(
        Checklist(
            task="Summarize", dimensions=["d"], questions=[Question(text=q, dimension="d") for q in questions]
        ).model_dump_json()
    )
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"input": INPUT, "output": OUTPUT}) + "\n")
    judge = ["judge", "--checklist", str(checklist), "--data", str(data), "--cache-dir", str(tmp_path / "cache")]

    assert cli.main([*judge, *remote, "-o", str(tmp_path / "remote.jsonl")]) == ExitCode.OK
    served = answers(tmp_path / "remote.jsonl")
    assert len(served) == len(questions) and "unanswered" not in served
    assert cli.main([*judge, "--lm", "smollm2", "-o", str(tmp_path / "embedded.jsonl")]) == ExitCode.OK
    # Only the answers are comparable in full: the server applies llama-cpp-python's default repeat_penalty of 1.1
    # even to greedy decoding (our engine applies none), which changes later tokens, e.g. '"answer" :' for
    # '"answer":' and the explanations, never the prompt (next test).
    assert served == answers(tmp_path / "embedded.jsonl")


def test_the_server_gets_the_prompt_our_engine_renders(server_url):
    """The judge's prompt through both paths: same token count and the same first-token distribution, so both
    render it with the GGUF's chat template alike (nothing is generated yet for a penalty to act on)."""
    messages = dspy.JSONAdapter().format(
        AnswerQuestion, demos=[], inputs={"input": INPUT, "output": OUTPUT, "question": "Is the output rude?"}
    )
    assert [m["role"] for m in messages] == ["system", "user"]
    firsts = []
    # the server runs llama.cpp without flash attention; our engine turns it on by default, which moves the
    # logprobs by up to ~0.1, so the comparison uses an engine without it
    local = dspy.LM(
        "local/smollm2-no-flash-attention",
        engine=LlamaCppEngine(embedded_model_path("smollm2"), flash_attn=False, batching=False),
        cache=False,
        num_retries=0,
    )
    for lm in (make_lm(f"openai/{ALIAS}", api_base=server_url, cache=False), local):
        config = Config(max_tokens=1, temperature=0.0, logprobs=5)
        response = lm(
            Request(
                model=lm.model,
                system=messages[0]["content"],
                messages=(Message.user(messages[1]["content"]),),
                config=config,
            )
        )
        firsts.append((response.usage.input_tokens, response.logprobs[0].top))
    (served_tokens, served), (local_tokens, local) = firsts
    assert served_tokens == local_tokens
    assert [t.token for t in served] == [t.token for t in local]
    assert [t.logprob for t in served] == pytest.approx([t.logprob for t in local], abs=0.01)


def test_generate_through_the_server(tmp_path, remote):
    suite = tmp_path / "suite.jsonl"
    row = SuiteRow(
        key="1", prompt="Describe a river in two sentences.", instruction_id_list=["punctuation:no_comma"], kwargs=[{}]
    )
    suite.write_text(row.model_dump_json() + "\n")
    out = tmp_path / "responses.jsonl"
    args = [
        "generate",
        "--suite",
        str(suite),
        "--max-tokens",
        "48",
        "-o",
        str(out),
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    assert cli.main([*args, *remote]) == ExitCode.OK
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["key"] == "1" and record["response"].strip()


def test_the_refused_schema_spelling_reaches_the_server_once(tmp_path, remote, served, monkeypatch):
    """A process that has not met the server sends OpenAI's spelling once (refused: HTTP 500), then only the one
    it takes, even with questions in flight together: the server answers one request a question, plus one 500."""
    monkeypatch.setattr(remote_engine, "_server_forms", {})  # what earlier tests taught this process is forgotten
    questions = ["Does the output mention a cat?", "Is the output in English?", "Is the output one sentence?"]
    checklist = tmp_path / "checklist.json"
    checklist.write_text(
        Checklist(task="t", dimensions=["d"], questions=[Question(text=q, dimension="d") for q in questions]).model_dump_json()
    )
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"input": INPUT, "output": OUTPUT}) + "\n")
    before = len(chat_statuses(served.log))
    code = cli.main(
        ["judge", "--checklist", str(checklist), "--data", str(data), "-o", str(tmp_path / "out.jsonl"),
         "--cache-dir", str(tmp_path / "cache"), *remote]
    )  # fmt: skip
    assert code == ExitCode.OK
    statuses = chat_statuses(served.log)[before:]
    assert sorted(statuses) == [200] * len(questions) + [500]
    assert statuses[0] == 500  # the refusal came first, before any question was answered


ENFORCED_PROMPTS = [
    'Write a short note about rivers in all lowercase letters. Do not use any commas. End your response with the exact phrase "any other questions?". No other words should follow this phrase.',
    "List three facts about the moon. Your answer must contain exactly 3 bullet points in markdown format, such as: * This is a point. Wrap your entire response with double quotation marks.",
    'Describe a forest. Your response should contain a title, wrapped in double angular brackets, such as <<poem of joy>>. Answer with at least 40 words. Do not include keywords "tree" in the response.',
]


def test_generate_enforced_through_a_llama_cpp_server(tmp_path, server_url, monkeypatch):
    """``--enforce extracted`` on a llama.cpp server: the prompts' own constraints go out as a grammar, and every
    one the grammar expresses holds on the reply, checked by code; forbidden words, which it cannot express, are
    recorded as not enforced."""
    monkeypatch.setenv("BINEVAL_SERVER_KEY", "any")
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"key": str(k), "prompt": p}) + "\n" for k, p in enumerate(ENFORCED_PROMPTS)))
    out = tmp_path / "responses.jsonl"
    code = cli.main(
        ["generate", "--suite", str(suite), "--enforce", "extracted", "--max-tokens", "96", "-o", str(out),
         "--cache-dir", str(tmp_path / "cache"), "--lm", f"llamacpp/{ALIAS}", "--api-base", server_url,
         "--api-key-env", "BINEVAL_SERVER_KEY", "--threads", "1"]
    )  # fmt: skip
    assert code == ExitCode.OK
    records = [json.loads(line) for line in out.read_text().splitlines()]
    enforced = {d["instruction_id"] for r in records for d in r["enforcement"]["decisions"] if d["status"] == "enforced"}
    assert enforced == {
        "change_case:english_lowercase", "punctuation:no_comma", "startend:end_checker", "startend:quotation",
        "detectable_format:number_bullet_lists", "detectable_format:title", "length_constraints:number_words",
    }  # fmt: skip
    broken = {(r["key"], i): r["response"] for r in records for i, held in r["enforcement"]["held"].items() if not held}
    assert broken == {}
    (forbidden,) = [d for d in records[2]["enforcement"]["decisions"] if d["instruction_id"] == "keywords:forbidden_words"]
    assert (forbidden["status"], forbidden["reason"]) == ("unenforceable", "this LM's grammar cannot express it (forbidden words)")
