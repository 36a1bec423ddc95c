"""`bineval optimize CONFIG.toml` and `bineval show RUN_DIR` from the command line, with a scripted LM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.optimize import lessons
from tests.conftest import route_cli_lm
from tests.optimize.test_optimizer import World, bag_of_words

SUITE_ROW = {"instruction_id_list": ["detectable_format:number_bullet_lists"], "kwargs": [{"num_bullets": 2}]}


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.jsonl"
    path.write_text("\n".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", **SUITE_ROW}) for i in range(6)) + "\n")
    return path


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setattr(lessons, "minilm_embedder", lambda: bag_of_words)
    return route_cli_lm(monkeypatch, World())


def write_config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(body)
    return path


def test_optimize_then_show(tmp_path, suite, scripted, capsys):
    config = write_config(tmp_path, f"""
mode = "self"
run_dir = "runs/demo"
[data]
suite = "{suite.name}"
train = 3
val = 2
test = 1
[program]
instructions = "Answer the request."
[optimizer]
max_iterations = 2
""")
    assert cli.main(["optimize", str(config)]) == 0
    run = tmp_path / "runs" / "demo"
    audit = json.loads((run / "audit.json").read_text())
    assert audit["best"]["instructions"]["generate"].endswith("Use bullet points.")
    capsys.readouterr()
    assert cli.main(["show", str(run)]) == 0
    err = capsys.readouterr().err
    assert "accepted" in err and "+Use bullet points." in err and "iteration 1: held-out gain +1.000" in err


@pytest.mark.parametrize(
    "body, message",
    [
        ('mode = "self"\nrun_dir = "r"\n[data]\ntrain = 2\n', "field 'data.suite' is required"),
        ('mode = "sideways"\nrun_dir = "r"\n[data]\n', "field 'mode'"),
        ('mode = "self"\nrun_dir = "r"\n[data]\nsuite = "suite.jsonl"\n[optimizer]\nmax_iterations = 0\n', "field 'optimizer.max_iterations'"),
        ('mode = "self"\nrun_dir = "r"\n[data]\nsuite = "suite.jsonl"\nbogus = 1\n', "field 'data.bogus'"),
        ('mode = "self"\nrun_dir = "r"\n[data]\nsuite = "suite.jsonl"\ntrain = 5\nval = 5\n', "fewer than train + val + test"),
        ("mode = = 1", "malformed TOML"),
    ],
)
def test_bad_config_is_a_one_line_error(tmp_path, suite, scripted, capsys, body, message):
    config = write_config(tmp_path, body)
    assert cli.main(["optimize", str(config)]) == 2
    err = capsys.readouterr().err
    assert message in err and "run.toml" in err and len(err.strip().splitlines()) == 1


def test_show_needs_a_run_directory(tmp_path, capsys):
    assert cli.main(["show", str(tmp_path)]) == 2
    assert "no audit.json" in capsys.readouterr().err
