"""Issue 18: promises a run kept only in part, each reproduced as its probe found it.

LM behaviour comes from a scriptable OpenAI-compatible server on 127.0.0.1 (``tests.fake_openai``): the real DSPy
LM, our remote engine and DSPy's cache run. Where only our own file handling is under test, a scripted LM stands in.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import ExitCode
from bineval_dspy.core.jsonio import dumps_line, read_jsonl
from bineval_dspy.core.schema import Checklist, Question
from tests.conftest import route_cli_lm, verdict_json
from tests.fake_openai import completion, scripted_server, verdict

REFUSAL = 'I refuse to judge this. (The schema wants "answer": "yes" or "answer": "no".)'


# -- helpers ------------------------------------------------------------------------------------------------------
def write_inputs(tmp_path: Path, questions: list[Question] | None = None, rows: list[dict] | None = None) -> tuple[Path, Path]:
    checklist = Checklist.of(task="t", dimensions=["d"], questions=questions or [Question(text="Is it short?", dimension="d")])
    c = tmp_path / "checklist.json"
    c.write_text(checklist.model_dump_json())
    d = tmp_path / "rows.jsonl"
    d.write_bytes("".join(dumps_line(r) for r in rows or [{"input": "a", "output": "b"}]).encode())
    return c, d


def judge_args(tmp_path: Path, *extra: str) -> list[str]:
    c, d = tmp_path / "checklist.json", tmp_path / "rows.jsonl"
    return ["judge", "--checklist", str(c), "--data", str(d), "-o", str(tmp_path / "out.jsonl"), "--cache-dir", str(tmp_path / "cache"), *extra]


def results(path: Path) -> list[dict]:
    return [obj["bineval"] for _, obj in read_jsonl(path)]


def answers(path: Path) -> list[str]:
    return [v["answer"] for r in results(path) for v in r["scorecard"]["verdicts"]]


class Switchable:
    """A server reply that can be "fixed" mid-test."""

    def __init__(self, broken) -> None:
        self.reply = broken

    def __call__(self, body: dict):
        return self.reply(body)


# -- 1. a reply that gives no verdict is never replayed from the cache --------------------------------------------
BAD_REPLIES = {
    "empty choices": lambda body: (200, completion(body, None, choices=[])),
    "null content": lambda body: None,
    "empty content": lambda body: "",
    "unparseable text": lambda body: "I cannot answer that.",
}


@pytest.mark.parametrize("kind", list(BAD_REPLIES))
def test_a_reply_without_a_verdict_is_asked_again_once_the_server_is_fixed(tmp_path, kind):
    write_inputs(tmp_path)
    reply = Switchable(BAD_REPLIES[kind])
    with scripted_server(reply) as server:
        assert cli.main(judge_args(tmp_path, *server.lm_args())) == ExitCode.INCOMPLETE
        assert answers(tmp_path / "out.jsonl") == ["unanswered"]
        sent = len(server.bodies)
        reply.reply = lambda body: verdict("yes")
        assert cli.main(judge_args(tmp_path, *server.lm_args())) == ExitCode.OK
        assert len(server.bodies) == sent + 1  # asked again, not replayed from the cache
        assert answers(tmp_path / "out.jsonl") == ["yes"]
        assert cli.main(judge_args(tmp_path, *server.lm_args())) == ExitCode.OK
        assert len(server.bodies) == sent + 1  # a good reply still comes from the cache


@pytest.mark.parametrize("kind", ["null content", "blank content"])
def test_generate_asks_again_for_a_reply_without_text(tmp_path, kind):
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps({"key": 1, "prompt": "Say hi", "instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]}) + "\n")
    out = tmp_path / "responses.jsonl"
    reply = Switchable(BAD_REPLIES["null content"] if kind == "null content" else (lambda body: "  \n"))
    with scripted_server(reply) as server:
        args = ["generate", "--suite", str(suite), "-o", str(out), "--cache-dir", str(tmp_path / "cache"), *server.lm_args()]
        assert cli.main(args) == ExitCode.INCOMPLETE
        sent = len(server.bodies)
        reply.reply = lambda body: "hi there"
        assert cli.main(args) == ExitCode.OK
        assert len(server.bodies) == sent + 1
    assert [obj["response"] for _, obj in read_jsonl(out)] == ["hi there"]


# -- 2. verdict-first decoding reads the answer only where the schema puts it ------------------------------------
@pytest.mark.parametrize("explanations", ["none", "failures"])
def test_verdict_first_never_finds_an_answer_in_prose(tmp_path, explanations):
    write_inputs(tmp_path)
    with scripted_server(lambda body: REFUSAL) as server:
        code = cli.main(judge_args(tmp_path, *server.lm_args(), "--explanations", explanations))
    assert code == ExitCode.INCOMPLETE
    (result,) = results(tmp_path / "out.jsonl")
    assert result["complete"] is False and result["scorecard"]["overall"] is None
    assert answers(tmp_path / "out.jsonl") == ["unanswered"]


def test_verdict_first_reads_a_whole_schema_object_in_any_key_order(tmp_path):
    write_inputs(tmp_path)
    reply = json.dumps({"verdict": {"explanation": "it is long", "answer": "no"}})  # the stop ignored, keys reordered
    with scripted_server(lambda body: reply) as server:
        assert cli.main(judge_args(tmp_path, *server.lm_args(), "--explanations", "none")) == ExitCode.OK
    assert answers(tmp_path / "out.jsonl") == ["no"]


def test_verdict_first_reads_a_reply_cut_off_after_the_answer(tmp_path):
    write_inputs(tmp_path)
    with scripted_server(lambda body: '{"verdict": {"answer": "no", ') as server:
        assert cli.main(judge_args(tmp_path, *server.lm_args(), "--explanations", "none")) == ExitCode.OK
    assert answers(tmp_path / "out.jsonl") == ["no"]


# -- 3. a vote counts its failed samples -------------------------------------------------------------------------
def test_a_vote_with_a_failed_sample_is_unanswered(tmp_path):
    write_inputs(tmp_path)
    replies = iter([verdict("yes"), "garbage", "garbage"])
    with scripted_server(lambda body: next(replies)) as server:
        code = cli.main(judge_args(tmp_path, *server.lm_args(), "--samples", "3", "--threads", "1"))
    assert code == ExitCode.INCOMPLETE
    (result,) = results(tmp_path / "out.jsonl")
    (v,) = result["scorecard"]["verdicts"]
    assert v["answer"] == "unanswered" and v["p_yes"] is None
    assert v["explanation"].startswith("1 yes / 0 no / 2 unanswered of 3 samples")
    assert result["scorecard"]["unanswered"] == 1


def test_partial_lets_the_answered_samples_decide(tmp_path):
    write_inputs(tmp_path)
    replies = iter([verdict("yes"), "garbage", verdict("yes")])
    with scripted_server(lambda body: next(replies)) as server:
        code = cli.main(judge_args(tmp_path, *server.lm_args(), "--samples", "3", "--threads", "1", "--partial"))
    assert code == ExitCode.OK
    (v,) = results(tmp_path / "out.jsonl")[0]["scorecard"]["verdicts"]
    assert (v["answer"], v["p_yes"]) == ("yes", 1.0)
    assert "2 yes / 0 no / 1 unanswered of 3 samples" in v["explanation"]


# -- 4. Unicode line separators round-trip ------------------------------------------------------------------------
SEPARATORS = "a\u2028b\u2029c\x85d"


def test_line_separators_in_data_and_replies_round_trip(tmp_path, capsys):
    write_inputs(tmp_path, rows=[{"input": SEPARATORS, "output": SEPARATORS, "note": SEPARATORS}])
    raw = (tmp_path / "rows.jsonl").read_bytes().replace(b"\\u2028", "\u2028".encode())  # valid JSON Lines, U+2028 raw
    (tmp_path / "rows.jsonl").write_bytes(raw)
    with scripted_server(lambda body: verdict("yes", f"because{SEPARATORS}")) as server:
        assert cli.main(judge_args(tmp_path, *server.lm_args())) == ExitCode.OK
        assert cli.main(judge_args(tmp_path, *server.lm_args())) == ExitCode.OK  # the resume reads it back
    out = tmp_path / "out.jsonl"
    assert len(out.read_bytes().split(b"\n")) == 2  # one line and the final newline
    (row,) = [obj for _, obj in read_jsonl(out)]
    assert row["note"] == SEPARATORS and row["bineval"]["scorecard"]["verdicts"][0]["explanation"] == f"because{SEPARATORS}"
    capsys.readouterr()
    assert cli.main(["show", str(out)]) == ExitCode.OK


def test_jsonl_lines_escape_every_separator_str_splitlines_knows():
    line = dumps_line({"t": "".join(chr(c) for c in range(0x2030))})
    assert len(line.splitlines()) == 1 and line.endswith("\n")


# -- 5. text from data is never console markup --------------------------------------------------------------------
def test_markup_like_dimension_and_question_are_printed_as_text(tmp_path, capsys):
    write_inputs(tmp_path, questions=[Question(text="Does it avoid [/INST] and [bold]?", dimension="[/INST]")])
    with scripted_server(lambda body: verdict("no", "it has [/] in it")) as server:
        assert cli.main(judge_args(tmp_path, *server.lm_args())) == ExitCode.OK
    assert "[/INST]" in capsys.readouterr().out  # tables are results: stdout


def test_an_lm_written_question_holding_markup_is_printed_as_text(tmp_path, capsys, every_question_related):
    questions = {"questions": {"items": ["Is it short [/INST]?", "Does it avoid [red]colour[/red]?"]}}
    with scripted_server(lambda body: json.dumps(questions)) as server:
        args = ["checklist", "--task", "Write a haiku.", "--method", "tick", "-o", str(tmp_path / "c.json"), "--cache-dir", str(tmp_path / "cache")]
        assert cli.main([*args, *server.lm_args()]) == ExitCode.OK
    assert "[red]colour[/red]" in capsys.readouterr().out  # the questions written are results: stdout


# -- 6, 7. write errors: one line, no torn line, resume repairs; the rewrite is atomic ----------------------------
PAD = "x" * 200_000  # a row of about 200 kB, so a file-size limit falls inside the second row


@pytest.fixture
def file_size_limit():
    """Set RLIMIT_FSIZE for this process (SIGXFSZ ignored, so a write past it fails with EFBIG as a full disk
    fails with ENOSPC); restored afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    def limit(size: int) -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))

    yield limit
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    signal.signal(signal.SIGXFSZ, previous)


