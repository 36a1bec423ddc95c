"""``judge --concurrency N`` against a counting OpenAI-compatible server on 127.0.0.1: N requests in flight across
rows and questions, never more; rows still saved in input order, so budgets, resume and exit codes are today's.
The real DSPy LM, our engine and DSPy's cache run; only the server is a fake."""

from __future__ import annotations

import json
import time

from bineval_dspy import cli
from bineval_dspy.core.errors import ExitCode
from bineval_dspy.core.schema import Question
from tests.cli.test_reliability import judge_args, write_inputs
from tests.fake_openai import scripted_server, verdict

QUESTIONS = [Question(text=f"Is it {i}?", dimension="d") for i in range(10)]
ROWS = [{"input": f"article {i}", "output": "summary", "id": i} for i in range(20)]


def held(seconds: float):
    """A reply that keeps each request open for ``seconds``: the requests in flight pile up at the server."""

    def reply(body: dict) -> str:
        time.sleep(seconds)
        return verdict("yes")

    return reply


def written_ids(tmp_path) -> list[int]:
    return [json.loads(line)["id"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]


def test_concurrency_64_fills_64_requests_on_a_10_question_checklist(tmp_path):
    write_inputs(tmp_path, QUESTIONS, ROWS)
    with scripted_server(held(1.0)) as server:
        assert cli.main(judge_args(tmp_path, *server.lm_args(), "--concurrency", "64")) == ExitCode.OK
    assert server.most_in_flight == 64  # rows and questions together, capped at N
    assert len(server.bodies) == 200
    assert written_ids(tmp_path) == list(range(20))  # input order


def test_concurrency_keeps_budgets_and_resume(tmp_path):
    write_inputs(tmp_path, QUESTIONS, ROWS)
    with scripted_server(held(0.05)) as server:
        argv = judge_args(tmp_path, *server.lm_args(), "--concurrency", "64")
        # the first row runs alone (nothing to estimate from), then a row costs 10 calls: 25 calls allow 2 rows
        assert cli.main([*argv, "--max-calls", "25"]) == ExitCode.BUDGET
        assert written_ids(tmp_path) == [0, 1]
        assert cli.main(argv) == ExitCode.OK  # the rerun goes on where it stopped
    assert written_ids(tmp_path) == list(range(20))
    assert len(server.bodies) == 200  # nothing judged twice


def test_concurrency_and_threads_together_are_refused(tmp_path, capsys):
    write_inputs(tmp_path)
    assert cli.main(judge_args(tmp_path, "--concurrency", "8", "--threads", "8")) == ExitCode.INPUT
    assert "--concurrency: give it or --threads, not both" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()
