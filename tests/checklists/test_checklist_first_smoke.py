"""experiments/checklist_first.py at its smallest size (one IFEval prompt, one InFoBench instruction, one writer
attempt each, the embedded LM), so the issue-33 experiment cannot break unseen: both arms run and the summary carries
every figure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "checklist_first.py"


@pytest.mark.embedded
@pytest.mark.skipif(not (SHARED_DATA / "ifeval").is_dir(), reason=f"no IFEval data under {SHARED_DATA} (set BINEVAL_SHARED_DATA)")
def test_checklist_first_runs_at_its_smallest_size(tmp_path):
    reader = tmp_path / "reader.json"
    reader.write_text("{}")
    out = tmp_path / "first.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--n", "1", "--retries", "0", "--reader", str(reader), "--cache-dir", str(tmp_path / "cache"), "--out", str(out)],
        capture_output=True, text=True, timeout=900, env={**os.environ, "BINEVAL_SHARED_DATA": str(SHARED_DATA)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert set(result["summary"]) == {"before/ifeval", "before/infobench", "after/ifeval", "after/infobench"}
    assert [(row["before"]["attempts"], row["after"]["attempts"]) for row in result["rows"]] == [(1, 1), (1, 1)]  # --retries reached the screen
    assert result["summary"]["before/ifeval"]["verifier_share"] == 0.0 and "verifier_share" in result["summary"]["after/ifeval"]
    assert result["summary"]["after/ifeval"]["reader_read"] == 0  # an empty reader file reads nothing: no question counted as kept
    assert out.with_suffix(".md").read_text().startswith("# The first checklist")
