"""experiments/bench_judge.py at its smallest size (one short pair, two questions, the naive arm's replies cut short),
so the benchmark cannot break unseen: it runs from a clean checkout, every arm answers, and it ends with its ratios
line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA

pytestmark = [
    pytest.mark.embedded,
    pytest.mark.skipif(not (SHARED_DATA / "summeval").is_dir(), reason=f"no SummEval data under {SHARED_DATA} (set BINEVAL_SHARED_DATA)"),
]

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "bench_judge.py"
TINY = ["--data", str(SHARED_DATA), "--pairs", "1", "--questions", "2", "--pair-tokens", "200"]


def test_bench_judge_runs_at_its_smallest_size(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *TINY, "--naive-max-tokens", "32", "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("ratios: today/new=")
    assert [item.split("=")[0] for item in last.split()[1:]] == [
        "today/new", "today/verdict_only", "verdict_only/batched_floor", "naive/new", "one_token/batched_floor", "probe/one_token",
        "probe/verdict_only", "probe_llama/one_token", "probe_llama/probe",
    ]  # fmt: skip
    result = json.loads(out.read_text())
    assert len(result["pairs"]) == 1 and len(result["questions"]) == 2
    assert result["pairs"][0]["article_tokens"] + result["pairs"][0]["summary_tokens"] <= 200
    for arm in ("today", "new", "verdict_only", "one_token", "probe", "probe_llama"):
        assert sum(result[arm]["answers"].values()) == 2 and result[arm]["answers"]["unanswered"] == 0
    assert result["one_token"]["generated_tokens"] <= 2 * 2  # the answer and the closing quote's token, at most
    assert sum(result["naive"]["answers"].values()) == 2 and result["naive"]["generated_tokens"] <= 32 * result["naive"]["calls"]
    assert result["one_token_answers_equal_to_verdict_only"] in (0, 1, 2)
    assert result["batched_floor"]["calls"] == 2 and result["batched_floor"]["generated_tokens"] == 2
    assert result["probe_llama"]["evaluated_prompt_tokens"] > 0  # llama.cpp read the states


def test_bench_judge_runs_the_target_pair_alone(tmp_path):
    """``--arms verdict_only,batched_floor``: the issue's target pair side by side, and only its ratio."""
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *TINY, "--arms", "batched_floor,verdict_only", "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1].startswith("ratios: verdict_only/batched_floor=")
    result = json.loads(out.read_text())
    assert result["arms"] == ["verdict_only", "batched_floor"] and "today" not in result
    assert sum(result["verdict_only"]["answers"].values()) == 2 and result["batched_floor"]["calls"] == 2


def test_bench_judge_refuses_a_floor_without_its_judge_arm():
    done = subprocess.run([sys.executable, str(SCRIPT), "--arms", "batched_floor"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "batched_floor needs verdict_only" in done.stderr
