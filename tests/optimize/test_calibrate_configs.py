"""The InFoBench calibrate configs under experiments/ at a tiny size on the embedded models: each trains, tests and
saves a program from the first few instructions of each file its own example script writes (SummEval's calibrate config runs
in tests/meta/test_probe_configs.py). The backbones config reads both embedded models and records each one's figure."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bineval_dspy import cli
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.embedded
EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
CONFIGS = sorted(path for path in EXPERIMENTS.glob("calibrate_*.toml") if "[data]" in path.read_text())


@pytest.mark.parametrize("config", CONFIGS, ids=lambda path: path.stem)
def test_each_infobench_calibrate_config_runs_at_a_tiny_size(config, tmp_path, monkeypatch):
    if not (SHARED_DATA / "infobench" / "infobench.jsonl").is_file():
        pytest.skip("the shared InFoBench data is not here")
    monkeypatch.setenv("BINEVAL_CACHE_DIR", str(tmp_path / "models"))  # Gemma's joined file there, not under $HOME
    examples = tmp_path / "examples"
    script = [sys.executable, str(EXPERIMENTS / "infobench_examples.py"), "--data", str(SHARED_DATA / "infobench"), "--out", str(examples)]
    subprocess.run([*script, "--train", "2", "--val", "2", "--test", "3"], check=True, capture_output=True)
    text = re.sub(r'"\.\./runs/infobench_examples/', f'"{examples}/', config.read_text())
    text = text.replace('"results/', f'"{EXPERIMENTS}/results/')  # baselines: heads kept under experiments/results
    text = re.sub(r"^run_dir = .*$", f'run_dir = "{tmp_path / "run"}"\nlimit = 3', text, flags=re.M)
    text = re.sub(r"^folds = \d+$", "folds = 2\nstrengths = [0.01]\ncombine = false", text, flags=re.M)
    text = re.sub(r"^sizes = \[.*\]$", "sizes = []", text, flags=re.M)
    tiny = tmp_path / config.name
    tiny.write_text(text if "[curve]" in text else text + "\n[curve]\nsizes = []\n")

    assert cli.main(["calibrate", str(tiny), "--cache-dir", str(tmp_path / "cache")]) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["test_rows"] > 0 and (tmp_path / "run" / "program.json").is_file()
    backbones = re.search(r"^backbones = \[(.*)\]$", config.read_text(), flags=re.M)
    assert len(results["backbones"]) == (len(backbones.group(1).split(",")) if backbones else 1)
    with sqlite3.connect(tmp_path / "cache" / "hidden.sqlite") as db:  # every backbone's states kept for the next run
        widths = {width for (width,) in db.execute("SELECT DISTINCT width FROM pooled")}
    assert len(widths) == len(results["backbones"])
    baselines = re.search(r"^baselines = \[(.*)\]$", config.read_text(), flags=re.M)
    assert len(results["baselines"]) == (len(baselines.group(1).split(",")) if baselines else 0)  # each scored beside the new head
