"""Issue 57, item 2 (the header): `generate --enforce` printed its enforcement summary and "enforced nothing" on the
terminal only; the run header (OUT.run.json, what CI and a later `show` read) and the report's generate view had
neither. Both carry them now."""

from __future__ import annotations

import json

from bineval_dspy import cli
from bineval_dspy.runs.header import read_header
from tests.conftest import route_cli_lm
from tests.programs.test_enforce_generate import write


def test_the_run_header_and_the_report_carry_the_enforcement_summary(tmp_path, capsys, monkeypatch):
    route_cli_lm(monkeypatch, lambda request: "a plain reply about rain").engine.supports_steering = True
    rows = [{"key": "a", "prompt": "Write a haiku about rain, all in lowercase letters."}, {"key": "b", "prompt": "Tell me about rain."}]
    suite, out = write(tmp_path / "s.jsonl", rows), tmp_path / "o.jsonl"
    assert cli.main(["generate", "--suite", str(suite), "--enforce", "extracted", "-o", str(out)]) == 0
    header = json.loads((tmp_path / "o.jsonl.run.json").read_text())
    assert header["enforcement"] == {
        "rows": 2, "steered": 1, "no_constraint": 1, "enforced": 1, "held": 1, "conflicts": 0, "unenforceable": 0, "invalid": 0, "nothing": False,
    }
    capsys.readouterr()
    assert cli.main(["show", str(out)]) == 0
    assert "enforcement: 1 of 2 row(s) steered, 1 with no constraint found" in " ".join("".join(capsys.readouterr()).split())
    assert cli.main(["report", str(out), "-o", str(tmp_path / "r.html")]) == 0
    assert "steered decoding: 1 of 2 row(s) steered" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_a_run_that_enforced_nothing_is_flagged_in_its_header_and_report(tmp_path, capsys, monkeypatch):
    route_cli_lm(monkeypatch, lambda request: "rain falls").engine.supports_steering = True
    suite, out = write(tmp_path / "s.jsonl", [{"key": 1, "prompt": "Tell me about rain."}]), tmp_path / "o.jsonl"
    assert cli.main(["generate", "--suite", str(suite), "--enforce", "extracted", "-o", str(out)]) == 0
    header = read_header(out)
    assert header is not None and header.enforcement is not None and header.enforcement.nothing and header.enforcement.no_constraint == 1
    assert json.loads((tmp_path / "o.jsonl.run.json").read_text())["enforcement"]["nothing"] is True
    capsys.readouterr()
    assert cli.main(["show", str(out)]) == 0
    assert "enforced nothing: every reply was decoded plainly; 0 of 1 row(s) steered" in " ".join("".join(capsys.readouterr()).split())
    assert cli.main(["report", str(out), "-o", str(tmp_path / "r.html")]) == 0
    assert "<strong>enforced nothing</strong>, every reply was decoded plainly" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_a_run_without_enforce_has_no_enforcement_in_its_header(tmp_path, monkeypatch):
    route_cli_lm(monkeypatch, lambda request: "rain falls")
    suite = write(tmp_path / "s.jsonl", [{"key": 1, "prompt": "Tell me about rain.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}])
    assert cli.main(["generate", "--suite", str(suite), "-o", str(tmp_path / "o.jsonl")]) == 0
    assert "enforcement" not in json.loads((tmp_path / "o.jsonl.run.json").read_text())


def test_the_library_run_records_it_in_the_header_too(tmp_path):
    import dspy

    from bineval_dspy.programs.generation import run_generation
    from bineval_dspy.programs.generator import Generator
    from bineval_dspy.suites.rows import SuiteRow
    from tests.programs.test_enforce_generate import steerable

    dspy.configure(lm=steerable(lambda request: "rain falls"))
    rows = [SuiteRow(key="a", prompt="Write about rain, all in lowercase letters.", instruction_id_list=["change_case:english_lowercase"], kwargs=[{}])]
    run_generation(rows, Generator(enforce="extracted"), tmp_path / "o.jsonl")
    header = read_header(tmp_path / "o.jsonl")
    assert header is not None and header.enforcement is not None and (header.enforcement.steered, header.enforcement.nothing) == (1, False)
