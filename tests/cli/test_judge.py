"""`bineval judge` and `bineval checklist`: bad input gives one-line errors; runs resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.schema import Checklist, Question
from tests.conftest import route_cli_lm, verdict_json


@pytest.fixture
def checklist_file(tmp_path: Path) -> Path:
    checklist = Checklist(task="t", dimensions=["d"], questions=[Question(text="Is it short?", dimension="d"), Question(text="Is it kind?", dimension="d")])
    path = tmp_path / "checklist.json"
    path.write_text(checklist.model_dump_json())
    return path


@pytest.fixture
def lm(monkeypatch):
    """Route the CLI's LM set-up to a scripted LM that says yes to everything."""
    return route_cli_lm(monkeypatch, lambda r: verdict_json("yes"))


def run(args: list[str], capsys) -> tuple[int, str]:
    code = cli.main(args)
    return code, capsys.readouterr().err


def write_rows(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_judge_writes_scorecards_and_resumes(tmp_path, checklist_file, lm, capsys):
    data = write_rows(tmp_path / "rows.jsonl", [json.dumps({"input": "a", "output": "b", "id": 7}), "", json.dumps({"input": "c", "output": "d"})])
    out = tmp_path / "out.jsonl"
    code, err = run(["judge", "--checklist", str(checklist_file), "--data", str(data), "-o", str(out)], capsys)
    assert code == 0, err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["bineval"]["line"] for r in rows] == [1, 3]
    assert rows[0]["id"] == 7 and rows[0]["input"] == "a"  # the user's fields pass through, ours are namespaced
    assert rows[0]["bineval"]["scorecard"]["overall"] == 1.0
    assert rows[0]["bineval"]["scorecard"]["verdicts"][0]["question"] == "Is it short?"
    assert rows[0]["bineval"]["scorecard"]["judge"]["model"] == "custom/scripted"
    assert rows[0]["bineval"]["usage"]["lm_calls"] == 2
    assert len(lm.engine.requests) == 4
    # a second run finds every row done and makes no LM call
    code, err = run(["judge", "--checklist", str(checklist_file), "--data", str(data), "-o", str(out)], capsys)
    assert code == 0 and "resuming: 2 complete row(s)" in err
    assert len(lm.engine.requests) == 4


def test_judge_resumes_a_partial_output(tmp_path, checklist_file, lm, capsys):
    data = write_rows(tmp_path / "rows.jsonl", [json.dumps({"input": "a", "output": "b"}), json.dumps({"input": "c", "output": "d"})])
    out = tmp_path / "out.jsonl"
    args = ["judge", "--checklist", str(checklist_file), "--data", str(data), "-o", str(out)]
    assert run(args, capsys)[0] == 0
    out.write_text(out.read_text().splitlines()[0] + "\n")  # as if killed after the first row
    code, err = run(args, capsys)
    assert code == 0, err
    assert len(lm.engine.requests) == 4 + 2  # only row 2's two questions again
    assert len(out.read_text().splitlines()) == 2


@pytest.mark.parametrize(
    "lines, message",
    [
        (['{"input": "a"}'], "rows.jsonl:1: missing field 'output'"),
        (['{"input": "a", "output": "b"}', '{"input": "a", "output": '], "rows.jsonl:2: malformed JSON"),
        (['["a", "b"]'], "rows.jsonl:1: expected a JSON object"),
        (['{"input": "a", "output": 3}'], "rows.jsonl:1: field 'output' must be a string"),
    ],
)
def test_judge_bad_rows_are_one_line_errors(tmp_path, checklist_file, lm, capsys, lines, message):
    data = write_rows(tmp_path / "rows.jsonl", lines)
    code, err = run(["judge", "--checklist", str(checklist_file), "--data", str(data), "-o", str(tmp_path / "o.jsonl")], capsys)
    assert code == 2
    assert message in err
    assert "Traceback" not in err
    assert len(lm.engine.requests) == 0  # nothing was judged before the input was checked


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"task": "t", "dimensions": [], "questions": []}', "at least one question"),
        ("{not json", "malformed JSON"),
        ('{"task": "t", "dimensions": [], "questions": [{"dimension": "d"}]}', "field 'questions.0.text'"),
    ],
)
def test_judge_bad_checklist(tmp_path, lm, capsys, content, message):
    checklist = tmp_path / "c.json"
    checklist.write_text(content)
    data = write_rows(tmp_path / "rows.jsonl", ['{"input": "a", "output": "b"}'])
    code, err = run(["judge", "--checklist", str(checklist), "--data", str(data)], capsys)
    assert code == 2 and message in err and "c.json" in err


def test_missing_files_and_empty_task(tmp_path, lm, capsys):
    code, err = run(["judge", "--checklist", str(tmp_path / "nope.json"), "--data", "x"], capsys)
    assert code == 2 and "nope.json: cannot read" in err
    code, err = run(["checklist", "--task", "  ", "-o", str(tmp_path / "c.json")], capsys)
    assert code == 2 and "task description is empty" in err
    code, err = run(["checklist", "--task", f"@{tmp_path / 'missing.txt'}"], capsys)
    assert code == 2 and "missing.txt: cannot read" in err


def test_unknown_lm_spec_is_a_clear_error(capsys):
    from bineval_dspy.core.errors import InputError
    from bineval_dspy.lm.specs import make_lm

    with pytest.raises(InputError, match="LiteLLM 'provider/model'"):
        make_lm("gpt4")
    assert make_lm("openai/gpt-4o-mini").model == "openai/gpt-4o-mini"


def test_an_endless_checklist_is_one_line_not_a_memory_error(tmp_path, lm, capsys):
    """Issue 46: ``--checklist /dev/zero`` read without bound until MemoryError; now the read stops at its cap."""
    data = write_rows(tmp_path / "rows.jsonl", ['{"input": "a", "output": "b"}'])
    code, err = run(["judge", "--checklist", "/dev/zero", "--data", str(data)], capsys)
    assert code == 2 and "/dev/zero: larger than 256 MiB" in err and len(err.strip().splitlines()) == 1

def test_a_missing_file_reads_no_such_file_not_malformed_json(tmp_path, lm, capsys):
    """Issue 47: a checklist, a program or a run's splits.json that is not there is said so."""
    from bineval_dspy.core.errors import InputError
    from bineval_dspy.programs.state import Splits, load_program

    data = write_rows(tmp_path / "rows.jsonl", ['{"input": "a", "output": "b"}'])
    code, err = run(["judge", "--checklist", str(tmp_path / "nope.json"), "--data", str(data)], capsys)
    assert code == 2 and "nope.json: cannot read: no such file" in err and "malformed" not in err
    for read in (lambda: load_program(tmp_path / "program.json"), lambda: Splits.load(tmp_path)):
        with pytest.raises(InputError, match="no such file") as missing:
            read()
        assert "malformed" not in str(missing.value)


def test_judging_a_suite_hints_at_generate_or_the_fields(tmp_path, checklist_file, lm, capsys):
    """Issue 47: `judge --data SUITE` (a 'prompt', no output) says what to do instead of 'missing field input'."""
    suite = write_rows(tmp_path / "suite.jsonl", [json.dumps({"key": 1, "prompt": "Say hi.", "instruction_id_list": [], "kwargs": []})])
    code, err = run(["judge", "--checklist", str(checklist_file), "--data", str(suite), "-o", str(tmp_path / "o.jsonl")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "suite.jsonl:1:" in err and "bineval generate" in err and "--input-field prompt" in err
