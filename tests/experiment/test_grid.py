"""The output grid: what `eval` and `experiment` write for the report's side-by-side view."""

from __future__ import annotations

import pytest

from bineval_dspy.core.errors import InputError
from bineval_dspy.experiment.grid import Check, GridCell, GridRow, read_grid, write_grid


def cell(score: float | None, *passed: bool | None, error: str = "") -> GridCell:
    return GridCell(output="o", checks=[Check(name=f"i{k}", by="code", passed=p) for k, p in enumerate(passed)], score=score, error=error)


@pytest.mark.parametrize("cells, disagree", [
    ({"a": cell(1.0, True), "b": cell(1.0, True)}, False),
    ({"a": cell(1.0, True), "b": cell(0.0, False)}, True),
    ({"a": cell(0.5, True, False), "b": cell(0.5, False, True)}, True),  # the same score, other verdicts
    ({"a": cell(None, error="timeout"), "b": cell(None)}, True),  # one failed, one incomplete
    ({"a": cell(1.0, True)}, False),
])
def test_columns_disagree_on_a_score_a_verdict_or_a_failure(cells, disagree):
    assert GridRow(id="r", cells=cells).disagree is disagree


def test_text_with_line_separators_reads_back_as_written(tmp_path):
    """Probe 127: U+2028, U+0085 and CRLF in an output are no line breaks of the JSON Lines file."""
    row = GridRow(id="a\u2028b", input="x\u0085y", cells={"c": GridCell(output="o\u2028p\r\nq", checks=[Check(name="n", by="llm", passed=None)])})
    write_grid(tmp_path, [row, row.model_copy(update={"id": "2"})])
    assert read_grid(tmp_path) == [row, row.model_copy(update={"id": "2"})]


def test_a_damaged_grid_is_one_located_line_and_a_run_without_one_has_none(tmp_path):
    """Probe 125."""
    assert read_grid(tmp_path) == []
    (tmp_path / "grid.jsonl").write_text('{"id": "x", "cells": {}}\n{"id": 1, "cells": {}}\n')
    with pytest.raises(InputError, match=r"grid.jsonl:2: field 'id'"):
        read_grid(tmp_path)