def test_a_full_disk_is_one_located_line_and_leaves_no_torn_line(tmp_path, monkeypatch, capsys, file_size_limit):
    route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    write_inputs(tmp_path, rows=[{"input": "a", "output": "b", "pad": PAD}, {"input": "c", "output": "d", "pad": PAD}])
    out = tmp_path / "out.jsonl"
    file_size_limit(300_000)
    code = cli.main(judge_args(tmp_path))
    file_size_limit(resource.RLIM_INFINITY)
    err = capsys.readouterr().err
    assert code == ExitCode.INPUT
    assert f"error: {out}: cannot write (File too large)" in err and "Traceback" not in err
    assert out.read_bytes().endswith(b"\n") and len(results(out)) == 1  # the first row, whole; nothing torn
    assert cli.main(judge_args(tmp_path)) == ExitCode.OK  # space again: the resume goes on
    assert [r["line"] for r in results(out)] == [1, 2]


def test_resume_repairs_a_torn_last_line(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    write_inputs(tmp_path, rows=[{"input": "a", "output": "b"}, {"input": "c", "output": "d"}])
    out = tmp_path / "out.jsonl"
    assert cli.main(judge_args(tmp_path)) == ExitCode.OK
    data = out.read_bytes()
    out.write_bytes(data[: len(data) - 40])  # a run killed in the middle of writing its second row
    assert cli.main(judge_args(tmp_path)) == ExitCode.OK
    assert "resuming: 1 complete row(s) kept" in capsys.readouterr().err
    assert [r["line"] for r in results(out)] == [1, 2]


def test_resume_rewrites_through_a_temporary_file(tmp_path, monkeypatch, capsys, file_size_limit):
    replies = iter([verdict_json("yes"), "garbage", verdict_json("yes")])
    route_cli_lm(monkeypatch, lambda request: next(replies))
    write_inputs(tmp_path, rows=[{"input": "a", "output": "b", "pad": PAD}, {"input": "c", "output": "d", "pad": PAD}])
    out = tmp_path / "out.jsonl"
    assert cli.main(judge_args(tmp_path, "--threads", "1")) == ExitCode.INCOMPLETE  # row 2 is to be redone
    before = out.read_bytes()
    file_size_limit(100_000)  # the rewritten file (row 1 only) cannot be written in full
    code = cli.main(judge_args(tmp_path))
    file_size_limit(resource.RLIM_INFINITY)
    assert code == ExitCode.INPUT and "cannot write" in capsys.readouterr().err
    assert out.read_bytes() == before  # untouched: the new file never replaced it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checklist.json", "out.jsonl", "out.jsonl.run.json", "rows.jsonl"]  # no temporary file left
    inode = out.stat().st_ino
    assert cli.main(judge_args(tmp_path)) == ExitCode.OK
    assert out.stat().st_ino != inode  # replaced by rename, never rewritten in place


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    lm = route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    write_inputs(tmp_path)
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        code = cli.main(["judge", "--checklist", str(tmp_path / "checklist.json"), "--data", str(tmp_path / "rows.jsonl"), "-o", str(folder / "out.jsonl")])
    finally:
        folder.chmod(0o700)
    assert code == ExitCode.INPUT and "cannot write in" in capsys.readouterr().err
    assert lm.engine.requests == []


# -- 8. the cache lives where the README says ---------------------------------------------------------------------
def cache_entries(folder: Path) -> int:
    return sum(1 for p in folder.rglob("*.db")) if folder.exists() else 0


@pytest.mark.parametrize("where", ["env", "home"])
def test_the_default_cache_is_honoured(tmp_path, monkeypatch, where):
    write_inputs(tmp_path)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DSPY_CACHEDIR", str(tmp_path / "dspy-default"))
    if where == "env":
        monkeypatch.setenv("BINEVAL_CACHE_DIR", str(tmp_path / "env-cache"))
        expected = tmp_path / "env-cache"
    else:
        monkeypatch.delenv("BINEVAL_CACHE_DIR", raising=False)
        expected = home / ".cache" / "bineval_dspy"
    args = [a for a in judge_args(tmp_path) if a not in ("--cache-dir", str(tmp_path / "cache"))]
    with scripted_server(lambda body: verdict("yes")) as server:
        assert cli.main([*args, *server.lm_args()]) == ExitCode.OK
        assert cli.main([*args, *server.lm_args(), "--overwrite"]) == ExitCode.OK
    assert cache_entries(expected) > 0 and not (tmp_path / "dspy-default").exists()
    assert len(server.bodies) == 1  # the second run was answered from that cache


# -- 9. tune with a failing LM -------------------------------------------------------------------------------------
def write_tune_config(tmp_path: Path, trials: int = 1) -> Path:
    """A study of TICK's question count against one task with gold questions."""
    (tmp_path / "tasks.jsonl").write_text(json.dumps({"task": "Summarize the article.", "gold": ["Is it short?", "Is it true?"]}) + "\n")
    path = tmp_path / "tune.toml"
    path.write_text(
        f'name = "w"\ntrials = {trials}\nheartbeat = 1\n[objectives]\ncoverage = "maximize"\n[space]\n'
        'max_questions = { type = "int", low = 2, high = 5 }\n[run]\nkind = "checklist"\ntasks = "tasks.jsonl"\nmethod = "tick"\n'
    )
    return path


def test_tune_with_a_failing_lm_exits_3_in_one_line(tmp_path, capsys):
    write_tune_config(tmp_path)
    with scripted_server(lambda body: (500, {"error": {"message": "boom", "type": "server_error"}})) as server:
        code = cli.main(["tune", str(tmp_path / "tune.toml"), *server.lm_args(), "--timeout", "2", "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert code == ExitCode.LM_FAILURE
    assert "error: trial 0: the LM failed (LMServerError" in err and "Traceback" not in err


# -- 10. LM arguments are checked before any row --------------------------------------------------------------------
@pytest.mark.parametrize(
    "options, message",
    [
        (["--temperature", "-5"], "--temperature: must be from 0 to 2"),
        (["--temperature", "nan"], "--temperature: must be from 0 to 2"),
        (["--lm", "{tmp}/model.gguf"], "not a GGUF model file"),
        (["--lm", "{tmp}/corrupt.gguf"], "llama.cpp cannot load it"),
        (["--lm", "openai/gpt-4o-mini"], "no API key: set OPENAI_API_KEY"),
        (["--lm", "/etc/passwd"], "expected smollm2, gemma3-270m, a .gguf path"),  # issue 32, item 13
        (["--lm", "{tmp}/rows.jsonl"], "expected smollm2, gemma3-270m, a .gguf path"),
        (["--timeout", "1e308"], "--timeout: must be a positive number of seconds up to 86400"),
    ],
)
def test_bad_lm_arguments_exit_2_with_nothing_done(tmp_path, monkeypatch, capsys, options, message):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    write_inputs(tmp_path)
    (tmp_path / "model.gguf").write_text("not a model")
    (tmp_path / "corrupt.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    options = [o.format(tmp=tmp_path) for o in options]
    try:
        code = cli.main(judge_args(tmp_path, *options))
    except SystemExit as exc:  # argparse's own refusal of a malformed value
        code = exc.code
    assert code == ExitCode.INPUT
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()


# -- 11. every result-bearing option is in the fingerprint --------------------------------------------------------
@pytest.mark.parametrize("changed", [["--temperature", "0.9"], ["--max-tokens", "50"]])
def test_a_resume_at_other_sampling_settings_is_refused(tmp_path, capsys, changed):
    write_inputs(tmp_path, rows=[{"input": "a", "output": "b"}, {"input": "c", "output": "d"}])
    with scripted_server(lambda body: verdict("yes")) as server:
        first = cli.main(judge_args(tmp_path, *server.lm_args(), "--temperature", "0", "--max-calls", "1", "--threads", "1"))
        assert first == ExitCode.BUDGET
        capsys.readouterr()
        assert cli.main(judge_args(tmp_path, *server.lm_args(), "--temperature", "0", *changed)) == ExitCode.INPUT
    assert "made with other settings (lm:" in capsys.readouterr().err
    assert len(results(tmp_path / "out.jsonl")) == 1


# -- 12. an input is never the output -------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["rows.jsonl", "checklist.json"])
def test_judge_refuses_an_output_that_is_an_input(tmp_path, monkeypatch, capsys, target):
    route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    c, d = write_inputs(tmp_path)
    before = (tmp_path / target).read_bytes()
    code = cli.main(["judge", "--checklist", str(c), "--data", str(d), "-o", str(tmp_path / "." / target), "--overwrite"])
    assert code == ExitCode.INPUT and "is also an input of this command" in capsys.readouterr().err
    assert (tmp_path / target).read_bytes() == before


def test_generate_and_checklist_refuse_an_output_that_is_an_input(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda request: "hello")
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps({"key": 1, "prompt": "Say hi", "instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]}) + "\n")
    assert cli.main(["generate", "--suite", str(suite), "-o", str(suite), "--overwrite"]) == ExitCode.INPUT
    task = tmp_path / "task.txt"
    task.write_text("Write a haiku.")
    assert cli.main(["checklist", "--task", f"@{task}", "-o", str(task)]) == ExitCode.INPUT
    assert capsys.readouterr().err.count("is also an input of this command") == 2
    assert task.read_text() == "Write a haiku." and "Say hi" in suite.read_text()


# -- also: one writer per output, logprobs, control characters in show, a second Ctrl-C ---------------------------
def test_a_second_writer_on_one_output_is_refused(tmp_path, monkeypatch, capsys):
    lm = route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    write_inputs(tmp_path)
    out = tmp_path / "out.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(30)", str(out)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        assert cli.main(judge_args(tmp_path)) == ExitCode.INPUT
    finally:
        holder.kill()
        holder.wait()
    assert "another bineval run is writing it" in capsys.readouterr().err
    assert lm.engine.requests == [] and out.read_bytes() == b""
    assert cli.main(judge_args(tmp_path)) == ExitCode.OK  # the lock went with its process


def test_the_lock_survives_the_resume_rewrite(tmp_path, monkeypatch):
    replies = iter([verdict_json("yes"), "garbage", verdict_json("yes")])
    route_cli_lm(monkeypatch, lambda request: next(replies))
    write_inputs(tmp_path, rows=[{"input": "a", "output": "b"}, {"input": "c", "output": "d"}])
    out = tmp_path / "out.jsonl"
    assert cli.main(judge_args(tmp_path, "--threads", "1")) == ExitCode.INCOMPLETE
    seen: list[bool] = []

    def judged_while_locked(request):
        with open(out, "a") as other:  # another process's view: a new open file description
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                seen.append(False)
            except BlockingIOError:
                seen.append(True)
        return verdict_json("yes")

    route_cli_lm(monkeypatch, judged_while_locked)
    assert cli.main(judge_args(tmp_path)) == ExitCode.OK
    assert seen == [True]  # the rewritten file was locked before it replaced the old one


def test_duplicate_rows_of_two_writers_are_kept_once_on_resume(tmp_path, monkeypatch):
    route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    write_inputs(tmp_path, rows=[{"input": "a", "output": "b"}, {"input": "c", "output": "d"}])
    out = tmp_path / "out.jsonl"
    assert cli.main(judge_args(tmp_path)) == ExitCode.OK
    out.write_bytes(out.read_bytes() * 2)  # what two unlocked writers used to leave
    assert cli.main(judge_args(tmp_path)) == ExitCode.OK
    assert [r["line"] for r in results(out)] == [1, 2]


def test_probability_without_logprobs_marks_every_verdict(tmp_path, capsys):
    write_inputs(tmp_path, questions=[Question(text="Is it short?", dimension="d"), Question(text="Is it kind?", dimension="d")])
    with scripted_server(lambda body: verdict("yes")) as server:  # this server never sends logprobs
        assert cli.main(judge_args(tmp_path, *server.lm_args(), "--probability")) == ExitCode.OK
    verdicts = results(tmp_path / "out.jsonl")[0]["scorecard"]["verdicts"]
    assert all(v["p_yes"] is None and "[no P(yes): the LM sent no logprobs" in v["explanation"] for v in verdicts)
    assert "2 verdict(s) without P(yes)" in capsys.readouterr().err


def test_calibration_without_logprobs_or_with_failed_priors_leaves_verdicts_unanswered(tmp_path, capsys):
    """Calibration corrects a yes-biased answer; where it cannot run, the biased answer is no verdict."""
    write_inputs(tmp_path, questions=[Question(text="Is it short?", dimension="d"), Question(text="Is it kind?", dimension="d")])
    with scripted_server(lambda body: verdict("yes")) as server:  # this server never sends logprobs
        assert cli.main(judge_args(tmp_path, *server.lm_args(), "--calibration", "content_free")) == ExitCode.INCOMPLETE
    verdicts = results(tmp_path / "out.jsonl")[0]["scorecard"]["verdicts"]
    assert all(v["answer"] == "unanswered" and "calibration failed" in v["explanation"] for v in verdicts)

    def prior_fails(body: dict) -> str | tuple[int, dict]:
        if "N/A" in json.dumps(body):  # the content-free output: the server errs on every prior
            return 500, {"error": {"message": "prior down"}}
        return verdict("yes")

    (tmp_path / "out.jsonl").unlink()
    with scripted_server(prior_fails) as server:
        code = cli.main(judge_args(tmp_path, *server.lm_args(), "--calibration", "content_free", "--timeout", "1"))
    assert code == ExitCode.INCOMPLETE and all(v["answer"] == "unanswered" for v in results(tmp_path / "out.jsonl")[0]["scorecard"]["verdicts"])


def test_show_escapes_terminal_control_sequences(tmp_path, monkeypatch, capsys):
    hostile = "\x1b[2J\x1b]0;owned\x07\x9b31m"
    route_cli_lm(monkeypatch, lambda request: verdict_json("no", f"reason {hostile}"))
    write_inputs(tmp_path, questions=[Question(text=f"Is it {hostile} short?", dimension=f"d{hostile}")], rows=[{"input": hostile, "output": hostile, "id": hostile}])
    assert cli.main(judge_args(tmp_path)) == ExitCode.OK
    capsys.readouterr()
    assert cli.main(["show", str(tmp_path / "out.jsonl")]) == ExitCode.OK
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
    assert "\\x1b[2J" in text


def slow_reply(body: dict) -> str:
    time.sleep(3)
    return verdict("yes")


def test_a_second_ctrl_c_prints_no_traceback(tmp_path):
    write_inputs(tmp_path, rows=[{"input": str(i), "output": "b"} for i in range(4)])
    with scripted_server(slow_reply) as server:
        code, err = interrupted_twice(judge_args(tmp_path, *server.lm_args(), "--threads", "4"), server, requests=4, gap=0.5)
    assert code == ExitCode.INTERRUPTED
    assert "Traceback" not in err and "interrupted" in err


def test_the_first_ctrl_c_finishes_the_calls_in_flight_and_saves_their_rows(tmp_path):
    """Issue 47: the first Ctrl-C says what it waits for, lets the rows in flight finish and saves them (it used to
    drop them), then exits 130; the rerun judges only the rest."""
    write_inputs(tmp_path, rows=[{"input": str(i), "output": "b", "id": str(i)} for i in range(12)])
    with scripted_server(slow_reply) as server:
        argv = judge_args(tmp_path, *server.lm_args(), "--threads", "4")
        proc = subprocess.Popen([sys.executable, "-m", "bineval_dspy.cli", *argv], stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])
        deadline = time.time() + 60
        while len(server.bodies) < 4 and time.time() < deadline:  # four rows' calls are in flight
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == ExitCode.INTERRUPTED, err
        assert re.search(r"finishing [1-9]\d* calls? in flight; Ctrl-C again to stop now", err), err
        assert "Traceback" not in err and "interrupted: finished rows are saved" in err
        saved = [obj["id"] for _, obj in read_jsonl(tmp_path / "out.jsonl")]
        assert 4 <= len(saved) < 12 and saved == [str(i) for i in range(len(saved))]  # the rows in flight, in order
        asked = len(server.bodies)
        assert cli.main(argv) == ExitCode.OK
    assert len(server.bodies) - asked == 12 - len(saved)  # the rerun asks only about the rows not saved
    assert [obj["id"] for _, obj in read_jsonl(tmp_path / "out.jsonl")] == [str(i) for i in range(12)]


def interrupted_twice(argv: list[str], server, requests: int, gap: float) -> tuple[int, str]:
    """A command run as a user runs it, sent Ctrl-C twice ``gap`` seconds apart once ``requests`` reached the server:
    its exit code and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "bineval_dspy.cli", *argv], stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])
    deadline = time.time() + 60
    while len(server.bodies) < requests and time.time() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    time.sleep(gap)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


SECOND_CTRL_C_WHILE_A_GENERATOR_IS_FINALIZED = """
import argparse, os, signal, sys, threading, time
import importlib
cli_main = importlib.import_module("bineval_dspy.cli.main")

def rows():
    try:
        yield 1
    finally:
        time.sleep(20)  # a thread pool joining its workers as the generator that owns it is collected

def command(args):
    stream = rows()
    next(stream)
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(20)
    finally:
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        del stream  # finalized here, before main() sees the first Ctrl-C: the second one lands in its finally

parser = argparse.ArgumentParser()
parser.set_defaults(func=command)
cli_main.build_parser = lambda: parser
sys.exit(cli_main.main([]))
"""


def test_a_second_ctrl_c_while_the_first_unwinds_quits_with_no_traceback():
    """Where Python prints "Exception ignored in <generator>" with a traceback (a finalizer interrupted), the
    second Ctrl-C must already quit: the first one switches the handler where it is raised, not where main catches it."""
    proc = subprocess.run(
        [sys.executable, "-c", SECOND_CTRL_C_WHILE_A_GENERATOR_IS_FINALIZED],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == ExitCode.INTERRUPTED, proc.stderr
    assert "Traceback" not in proc.stderr and "interrupted" in proc.stderr


def slow_questions(body: dict) -> str:
    time.sleep(5)
    return json.dumps({"questions": {"items": ["Is it short?", "Is it true?"]}})


def test_ctrl_c_in_tune_is_one_line_not_a_traceback(tmp_path):
    config = write_tune_config(tmp_path, trials=2)
    with scripted_server(slow_questions) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bineval_dspy.cli", "tune", str(config), *server.lm_args(), "--cache-dir", str(tmp_path / "cache")],
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        )
        deadline = time.time() + 60
        while not server.bodies and time.time() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == ExitCode.INTERRUPTED
    assert "Traceback" not in err and "interrupted" in err


def slow_answer(body: dict) -> str:
    time.sleep(2)
    return "1. apple\n2. pear"


def test_two_quick_ctrl_c_during_optimize_end_in_one_line_and_the_rerun_finishes(tmp_path):
    """Issue 32, item 14: the second Ctrl-C lands while the first still unwinds the optimizer's thread pool."""
    row = {"instruction_id_list": ["detectable_format:number_bullet_lists"], "kwargs": [{"num_bullets": 2}]}
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", **row}) + "\n" for i in range(6)))
    config = tmp_path / "run.toml"
    config.write_text('mode = "self"\nrun_dir = "run"\n[data]\nsuite = "suite.jsonl"\ntrain = 3\nval = 2\ntest = 1\n'
                      '[program]\ninstructions = "Answer the request."\n[optimizer]\nmax_iterations = 1\n')
    argv = ["optimize", str(config), "--cache-dir", str(tmp_path / "cache"), "--threads", "4"]
    with scripted_server(slow_answer) as server:
        code, err = interrupted_twice([*argv, *server.lm_args()], server, requests=2, gap=0.1)
        assert code == ExitCode.INTERRUPTED, err
        assert "Traceback" not in err and "interrupted" in err
        done = subprocess.run([sys.executable, "-m", "bineval_dspy.cli", *argv, *server.lm_args()], capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == ExitCode.OK, done.stderr[-2000:]
    assert json.loads((tmp_path / "run" / "results.json").read_text())


def answer_by_row(body: dict) -> str:
    """A verdict that depends on the row only, after a pause: a run killed mid-way has replies in flight."""
    time.sleep(0.05)
    text = json.dumps(body)
    return verdict("yes" if any(f"row {i} " in text for i in (0, 3, 5, 8)) else "no")


def test_a_judge_killed_with_cache_writes_queued_then_rerun_ends_as_an_undisturbed_run(tmp_path):
    """kill -9 while the disk cache's writes are queued on its thread: a rerun keeps the complete rows, asks the rest
    again and ends with the same verdicts as a run never killed (issue 32's own pass)."""
    rows = [{"id": str(i), "input": f"row {i} input", "output": "b"} for i in range(12)]
    questions = [Question(text="Is it short?", dimension="d"), Question(text="Is it kind?", dimension="d")]
    killed, calm = tmp_path / "killed", tmp_path / "calm"
    for folder in (killed, calm):
        folder.mkdir()
        write_inputs(folder, questions=questions, rows=rows)
    with scripted_server(answer_by_row) as server:
        command = [sys.executable, "-m", "bineval_dspy.cli", *judge_args(killed, *server.lm_args(), "--concurrency", "4")]
        proc = subprocess.Popen(command, stderr=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[2])
        deadline = time.time() + 60
        while len(server.bodies) < 9 and time.time() < deadline:
            time.sleep(0.01)
        proc.kill()
        proc.wait(timeout=30)
        assert len((killed / "out.jsonl").read_text().splitlines()) < len(rows)  # killed mid-way
        assert subprocess.run(command, stderr=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[2], timeout=300).returncode == ExitCode.OK
        assert cli.main(judge_args(calm, *server.lm_args(), "--concurrency", "4")) == ExitCode.OK
    assert by_row(killed / "out.jsonl") == by_row(calm / "out.jsonl")
    assert by_row(calm / "out.jsonl")[3] == ("3", ["yes", "yes"])


def by_row(path: Path) -> list[tuple[str, list[str]]]:
    return [(obj["id"], [v["answer"] for v in obj["bineval"]["scorecard"]["verdicts"]]) for _, obj in read_jsonl(path)]


def test_nothing_listening_at_the_api_base_is_said_on_stderr_and_exits_as_a_failed_lm(tmp_path, capsys):
    """Issue 33, item 6: it exited 1 saying only "unanswered ... rerun"; the cause was in the JSON alone."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    write_inputs(tmp_path, rows=[{"input": "a", "output": "b"}, {"input": "c", "output": "d"}])
    code = cli.main(judge_args(tmp_path, "--lm", "openai/m", "--api-base", f"http://127.0.0.1:{port}/v1", "--timeout", "2"))
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == ExitCode.LM_FAILURE
    assert last.startswith("error: every LM verdict (2) unanswered, each the same way: no usable answer: LMTransportError") and f"127.0.0.1:{port}" in last


def test_some_verdicts_unanswered_say_their_most_common_cause_and_exit_1(tmp_path, capsys):
    def kind_fails(body: dict):
        return (500, {"error": {"message": "kind is down"}}) if "Is it kind?" in json.dumps(body) else verdict("yes")

    write_inputs(tmp_path, questions=[Question(text="Is it short?", dimension="d"), Question(text="Is it kind?", dimension="d")])
    with scripted_server(kind_fails) as server:
        code = cli.main(judge_args(tmp_path, *server.lm_args(), "--timeout", "1"))
    err = " ".join(capsys.readouterr().err.split())
    assert code == ExitCode.INCOMPLETE
    assert "1 LM verdict(s) unanswered, most often (1) so: no usable answer: LMServerError" in err and "kind is down" in err


# -- the second pass (docs/reliability.md) -----------------------------------------------------------------------
def test_a_refused_api_key_stops_the_run_in_one_line(tmp_path, capsys):
    write_inputs(tmp_path, rows=[{"input": "a", "output": "b"}, {"input": "c", "output": "d"}])
    refusal = {"error": {"message": "bad key", "type": "invalid_request_error", "code": "invalid_api_key"}}
    with scripted_server(lambda body: (401, refusal)) as server:
        assert cli.main(judge_args(tmp_path, *server.lm_args(), "--threads", "1")) == ExitCode.INPUT
    assert "the LM refused the API key" in capsys.readouterr().err
    assert (tmp_path / "out.jsonl").read_bytes() == b""  # no row written as if its questions were merely unanswered


def test_generate_stops_on_a_refused_api_key_as_judge_does(tmp_path, capsys):
    """Exit 2 in one line, not exit 1 with every row 'failed' (issue 32, item 13)."""
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"key": i, "prompt": f"Say hi ({i}).", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}) + "\n" for i in range(2)))
    refusal = {"error": {"message": "bad key", "type": "invalid_request_error", "code": "invalid_api_key"}}
    with scripted_server(lambda body: (401, refusal)) as server:
        argv = ["generate", "--suite", str(suite), "-o", str(tmp_path / "out.jsonl"), "--cache-dir", str(tmp_path / "cache")]
        assert cli.main([*argv, *server.lm_args()]) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert "the LM refused the API key" in err and err.strip().count("\n") <= 1


def test_a_server_asking_to_retry_after_a_day_costs_one_timeout(tmp_path):
    write_inputs(tmp_path)
    with scripted_server(lambda body: (429, {"error": {"message": "slow down", "type": "rate_limit"}})) as server:
        handler = server.httpd.RequestHandlerClass
        send = handler.send_response

        def send_response(self, code, message=None):
            send(self, code, message)
            if code == 429:
                self.send_header("Retry-After", "100000")

        handler.send_response = send_response
        started = time.time()
        assert cli.main(judge_args(tmp_path, *server.lm_args(), "--timeout", "1")) == ExitCode.LM_FAILURE  # every call alike
    assert time.time() - started < 20 and len(server.bodies) == 2  # one retry, after at most the timeout


@pytest.mark.parametrize(
    "line, message",
    [
        (b'{"input": "a", "output": "b", "x": NaN}', "malformed JSON (NaN is not JSON)"),
        (b'{"input": "a", "output": "b", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "malformed JSON (nested too deeply)"),
        (b'{"input": "a\\ud800", "output": "b"}', "a string holds a lone surrogate"),
    ],
)
def test_data_that_is_not_standard_json_text_is_one_located_line(tmp_path, monkeypatch, capsys, line, message):
    lm = route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    write_inputs(tmp_path)
    (tmp_path / "rows.jsonl").write_bytes(line + b"\n")
    assert cli.main(judge_args(tmp_path)) == ExitCode.INPUT
    assert f"rows.jsonl:1: {message}" in capsys.readouterr().err
    assert lm.engine.requests == []


def test_a_byte_order_mark_is_no_part_of_the_data(tmp_path, monkeypatch):
    route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    write_inputs(tmp_path)
    (tmp_path / "rows.jsonl").write_bytes(b"\xef\xbb\xbf" + (tmp_path / "rows.jsonl").read_bytes().replace(b"\n", b"\r\n"))
    assert cli.main(judge_args(tmp_path)) == ExitCode.OK


def test_a_damaged_cache_folder_is_one_line(tmp_path, capsys):
    write_inputs(tmp_path)
    with scripted_server(lambda body: verdict("yes")) as server:
        assert cli.main(judge_args(tmp_path, *server.lm_args())) == ExitCode.OK
        for db in (tmp_path / "cache").rglob("*.db"):
            db.write_bytes(b"not sqlite" * 100)
        assert cli.main(judge_args(tmp_path, *server.lm_args(), "--overwrite")) == ExitCode.INPUT
    assert "not a usable LM cache" in capsys.readouterr().err


def test_a_full_disk_is_said_as_such_and_the_cache_is_not_to_be_deleted(tmp_path, monkeypatch, capsys):
    """Telling a user to delete a cache on a full disk would throw away every paid reply (issue 32, item 13)."""
    import errno

    from bineval_dspy.lm import cache

    def full(folder):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache, "install", full)
    write_inputs(tmp_path)
    assert cli.main(judge_args(tmp_path)) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert "the disk is full" in err and "the cache is kept" in err and "delete it" not in err


def test_an_empty_lm_name_is_refused_not_read_as_the_default(tmp_path, capsys):
    write_inputs(tmp_path)
    assert cli.main(judge_args(tmp_path, "--lm", "")) == ExitCode.INPUT
    assert "--lm: empty" in capsys.readouterr().err


def test_an_output_that_links_to_an_input_is_refused(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    c, d = write_inputs(tmp_path)
    (tmp_path / "link.jsonl").symlink_to(d)
    code = cli.main(["judge", "--checklist", str(c), "--data", str(d), "-o", str(tmp_path / "link.jsonl"), "--overwrite"])
    assert code == ExitCode.INPUT and "is also an input of this command" in capsys.readouterr().err
    assert json.loads(d.read_text()) == {"input": "a", "output": "b"}


def test_a_cache_dir_that_is_a_file_is_one_line(tmp_path, capsys):
    write_inputs(tmp_path)
    (tmp_path / "cache").write_text("a file")
    with scripted_server(lambda body: verdict("yes")) as server:
        assert cli.main(judge_args(tmp_path, *server.lm_args())) == ExitCode.INPUT
        assert server.bodies == []
    assert "--cache-dir" in capsys.readouterr().err


def test_a_checklist_the_lm_failed_to_write_is_asked_again_on_rerun(tmp_path, every_question_related):
    reply = Switchable(lambda body: "no checklist here")
    args = ["checklist", "--task", "Write a haiku.", "--method", "tick", "-o", str(tmp_path / "c.json"), "--cache-dir", str(tmp_path / "cache")]
    with scripted_server(reply) as server:
        assert cli.main([*args, *server.lm_args()]) == ExitCode.LM_FAILURE
        sent = len(server.bodies)
        reply.reply = lambda body: json.dumps({"questions": {"items": ["Is it three lines?", "Is it about nature?"]}})
        assert cli.main([*args, *server.lm_args()]) == ExitCode.OK
        assert len(server.bodies) > sent


def test_meta_eval_resume_repairs_a_torn_last_score(tmp_path, capsys):
    from tests.meta.fixtures import summeval_files

    data = tmp_path / "data"
    data.mkdir()
    summeval_files(data)
    config = tmp_path / "meta.toml"
    config.write_text(
        'run_dir = "runs/meta"\n[bootstrap]\nresamples = 50\n[dataset]\nkind = "summeval"\nsummaries = "data/summaries.jsonl"\n'
        'articles = "data/articles.jsonl"\n[[methods]]\nname = "rouge-l"\nkind = "rouge_l"\n'
    )
    assert cli.main(["meta-eval", str(config)]) == ExitCode.OK
    scores = tmp_path / "runs" / "meta" / "scores.jsonl"
    whole = scores.read_bytes()
    scores.write_bytes(whole[:-30])  # killed while writing the last score
    capsys.readouterr()
    assert cli.main(["meta-eval", str(config)]) == ExitCode.OK
    assert scores.read_bytes().count(b"\n") == whole.count(b"\n")


def test_report_and_coverage_refuse_to_overwrite_what_they_read(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    write_inputs(tmp_path)
    out = tmp_path / "out.jsonl"
    assert cli.main(judge_args(tmp_path)) == ExitCode.OK
    judged = out.read_bytes()
    assert cli.main(["report", str(out), "-o", str(out)]) == ExitCode.INPUT
    assert cli.main(["report", str(tmp_path), "-o", str(tmp_path / "out.jsonl.run.json")]) == ExitCode.INPUT  # the log's header
    gold = tmp_path / "checklist.json"
    assert cli.main(["coverage", "--checklists", str(gold), "--gold", str(gold), "-o", str(gold)]) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert err.count("is also an input of this command") == 2 and "is not an HTML file" in err
    assert out.read_bytes() == judged


# -- a reply that is not exactly one verdict is no verdict, in every format (issue 32, items 2 and 3) -------------
AMBIGUOUS_REPLIES = {
    "two answers in one object": '{"verdict": {"answer": "no", "answer": "yes"}}',
    "a second, contradicting object": '{"verdict": {"answer": "no", "explanation": "x"}} {"verdict": {"answer": "yes", "explanation": "y"}}',
    "a refusal quoting the schema": 'I refuse. The format would be {"verdict": {"answer": "yes", "explanation": "ok"}} but I will not fill it in.',
    "a batch refusal quoting the schema": 'I refuse ... the format would be {"verdicts": {"q1": {"answer": "yes"}, "q2": {"answer": "yes"}}} but no.',
    "a batch key given twice": '{"verdicts": {"q1": {"answer": "no"}, "q2": {"answer": "yes"}, "q1": {"answer": "yes"}}}',
}
FORMATS = {
    "explained": [], "verdict only": ["--explanations", "none"], "failures explained": ["--explanations", "failures"],
    "batch": ["--scoring", "batch"], "batch verdict only": ["--scoring", "batch", "--explanations", "none"],
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("reply", AMBIGUOUS_REPLIES)
def test_a_reply_that_is_not_exactly_one_verdict_leaves_every_question_unanswered(tmp_path, fmt, reply):
    write_inputs(tmp_path, questions=[Question(text="Is it short?", dimension="d"), Question(text="Is it kind?", dimension="d")])
    with scripted_server(lambda body: AMBIGUOUS_REPLIES[reply]) as server:
        assert cli.main(judge_args(tmp_path, *server.lm_args(), *FORMATS[fmt])) == ExitCode.INCOMPLETE
    verdicts = results(tmp_path / "out.jsonl")[0]["scorecard"]["verdicts"]
    assert [v["answer"] for v in verdicts] == ["unanswered", "unanswered"]


def test_a_fenced_or_cut_short_reply_is_still_read():
    """Strict, not brittle: a Markdown fence around the object, or a reply a token limit cut, still gives its answer."""
    from bineval_dspy.judges.replies import ReplyError, check_reply

    assert check_reply('```json\n{"verdict": {"answer": "yes", "explanation": "ok"}}\n```') == {"verdict": {"answer": "yes", "explanation": "ok"}}
    assert check_reply('{"verdict": {"answer": "no", "explanation": "the summary inven') is None  # cut: the lenient reader takes it
    with pytest.raises(ReplyError, match="more than 1 answer"):
        check_reply('{"verdict": {"answer": "no", "explanation": "x", "answer": "ye')


# -- resume and output paths know the judge program (issue 32, items 7 and 8) --------------------------------------
def _judge_program(path: Path, instructions: str) -> Path:
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.programs.state import ProgramFile, instructions_of

    state = ProgramFile.of(BinaryJudge())
    state.instructions = {name: instructions for name in instructions_of(BinaryJudge())}
    state.save(path)
    return path


def test_resume_refuses_output_made_by_another_judge_program(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    write_inputs(tmp_path, rows=[{"input": "a", "output": "b"}, {"input": "c", "output": "d"}])
    first, second = _judge_program(tmp_path / "p1.json", "Judge strictly."), _judge_program(tmp_path / "p2.json", "Judge kindly.")
    assert cli.main(judge_args(tmp_path, "--program", str(first), "--limit", "1")) == ExitCode.OK
    capsys.readouterr()
    assert cli.main(judge_args(tmp_path, "--program", str(second))) == ExitCode.INPUT
    err = capsys.readouterr().err
    assert "resuming" not in err and "program" in err and len(results(tmp_path / "out.jsonl")) == 1
    assert cli.main(judge_args(tmp_path, "--program", str(first))) == ExitCode.OK  # the same program resumes


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_an_output_path_that_is_the_program_is_refused(tmp_path, monkeypatch, capsys, overwrite):
    route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    write_inputs(tmp_path)
    program = _judge_program(tmp_path / "p.json", "Judge strictly.")
    before = program.read_bytes()
    argv = [*judge_args(tmp_path, "--program", str(tmp_path)), *overwrite]  # a folder stands for its program.json
    (tmp_path / "program.json").write_bytes(before)
    argv[argv.index("-o") + 1] = str(tmp_path / "program.json")
    assert cli.main(argv) == ExitCode.INPUT
    assert "is also an input of this command" in capsys.readouterr().err and (tmp_path / "program.json").read_bytes() == before


@pytest.mark.parametrize("sidecar", ["5", "null", "[]"])
def test_a_fingerprint_sidecar_that_is_not_an_object_is_one_line(tmp_path, monkeypatch, capsys, sidecar):
    route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    write_inputs(tmp_path)
    assert cli.main(judge_args(tmp_path)) == ExitCode.OK
    (tmp_path / "out.jsonl.run.json").unlink()  # output from before headers: its fingerprint in a sidecar
    (tmp_path / "out.jsonl.fingerprint.json").write_text(sidecar)
    capsys.readouterr()
    assert cli.main(judge_args(tmp_path)) == ExitCode.INPUT
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not a JSON object of settings" in err and "Traceback" not in err


def test_a_damaged_output_row_is_one_located_line_not_a_traceback(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    write_inputs(tmp_path)
    assert cli.main(judge_args(tmp_path)) == ExitCode.OK
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps({"input": "a", "output": "b", "bineval": {"line": 1, "complete": True}}) + "\n")
    capsys.readouterr()
    assert cli.main(judge_args(tmp_path)) == ExitCode.INPUT
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "out.jsonl:1: missing field 'bineval.scorecard'" in err


def test_data_without_line_ends_is_refused_not_read_without_bound(tmp_path, monkeypatch, capsys):
    """``--data /dev/zero`` read forever (issue 32, item 13): a line past the limit is one located line."""
    from bineval_dspy.core import jsonio

    monkeypatch.setattr(jsonio, "MAX_LINE_BYTES", 1024)
    route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    write_inputs(tmp_path)
    (tmp_path / "rows.jsonl").write_bytes(b"\0" * 4096)
    assert cli.main(judge_args(tmp_path)) == ExitCode.INPUT
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "rows.jsonl:1: a line longer than" in err
    if Path("/dev/zero").exists():
        assert cli.main(judge_args(tmp_path, "--data", "/dev/zero")) == ExitCode.INPUT  # the real thing ends too


def test_with_a_cache_dir_matplotlib_keeps_its_cache_there_not_under_home(tmp_path, monkeypatch):
    """`tune --cache-dir D` drew its plots with matplotlib's cache under $HOME (issue 32, item 13)."""
    import importlib
    import os

    cli_main = importlib.import_module("bineval_dspy.cli.main")  # the module: the package exports its main()
    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    assert cli_main._plots_cache(str(tmp_path / "cache")) is True
    assert os.environ["MPLCONFIGDIR"] == str((tmp_path / "cache" / "matplotlib").resolve())
    assert cli_main._plots_cache(str(tmp_path / "other")) is False  # one already set (by the user, say) wins
    monkeypatch.delenv("MPLCONFIGDIR")
    assert cli_main._plots_cache(None) is False and "MPLCONFIGDIR" not in os.environ


# -- issue 46, fourth pass: remote paths ---------------------------------------------------------------------------
def test_a_best_of_n_sample_whose_call_failed_is_not_drawn_and_is_drawn_again_on_rerun(tmp_path, capsys):
    """Issue 46, item 5: a failed sample counted as drawn and failing (pass@1 0.000, exit 0, no line said so) and
    the row was done: a rerun after the server was fixed sent nothing."""
    suite = tmp_path / "suite.jsonl"
    row = {"key": 1, "prompt": "Write about the ocean.", "instruction_id_list": ["keywords:existence"], "kwargs": [{"keywords": ["ocean"]}]}
    suite.write_text(json.dumps(row) + "\n")
    sick = {"seed 0": True}

    def reply(body: dict):
        text = json.dumps(body)
        if "code_checked" in text:  # the TICK question writer
            return json.dumps({"questions": {"items": ["Is the response about the sea?", "Is the tone of the response calm?"]}})
        if "verdict" in text:
            return verdict("yes")
        if body.get("seed") == 0 and sick["seed 0"]:
            return (500, {"error": {"message": "sample 0 is down"}})
        return "The ocean is vast."

    argv = ["generate", "--suite", str(suite), "--best-of", "4", "--stop-at-pass", "--timeout", "1",
            "-o", str(tmp_path / "out.jsonl"), "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    with scripted_server(reply) as server:
        assert cli.main([*argv, *server.lm_args()]) == ExitCode.INCOMPLETE
        out, err = (" ".join(text.split()) for text in capsys.readouterr())
        assert "pass@1 1.000" in out and "1 failed sample(s) not counted" in out  # the first sample drawn passed
        assert "1 Best-of-N sample(s) failed in 1 row(s)" in err
        sick["seed 0"] = False
        sent = len(server.bodies)
        assert cli.main([*argv, *server.lm_args()]) == ExitCode.OK
        assert any(body.get("seed") == 0 for body in server.bodies[sent:])  # the failed sample drawn again
    (record,) = [obj for _, obj in read_jsonl(tmp_path / "out.jsonl")]
    assert [c.get("error") for c in record["selection"]["candidates"]] == [None]  # the first sample, now drawn, passed


@pytest.mark.parametrize("status", [400, 500])
def test_an_api_key_the_server_echoes_is_written_nowhere(tmp_path, monkeypatch, capsys, status):
    """Issue 46, item 6: "Incorrect API key provided: <key>" was copied into every unanswered verdict's explanation
    and the final error line."""
    key = "sk-test-0123456789abcdefSECRET"
    monkeypatch.setenv("BINEVAL_TEST_KEY", key)
    write_inputs(tmp_path, rows=[{"input": "a", "output": "b"}, {"input": "c", "output": "d"}])
    echo = {"error": {"message": f"Incorrect API key provided: {key}. Find your key at the dashboard.", "type": "invalid_request_error"}}
    with scripted_server(lambda body: (status, echo)) as server:
        code = cli.main(judge_args(tmp_path, *server.lm_args(), "--api-key-env", "BINEVAL_TEST_KEY", "--timeout", "1"))
    captured = capsys.readouterr()
    written = (tmp_path / "out.jsonl").read_text()
    assert code == ExitCode.LM_FAILURE and "Incorrect API key provided: [redacted]" in written
    assert key not in written and key not in captured.err and key not in captured.out


def test_a_tick_checklist_the_lm_never_wrote_fails_though_the_tasks_constraints_fill_it(tmp_path, capsys):
    """Issue 46: every TICK reply unparseable, yet the task's own constraints made a checklist and the run exited 0;
    now it fails as a checklist with no constraint does, nothing written, and a rerun asks again."""
    task = "Write a haiku in all lowercase letters, without any commas, in under 20 words."
    reply = Switchable(lambda body: "no checklist here")
    args = ["checklist", "--task", task, "--method", "tick", "-o", str(tmp_path / "c.json"), "--cache-dir", str(tmp_path / "cache")]
    with scripted_server(reply) as server:
        assert cli.main([*args, *server.lm_args()]) == ExitCode.LM_FAILURE
        assert "tick: the LM gave no usable questions" in capsys.readouterr().err and not (tmp_path / "c.json").exists()
        reply.reply = lambda body: json.dumps({"questions": {"items": ["Does the haiku describe a scene from nature?", "Does the haiku have three lines?"]}})
        assert cli.main([*args, *server.lm_args()]) == ExitCode.OK
    assert any(q.get("verifier") is None for q in json.loads((tmp_path / "c.json").read_text())["questions"])
