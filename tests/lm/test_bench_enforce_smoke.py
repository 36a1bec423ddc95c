"""experiments/bench_enforce.py at its smallest size (one steered prompt), so the benchmark cannot break unseen: both
arms run on the embedded model, every steered step is timed in its parts (masks, checks, automata) and it ends with
its ratios line (figures are reported, never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA

SUITE = SHARED_DATA / "ifeval" / "ifeval_shared.jsonl"
pytestmark = [pytest.mark.embedded, pytest.mark.skipif(not SUITE.is_file(), reason=f"no {SUITE} (set BINEVAL_SHARED_DATA)")]

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "bench_enforce.py"


def test_bench_enforce_runs_at_its_smallest_size(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--suite", str(SUITE), "--prompts", "1", "--max-tokens", "32", "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1].startswith("ratios: enforced/plain per prompt=")
    result = json.loads(out.read_text())
    assert result["prompts"] == 1 and result["tokens"]["plain"] > 0 and result["tokens"]["enforced"] > 0
    steps = result["steering_us_per_step"]  # every steered step timed in each part, beside the model's own step
    assert steps["masks"]["steps"] == steps["checks"]["steps"] == steps["automata"]["steps"] > 0
    assert steps["steering"]["p50"] > 0 and result["model_us_per_step"]["enforced"]["p50"] > 0
    assert result["vocabulary"] == 49152 and result["ratio_at_equal_length"] > 0


def test_bench_enforce_refuses_a_bad_size():
    done = subprocess.run([sys.executable, str(SCRIPT), "--prompts", "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--prompts must be >= 1" in done.stderr
