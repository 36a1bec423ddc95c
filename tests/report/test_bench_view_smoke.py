"""experiments/bench_view.py at its smallest size, so the benchmark cannot break unseen: both arms show their first
rows in Chromium and it ends with its ratios line (no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report import browser

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "bench_view.py"


@pytest.mark.skipif(not browser.available(), reason="needs chromium and chromedriver (apt-get install chromium chromium-driver)")
def test_bench_view_runs_at_its_smallest_size(tmp_path):
    out = tmp_path / "view.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--rows", "120", "--repeats", "1", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1].startswith("ratios: report/view=")
    result = json.loads(out.read_text())
    assert result["rows"] == 120 and set(result["median_total_s"]) == {"report", "view"}
