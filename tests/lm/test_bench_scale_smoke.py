"""experiments/bench_scale.py at its smallest size, so the benchmark cannot break unseen: both arms run against
their servers and it ends with its ratios line (no timing is asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "bench_scale.py"


def test_bench_scale_runs_at_its_smallest_size(tmp_path):
    out = tmp_path / "scale.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--rows", "6", "--delay", "0.01", "--repeats", "1", "--ray-workers", "", "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1].startswith("ratios: replicas3/replicas1=")
    result = json.loads(out.read_text())
    assert result["calls"] == 12 and set(result["rates"]) == {"replicas1", "replicas3"}


def test_bench_scale_ray_arms_run_at_their_smallest_size(tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "scale.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--rows", "6", "--delay", "0.01", "--repeats", "1", "--ray-workers", "1,2", "--out", str(out)],
        capture_output=True, text=True, timeout=600, env={**os.environ, "HOME": str(tmp_path)},  # Ray keeps a token in ~/.ray
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ray2/ray1=" in done.stdout.strip().splitlines()[-1]
    assert set(json.loads(out.read_text())["rates"]) == {"replicas1", "replicas3", "ray1", "ray2"}
