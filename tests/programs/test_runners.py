"""The runners behind `bineval judge` and `bineval generate` have Python entries (issue 34): a typed config, a run
and its plan; the CLI only parses and prints, and both give the same file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import Checklist, JudgeOptions, Question
from bineval_dspy.programs.judge_file import JudgeFile, plan_file, run_file
from bineval_dspy.programs.suite_file import GenerateSuite, plan_suite, run_suite
from tests.conftest import route_cli_lm, verdict_json


def files(tmp_path: Path) -> tuple[Path, Path]:
    checklist = Checklist(task="t", dimensions=["d"], questions=[Question(text="Is it short?", dimension="d"), Question(text="Is it kind?", dimension="d")])
    (tmp_path / "checklist.json").write_text(checklist.model_dump_json())
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps({"input": f"q{i}", "output": f"a{i}"}) + "\n" for i in range(3)))
    return tmp_path / "checklist.json", tmp_path / "rows.jsonl"


def test_run_file_from_python_writes_what_the_command_writes(tmp_path, monkeypatch):
    route_cli_lm(monkeypatch, lambda r: verdict_json("no" if "kind" in str(r) else "yes"))
    checklist, data = files(tmp_path)
    run = run_file(JudgeFile(checklist=checklist, data=data, output=tmp_path / "py.jsonl", judge=JudgeOptions(explanations="none")))
    assert (run.written, run.todo, run.stopped) == (3, 3, None)
    assert run.summary.rows == 3 and run.summary.mean("overall") == 0.5
    assert cli.main(["judge", "--checklist", str(checklist), "--data", str(data), "-o", str(tmp_path / "cli.jsonl"), "--explanations", "none"]) == 0
    strip = lambda path: [{k: v for k, v in json.loads(line)["bineval"].items() if k != "usage"} for line in path.read_text().splitlines()]  # noqa: E731
    assert strip(tmp_path / "py.jsonl") == strip(tmp_path / "cli.jsonl")
    again = run_file(JudgeFile(checklist=checklist, data=data, output=tmp_path / "py.jsonl", judge=JudgeOptions(explanations="none")))
    assert (again.written, again.todo) == (0, 0)  # resumed: nothing left


def test_a_program_with_judge_options_beside_it_is_refused_naming_the_option(tmp_path, monkeypatch, capsys):
    checklist, data = files(tmp_path)
    program = tmp_path / "program.json"
    program.write_text(json.dumps({"kind": "judge", "instructions": {"answer": "Answer."}, "judge": {}}))
    config = JudgeFile(checklist=checklist, data=data, output=tmp_path / "o.jsonl", program=program, judge=JudgeOptions(chain_of_thought=True))
    with pytest.raises(InputError, match=r"drop `judge.chain_of_thought`"):
        plan_file(config)
    assert cli.main(["judge", "--checklist", str(checklist), "--data", str(data), "--program", str(program), "--cot", "--dry-run"]) == 2
    assert "drop --cot (or edit" in capsys.readouterr().err  # the library names the option, the command its flag


def test_plans_from_python_count_the_calls_a_run_makes(tmp_path):
    checklist, data = files(tmp_path)
    plan, batches = plan_file(JudgeFile(checklist=checklist, data=data, output=tmp_path / "o.jsonl", judge=JudgeOptions(samples=3)))
    assert (plan.calls, batches) == (3 * 2 * 3, None)  # rows x questions x samples
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"key": i, "prompt": f"Write {i}.", "instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]}) + "\n" for i in range(4)))
    assert plan_suite(GenerateSuite(suite=suite, limit=3)).calls == 3
    with pytest.raises(InputError, match="`stop_at_pass` stops Best-of-N early"):
        run_suite(GenerateSuite(suite=suite, stop_at_pass=True))
