"""A command ends without a traceback at interpreter exit: every llama.cpp model is closed before teardown, where
llama-cpp-python's ``__del__`` would free it with its C bindings gone (issue 47, item 4)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.embedded
ROOT = Path(__file__).resolve().parents[2]


def test_optimize_ends_with_no_traceback_at_exit(tmp_path):
    rows = [
        {"key": k, "prompt": f"Name {what}, all in lowercase letters.", "instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]}
        for k, what in enumerate(("a fruit", "a colour"))
    ]
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "run.toml").write_text("""
mode = "self"
run_dir = "run"
[data]
suite = "suite.jsonl"
train = 1
val = 1
test = 0
[program]
instructions = "Answer."
max_tokens = 8
[optimizer]
max_iterations = 1
""")
    done = subprocess.run(
        [sys.executable, "-m", "bineval_dspy.cli", "optimize", str(tmp_path / "run.toml"), "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
