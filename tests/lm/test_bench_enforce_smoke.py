"""experiments/bench_enforce.py at its smallest size (one steered prompt), so the benchmark cannot break unseen: both
arms run on the embedded model and it ends with its ratios line."""

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


def test_bench_enforce_refuses_a_bad_size():
    done = subprocess.run([sys.executable, str(SCRIPT), "--prompts", "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--prompts must be >= 1" in done.stderr
