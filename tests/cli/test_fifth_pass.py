"""Issue 55's minor items on the remote paths, each on both the verdict fast path and DSPy's: an API key a server
echoes into a successful verdict, a hung server's exit code, a reply larger than any verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import ExitCode
from tests.cli.test_reliability import answers, judge_args, results, write_inputs
from tests.fake_openai import scripted_server, verdict

PATHS = [[], ["--no-fast-path"]]
PATH_IDS = ["fast-path", "dspy-path"]


@pytest.mark.parametrize("path", PATHS, ids=PATH_IDS)
def test_a_key_echoed_into_a_successful_verdict_is_kept_nowhere(tmp_path, monkeypatch, capsys, path):
    key = "sk-test-0123456789abcdefSECRET"
    monkeypatch.setenv("BINEVAL_TEST_KEY", key)
    write_inputs(tmp_path, rows=[{"input": "a", "output": "b"}, {"input": "c", "output": "d"}])
    with scripted_server(lambda body: verdict("yes", f"The request carried the key {key}.")) as server:
        code = cli.main(judge_args(tmp_path, *server.lm_args(), "--api-key-env", "BINEVAL_TEST_KEY", *path))
        again = cli.main([*judge_args(tmp_path, *server.lm_args(), "--api-key-env", "BINEVAL_TEST_KEY", *path), "--overwrite"])
    captured = capsys.readouterr()
    written = (tmp_path / "out.jsonl").read_text()
    assert code == again == ExitCode.OK and answers(tmp_path / "out.jsonl") == ["yes", "yes"]
    assert "The request carried the key [redacted]." in written and key not in written
    assert key not in captured.out and key not in captured.err
    cached = b"".join(file.read_bytes() for file in Path(tmp_path / "cache").rglob("*") if file.is_file())
    assert b"The request carried the key [redacted]." in cached and key.encode() not in cached


@pytest.mark.parametrize("path", PATHS, ids=PATH_IDS)
def test_a_hung_server_exits_3_on_either_path(tmp_path, capsys, path):
    """A server that never answers failed every verdict alike: exit 3 on the fast path, 1 on DSPy's."""
    import time

    write_inputs(tmp_path, rows=[{"input": "a", "output": "b"}, {"input": "c", "output": "d"}])

    def hang(body: dict) -> str:
        time.sleep(4)
        return verdict("yes")

    with scripted_server(hang) as server:
        code = cli.main(judge_args(tmp_path, *server.lm_args(), "--timeout", "0.5", *path))
    err = " ".join(capsys.readouterr().err.split())
    assert code == ExitCode.LM_FAILURE, err
    assert "every LM verdict (2) unanswered, each the same way" in err and answers(tmp_path / "out.jsonl") == ["unanswered"] * 2


def test_a_reply_larger_than_any_verdict_is_not_read_whole_on_the_fast_path(tmp_path, monkeypatch, capsys):
    """Six 60 MB replies took 755 MB: the fast path reads a body a piece at a time and stops past its cap."""
    from bineval_dspy.lm import fastpath

    monkeypatch.setattr(fastpath, "MAX_REPLY_BYTES", 1 << 20)
    write_inputs(tmp_path, rows=[{"input": "a", "output": "b"}, {"input": "HUGE", "output": "d"}])
    huge = verdict("yes", "x" * (2 << 20))
    with scripted_server(lambda body: huge if "HUGE" in json.dumps(body["messages"]) else verdict("yes")) as server:
        code = cli.main(judge_args(tmp_path, *server.lm_args(), "--timeout", "5"))
        asked = len(server.bodies)
    out = (tmp_path / "out.jsonl").read_text()
    assert code == ExitCode.INCOMPLETE and sorted(answers(tmp_path / "out.jsonl")) == ["unanswered", "yes"]
    assert "a reply over 1 MiB, which no verdict needs: not read" in out and asked == 2  # refused, not asked again


@pytest.mark.usefixtures("own_verifiers")
def test_a_verifier_that_exits_on_the_fast_path_ends_nothing_and_hangs_nothing(tmp_path):
    """Issue 55, break 1 on the fast path: the same verifier (or a KeyboardInterrupt raised in it) hung the run for
    ever with the header at `running`."""
    import os
    import subprocess
    import sys

    from bineval_dspy.core.schema import Question
    from tests.verifiers.test_guard import QUITTERS
    from tests.verifiers.test_user import own_file

    quitters = own_file(tmp_path, QUITTERS, "quitters.py")
    questions = [Question(text="Fine?", dimension="d", verifier="mine:exit3"), Question(text="Calm?", dimension="d", verifier="mine:interrupt"),
                 Question(text="Is it short?", dimension="d")]  # fmt: skip
    write_inputs(tmp_path, questions, rows=[{"input": f"in {k}", "output": f"out {k}"} for k in range(4)])
    with scripted_server(lambda body: verdict("yes")) as server:  # in a process of its own: a hang is a timeout here
        done = subprocess.run([sys.executable, "-m", "bineval_dspy.cli", *judge_args(tmp_path, *server.lm_args(), "--verifiers", str(quitters))],
                              capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})  # fmt: skip
    assert done.returncode == ExitCode.INCOMPLETE, done.stderr
    rows = [row["scorecard"]["verdicts"] for row in results(tmp_path / "out.jsonl")]
    assert len(rows) == 4 and all([v["answer"] for v in verdicts] == ["unanswered", "unanswered", "yes"] for verdicts in rows)
    assert json.loads((tmp_path / "out.jsonl.run.json").read_text())["status"] == "incomplete"
