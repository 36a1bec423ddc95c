"""The run kernel every resuming command uses: keep the first finished record of each key, drop the rest."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.runlog import model_log


class Score(BaseModel):
    id: str
    value: float | None = None


def log_of(path):
    return model_log(path, Score, key=lambda r: r.id, finished=lambda r: r.value is not None)


MADE = {"a": "1"}  # what the header of earlier output records (``runs.header``: the caller reads it)


def test_a_resume_keeps_the_first_finished_record_of_each_wanted_key_and_repairs_the_file(tmp_path):
    out = tmp_path / "scores.jsonl"
    assert log_of(out).open({"a": "1"}) == {}  # fresh output
    lines = [{"id": "x", "value": 1.0}, {"id": "x", "value": 2.0}, {"id": "y"}, {"id": "z", "value": 3.0}, {"id": "gone", "value": 4.0}]
    out.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"id": "w", "val')  # a torn last line
    assert log_of(out).finished_keys() == {"x", "z", "gone"} and out.read_text().endswith('"val')  # a dry run's view: no change
    kept = log_of(out).open({"a": "1"}, wanted=lambda key: key != "gone", recorded=MADE)  # as its header records it
    assert {k: r.value for k, r in kept.items()} == {"x": 1.0, "z": 3.0}
    assert [json.loads(line) for line in out.read_text().splitlines()] == [{"id": "x", "value": 1.0}, {"id": "z", "value": 3.0}]
    log_of(out).append(Score(id="y", value=0.5))
    assert log_of(out).open({"a": "1"}, recorded=MADE).keys() == {"x", "z", "y"}


def test_other_settings_and_damaged_lines_are_one_located_line(tmp_path):
    out = tmp_path / "scores.jsonl"
    log_of(out).open({"a": "1"})
    out.write_text('{"id": "x", "value": 1.0}\n{"id": 5}\n')
    with pytest.raises(InputError, match="made with other settings"):
        log_of(out).open({"a": "2"}, recorded=MADE)
    with pytest.raises(InputError, match="no scores.jsonl.run.json"):  # nothing records what made it
        log_of(out).open({"a": "1"})
    with pytest.raises(InputError, match=r"scores.jsonl:2: field 'id'"):
        log_of(out).open({"a": "1"}, recorded=MADE)
    assert log_of(out).open({"a": "1"}, overwrite=True) == {} and out.read_text() == ""
