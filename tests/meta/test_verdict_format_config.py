"""experiments/meta/summeval_verdict_format.toml at a tiny size on the embedded LM: both verdict formats answer
every question of the fixture summaries, and the prefilled one generates at most two tokens a verdict."""

from __future__ import annotations

import json

import pytest

from bineval_dspy import cli
from tests.meta.test_checklist_bench import EXPERIMENTS, tiny

pytestmark = pytest.mark.embedded


def test_the_verdict_format_comparison_runs_at_a_tiny_size(tmp_path, capsys):
    config = tiny("summeval_verdict_format.toml", tmp_path)
    checklist = EXPERIMENTS / "summeval_lm_checklist.json"  # the shipped checklist, from the copied config
    config.write_text(config.read_text().replace('"summeval_lm_checklist.json"', f'"{checklist}"'))
    assert cli.main(["meta-eval", str(config), "--limit", "1", "--cache-dir", str(tmp_path / "cache")]) == 0
    records = [json.loads(line) for line in (tmp_path / "run" / "scores.jsonl").read_text().splitlines()]
    assert {r["method"] for r in records} == {"json-p", "prefilled-p"}
    assert all(None not in r["scores"].values() for r in records)  # nothing unanswered in either format
    results = (tmp_path / "run" / "results.md").read_text()
    assert "| json-p |" in results and "| prefilled-p |" in results
