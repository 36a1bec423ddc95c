"""program.json: what the optimizer changed, written once and read back by generate and judge."""

from __future__ import annotations

import json

import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import InputError
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.programs.generator import Generator
from bineval_dspy.programs.state import ProgramFile, load_program, set_state
from bineval_dspy.testing.scripted import Reply
from tests.conftest import route_cli_lm, verdict_json


def test_a_generator_round_trips_with_its_demos_and_token_limit(tmp_path):
    program = Generator("Answer briefly.", max_tokens=77)
    set_state(program, {"generate": "Answer briefly. Use bullets."}, {"generate": [{"prompt": "p", "response": "* r"}]}, {})
    ProgramFile.of(program).save(tmp_path / "program.json")
    rebuilt = load_program(tmp_path).build()  # a run directory stands for its program.json
    assert isinstance(rebuilt, Generator) and rebuilt.max_tokens == 77
    assert rebuilt.generate.signature.instructions == "Answer briefly. Use bullets."
    assert [dict(d) for d in rebuilt.generate.demos] == [{"prompt": "p", "response": "* r"}]


def test_a_judge_round_trips_with_thresholds_and_options(tmp_path):
    judge = BinaryJudge(probability=True, explanations="none", thresholds={"Content": 0.75})
    ProgramFile.of(judge).save(tmp_path / "program.json")
    rebuilt = load_program(tmp_path / "program.json", kind="judge").build()
    assert isinstance(rebuilt, BinaryJudge)
    assert (rebuilt.thresholds, rebuilt.probability, rebuilt.explanations) == ({"Content": 0.75}, True, "none")
    with pytest.raises(InputError, match="field 'kind': a judge program, this command runs a generator"):
        load_program(tmp_path, kind="generator")


def test_judge_with_a_program_decides_by_its_thresholds(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda request: Reply(verdict_json("yes"), p_yes=0.6))
    ProgramFile.of(BinaryJudge(probability=True, thresholds={"Content": 0.75})).save(tmp_path / "program.json")
    checklist = {"task": "t", "dimensions": ["Content"], "questions": [{"id": "q1", "text": "Is it right?", "dimension": "Content"}]}
    (tmp_path / "checklist.json").write_text(json.dumps(checklist))
    (tmp_path / "rows.jsonl").write_text(json.dumps({"input": "i", "output": "o"}) + "\n")
    argv = ["judge", "--checklist", str(tmp_path / "checklist.json"), "--data", str(tmp_path / "rows.jsonl"), "-o", str(tmp_path / "out.jsonl")]
    assert cli.main([*argv, "--program", str(tmp_path / "program.json")]) == 0
    card = json.loads((tmp_path / "out.jsonl").read_text())["bineval"]["scorecard"]
    assert card["verdicts"][0]["answer"] == "no"  # P(yes) 0.6 is under the fitted 0.75: the program's decision
    assert card["judge"]["thresholds"] == {"Content": 0.75}
    capsys.readouterr()
    assert cli.main([*argv, "-o", str(tmp_path / "other.jsonl"), "--program", str(tmp_path), "--cot"]) == 2
    assert "the program sets the judge's options; drop --cot" in capsys.readouterr().err
