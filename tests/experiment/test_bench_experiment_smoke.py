"""experiments/bench_experiment.py at its smallest size (two prompts, 8 tokens), so the side-by-side of an experiment
arm and generate + verify cannot break unseen: both sides run as processes on the embedded model, their outputs are
equal row by row, and it ends with its ratio line (the ratio is reported, never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA

SUITE = SHARED_DATA / "ifeval" / "ifeval_shared.jsonl"
SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "bench_experiment.py"


@pytest.mark.embedded
@pytest.mark.skipif(not SUITE.is_file(), reason=f"no {SUITE} (set BINEVAL_SHARED_DATA)")
def test_bench_experiment_runs_both_sides_with_equal_outputs(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--suite", str(SUITE), "--prompts", "2", "--max-tokens", "8", "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1].startswith("ratio: experiment/(generate+verify)=")
    result = json.loads(out.read_text())
    assert result["outputs"] == 2 and result["outputs_equal"] == 2
    assert all(result["seconds"][side] > 0 for side in ("generate", "verify", "experiment", "experiment_test_pass"))


def test_bench_experiment_refuses_a_bad_size():
    done = subprocess.run([sys.executable, str(SCRIPT), "--prompts", "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--prompts and --repeats must be >= 1" in done.stderr
