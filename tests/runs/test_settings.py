"""Fingerprints derived from a settings model (``core.settings``): a field a later release added is left out at its
default, so output made before it still resumes; a field that decides nothing is never recorded."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from bineval_dspy.core.settings import added, fingerprint_of, settled_json, unrecorded


class Inner(BaseModel):
    a: int = 1
    b: str = added("0.2", "x")


class Settings(BaseModel):
    output: Path = unrecorded(Path("out.jsonl"))
    data: str = "d"
    inner: Inner = Inner()
    later: int | None = added("0.2", None)
    numbers: list[int] = [1]


def test_later_fields_at_their_default_and_unrecorded_ones_are_left_out():
    assert fingerprint_of(Settings()) == {"data": "d", "inner": '{"a":1}', "numbers": "[1]"}
    assert settled_json(Settings(output=Path("elsewhere.jsonl"))) == '{"data":"d","inner":{"a":1},"numbers":[1]}'


def test_a_later_field_set_is_recorded_nested_too():
    assert fingerprint_of(Settings(later=3, inner=Inner(b="y"))) == {"data": "d", "inner": '{"a":1,"b":"y"}', "later": "3", "numbers": "[1]"}


def test_extra_entries_of_an_open_model_are_recorded():
    class PerMethod(BaseModel, extra="allow"):
        lm: str

    assert fingerprint_of(PerMethod(lm="m", **{"method.x": "{}"})) == {"lm": "m", "method.x": "{}"}
