"""An experiment's arms as separate jobs on one run directory (issue 35, item 3): `--arm NAME` optimizes one arm
alone, a final run scores every arm finding it done; `--ray` runs each arm's optimization as a Ray task."""

from __future__ import annotations

import json
from pathlib import Path

from bineval_dspy import cli
from bineval_dspy.testing.server import FixedDelayServer, serving
from tests.conftest import route_cli_lm
from tests.experiment.test_experiment import JudgingWorld, fruit_suite


def experiment(tmp_path: Path) -> Path:
    suite = fruit_suite(tmp_path, 6)
    config = tmp_path / "exp.toml"
    config.write_text(
        f'mode = "self"\nrun_dir = "runs/e"\n[data]\nsuite = "{suite.name}"\ntrain = 2\nval = 2\ntest = 2\n[program]\n'
        'instructions = "Answer."\n[optimizer]\nmax_iterations = 1\n[[arms]]\nname = "start"\nkind = "start"\n'
        '[[arms]]\nname = "guard"\nkind = "bineval"\n'
    )
    return config


def test_one_arm_alone_then_every_arm_scored(tmp_path, monkeypatch, words_embedder, capsys):
    lm = route_cli_lm(monkeypatch, JudgingWorld())
    config = experiment(tmp_path)
    assert cli.main(["experiment", str(config), "--arm", "guard"]) == 0
    run = tmp_path / "runs" / "e"
    assert (run / "arms" / "guard" / "audit.json").is_file() and not (run / "results.json").exists()
    asked = len(lm.engine.requests)
    assert cli.main(["experiment", str(config)]) == 0
    results = json.loads((run / "results.json").read_text())
    assert [arm["name"] for arm in results["arms"]] == ["start", "guard"]
    audit = json.loads((run / "arms" / "guard" / "audit.json").read_text())
    assert audit["stopped"] and len(lm.engine.requests) > asked  # the test split was scored; the arm was not redone
    assert cli.main(["experiment", str(config), "--arm", "nope"]) == 2
    assert "no arm named 'nope' (arms: start, guard)" in capsys.readouterr().err


def test_arms_as_ray_tasks(tmp_path, ray_cluster):
    config = experiment(tmp_path)
    with serving(FixedDelayServer(0.0, slots=64)) as server:
        code = cli.main(["experiment", str(config), "--lm", "openai/m", "--api-base", server.url, "--ray", "local", "--ray-workers", "2"])
    run = tmp_path / "runs" / "e"
    assert code in (0, 1)  # 1: the fixed server's replies leave test verdicts unanswered, said, not hidden
    assert (run / "arms" / "guard" / "audit.json").is_file()
    assert [arm["name"] for arm in json.loads((run / "results.json").read_text())["arms"]] == ["start", "guard"]
