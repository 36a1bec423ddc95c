"""experiments/bench_sampling.py at its smallest size (one prompt, two samples, one thread count), so the benchmark
cannot break unseen: every arm runs, the samples drawn together equal those drawn one by one, and it ends with its
ratios line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA

SUITE = SHARED_DATA / "ifeval" / "ifeval_shared.jsonl"
pytestmark = [pytest.mark.embedded, pytest.mark.skipif(not SUITE.is_file(), reason=f"no {SUITE} (set BINEVAL_SHARED_DATA)")]

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "bench_sampling.py"


def test_bench_sampling_runs_at_its_smallest_size(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--suite", str(SUITE), "--prompts", "1", "--samples", "2", "--threads", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1].startswith("ratios: together/sequential@1=")
    result = json.loads(out.read_text())
    assert result["same_samples"] == {"1": 2} and result["generated_tokens"] > 0
    assert set(result["seconds"]) == {"greedy@1", "sequential@1", "together@1", "ceiling_one@1", "ceiling_together@1"}


def test_bench_sampling_refuses_bad_thread_counts():
    done = subprocess.run([sys.executable, str(SCRIPT), "--threads", "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "thread counts are positive integers" in done.stderr
