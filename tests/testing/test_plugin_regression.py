"""``bineval.assert_no_regression(base, new)``: the pytest plugin's regression gate between two runs, the same
comparison as ``bineval compare --fail-on-regression`` (issue 57, item 17)."""

from __future__ import annotations

import pytest

from bineval_dspy.pytest_plugin import RegressionError
from tests.report.test_compare import judged

ROWS = [f"r{k}" for k in range(12)]


def test_a_regressed_run_fails_the_test_with_its_interval_and_flipped_rows(bineval, tmp_path):
    base = judged(tmp_path / "base.jsonl", {key: ("yes", "yes") for key in ROWS})
    new = judged(tmp_path / "new.jsonl", {key: ("yes", "no") if k < 9 else ("yes", "yes") for k, key in enumerate(ROWS)})
    with pytest.raises(RegressionError) as failed:
        bineval.assert_no_regression(base, new, most=3)
    message = str(failed.value)
    assert message.startswith(f"NEW {new} is worse than BASE {base} beyond noise")
    assert "rows: -0.375 [" in message and "worsened 9, sign test p 0.004" in message
    assert "flipped yes>no: r0: Is it warm?" in message and "and 6 more flip(s)" in message
    assert failed.value.comparison.regressed[0].name == "rows"


def test_an_equal_or_better_run_passes_and_relative_paths_read_from_the_test_folder(bineval, tmp_path):
    bineval.folder = tmp_path
    judged(tmp_path / "base.jsonl", {key: ("yes", "no") for key in ROWS})
    judged(tmp_path / "new.jsonl", {key: ("yes", "yes") if k < 2 else ("yes", "no") for k, key in enumerate(ROWS)})
    comparison = bineval.assert_no_regression("base.jsonl", "new.jsonl")
    assert (comparison.columns[0].improved, comparison.columns[0].worsened) == (2, 0)


def test_items_new_did_not_score_fail_the_gate_rather_than_pass_it(bineval, tmp_path):
    base = judged(tmp_path / "base.jsonl", {key: ("yes", "yes") for key in ROWS})
    new = judged(tmp_path / "new.jsonl", {key: ("unanswered", "yes") if key == "r5" else ("yes", "yes") for key in ROWS})
    with pytest.raises(RegressionError, match=r"no verdict on regression: 1 item\(s\) scored in BASE have no score in NEW: r5"):
        bineval.assert_no_regression(base, new)
