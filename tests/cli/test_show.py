"""`bineval show` on every kind of run `bineval report` reads: what each shows, within 80 columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.console import console
from tests.report import builders

WIDTH = 80


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return builders.every_kind(tmp_path_factory.mktemp("runs"))


@pytest.fixture
def narrow(monkeypatch):
    """The console 80 columns wide, as a plain terminal."""
    monkeypatch.setattr(console, "width", WIDTH)


def show(capsys, *paths) -> str:
    assert cli.main(["show", *map(str, paths)]) == 0
    out = capsys.readouterr().out  # results go to stdout
    too_long = [line for line in out.splitlines() if len(line) > WIDTH]
    assert not too_long, "\n".join(too_long)
    return out


def test_every_kind_fits_80_columns(runs, narrow, capsys):
    judged, config, optimized, analysis, tune = runs
    capsys.readouterr()
    out = show(capsys, judged)
    assert "== judge output:" in out and "3 output(s), 9 verdict(s), 0 unanswered" in out
    assert "brevity" in out and "0.67" in out and "0.667" not in out and "Is it polite?" in out  # scores to 2 decimals (issue 47)
    out = show(capsys, config)
    assert "== meta-evaluation:" in out and "9 output(s) of 3 document(s) from summeval" in out
    assert "human" in out and "rouge-l" in out and "at top" in out
    out = show(capsys, config.parent / "runs" / "meta")
    assert "give the run's config" in out
    out = show(capsys, optimized)
    assert "== optimizer run:" in out and "accepted" in out and "+Use bullet points." in out
    out = show(capsys, analysis)
    assert "== analysis:" in out and "pruning at |phi| > 0.8" in out and "weighted" in out
    out = show(capsys, tune)
    assert "== tune study:" in out and "Pareto front (3 trials)" in out


def test_a_calibration_and_fine_tuning_samples_fit_80_columns(tmp_path, narrow, capsys):
    out = show(capsys, Path(__file__).resolve().parents[2] / "experiments" / "results" / "probe_summeval")
    assert "== calibration:" in out and "balanced accuracy" in out and "no test split" in out
    out = show(capsys, builders.finetune_samples(tmp_path, failed="Does the response list exactly two fruits, one per line?"))
    assert "== fine-tuning samples:" in out and "fewest passing first (2 of 2)" in out and "questions failed most" in out


def test_text_from_data_is_never_console_markup(tmp_path, monkeypatch, narrow, capsys):
    judged = builders.judge_run(tmp_path, monkeypatch, third="Is it [bold]warm[/bold] or [/]?")
    capsys.readouterr()
    out = show(capsys, judged)
    assert "[bold]warm[/bold] or [/]?" in out
