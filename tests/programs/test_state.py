"""program.json: what the optimizer changed, written once and read back by generate and judge."""

from __future__ import annotations

import json
import os

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
    assert (rebuilt.thresholds, rebuilt.kind.probability, rebuilt.kind.explanations) == ({"Content": 0.75}, True, "none")
    with pytest.raises(InputError, match="field 'kind': a judge program, this command runs a generator"):
        load_program(tmp_path, kind="generator")


@pytest.mark.parametrize("options", [{"verdict_format": "prefilled", "explanations": "none"}, {"scoring": "batch"}])
def test_a_judge_keeps_its_verdict_format_and_scoring_through_its_program_file(tmp_path, options):
    """A prefilled or batch-scoring judge saved and reloaded is the same judge, not today's defaults."""
    ProgramFile.of(BinaryJudge(**options)).save(tmp_path / "program.json")
    rebuilt = load_program(tmp_path / "program.json", kind="judge").build()
    assert all(getattr(rebuilt.kind, name) == value for name, value in options.items())


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


def _weights_program(tmp_path, **change):
    from bineval_dspy.core.fingerprint import sha256_of
    from bineval_dspy.lm.specs import embedded_model_path

    adapter = tmp_path / "adapter.gguf"
    adapter.write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(16))
    weights = {"base": "smollm2", "base_sha256": sha256_of(embedded_model_path("smollm2")), "adapter": adapter.name, "adapter_sha256": sha256_of(adapter), "method": "sft"}
    (tmp_path / "program.json").write_text(json.dumps({"kind": "generator", "instructions": {"generate": "Answer."}, "weights": {**weights, **change}}))
    return tmp_path / "program.json"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"adapter": "missing.gguf"}, "field 'weights.adapter': .*missing.gguf not found"),
        ({"base": "/nonexistent/base.gguf"}, "field 'weights.base': /nonexistent/base.gguf not found"),
        ({"base_sha256": "0" * 64}, "field 'weights.base': .* is not the file this program was trained with"),
        ({"adapter": "UP_TO_ETC_HOSTNAME"}, "field 'weights.adapter': .* is not the file this program was trained with"),
        ({"method": "ppo"}, "field 'weights.method': Input should be 'sft' or 'dpo'"),
        ({"extra": 1}, "field 'weights.extra': Extra inputs are not permitted"),
    ],
)
def test_a_program_whose_weights_are_not_the_recorded_files_is_one_located_line(tmp_path, change, message):
    """Checked when the program is read, before any model loads (issue 32's own pass)."""
    if change.get("adapter") == "UP_TO_ETC_HOSTNAME":  # a path that climbs out of the program's folder, however deep it is
        change = {"adapter": os.path.relpath("/etc/hostname", tmp_path)}
    with pytest.raises(InputError, match=rf"program.json: {message}"):
        load_program(_weights_program(tmp_path, **change))
