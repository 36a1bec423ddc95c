"""The gates on hostile or broken input (issue 55, fifth pass's own probes): a score edited to NaN, infinity or a
number outside [0, 1] is refused where a card is read (a NaN was "no difference" and passed `compare
--fail-on-regression`); the regression gate refuses --resamples 0 (no interval, so it could never fail); and a
judge run whose every LM call failed exits 3 (the LM failed) with `--fail-under`, not 6 (a quality verdict on no
verdicts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import ExitCode
from tests.cli.test_gates import files
from tests.conftest import question_of, route_cli_lm, verdict_json


def judged(tmp_path: Path, monkeypatch, name: str, script) -> Path:
    route_cli_lm(monkeypatch, script)
    args = files(tmp_path)
    out = tmp_path / f"{name}.jsonl"
    cli.main([*args[:-1], str(out)])
    return out


@pytest.mark.parametrize("score", [float("nan"), float("inf"), 7.5, -3.0])
def test_compare_refuses_an_edited_score(tmp_path, monkeypatch, capsys, score):
    base = judged(tmp_path, monkeypatch, "base", lambda r: verdict_json("yes"))
    new = judged(tmp_path, monkeypatch, "new", lambda r: verdict_json("yes" if "short" in question_of(r) else "no"))
    records = [json.loads(line) for line in new.read_text().splitlines()]
    records[0]["bineval"]["scorecard"]["overall"] = score
    new.write_text("".join(json.dumps(record) + "\n" for record in records))
    capsys.readouterr()
    assert cli.main(["compare", str(base), str(new), "--fail-on-regression"]) == ExitCode.INPUT  # before: 0 for NaN
    assert "new.jsonl:1: field 'bineval.scorecard.overall'" in capsys.readouterr().err


def test_the_regression_gate_refuses_no_resamples(tmp_path, monkeypatch, capsys):
    base = judged(tmp_path, monkeypatch, "base", lambda r: verdict_json("yes"))
    new = judged(tmp_path, monkeypatch, "new", lambda r: verdict_json("no"))
    assert cli.main(["compare", str(base), str(new), "--fail-on-regression"]) == ExitCode.REGRESSION
    capsys.readouterr()
    # before: 0, every score lower and the gate passed
    assert cli.main(["compare", str(base), str(new), "--fail-on-regression", "--resamples", "0"]) == ExitCode.INPUT
    assert "--resamples 0 draws none" in capsys.readouterr().err


def test_a_dead_lm_is_no_quality_verdict(tmp_path, monkeypatch, capsys):
    def down(request):
        raise ConnectionError("connection refused")

    route_cli_lm(monkeypatch, down)
    assert cli.main([*files(tmp_path), "--fail-under", "0.5"]) == ExitCode.LM_FAILURE  # before: 6, "n/a is under 0.5"
    assert "every LM verdict (15) unanswered" in capsys.readouterr().err
