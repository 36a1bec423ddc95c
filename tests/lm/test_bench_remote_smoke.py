"""experiments/bench_remote.py at its smallest size, so the benchmark cannot break unseen: the instant and the
delayed server, the httpx and aiohttp loops, `bineval judge` on both paths at both concurrencies and the RSS run all
finish (every verdict answered: the script stops otherwise), and it ends with its ratios line. The llama_cpp.server
arm runs the real model: marked apart."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "bench_remote.py"
RATIOS = re.compile(r"ratios: bineval/aiohttp@64=\d+\.\d\d bineval/aiohttp@256=\d+\.\d\d bineval/raw@64=\d+\.\d\d bineval/raw@256=\d+\.\d\d")


def bench(tmp_path: Path, llama_rows: int) -> dict:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--rows", "20", "--rss-rows", "20", "--llama-rows", str(llama_rows), "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert RATIOS.fullmatch(done.stdout.strip().splitlines()[-1])
    return json.loads(out.read_text())


def test_bench_remote_runs_at_its_smallest_size(tmp_path):
    result = bench(tmp_path, llama_rows=0)
    assert result["calls"] == 200
    assert set(result["ratios"]) == set(result["ratios_to_aiohttp"]) == {"64", "256"}
    assert {"bineval@64", "dspy@256", "aiohttp20ms@64", "bineval20ms@256"} <= result.keys()
    assert result["rss"]["rows"] == 20 and result["rss"]["peak_mb"] > 0
    assert "llama_cpp" not in result


@pytest.mark.server
@pytest.mark.embedded
def test_bench_remote_judges_against_llama_cpp_server(tmp_path):
    pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python[server]")
    result = bench(tmp_path, llama_rows=1)
    assert result["llama_cpp"]["rows"] == 1 and result["llama_cpp"]["seconds"] > 0
