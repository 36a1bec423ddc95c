"""``RunSpec``, the base of every run config: ``source`` is the file being validated (whatever the file says), never
dumped, and a loaded config is frozen, so no loader sets it afterwards (issue 58)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_toml
from bineval_dspy.runs.spec import RunSpec


class Study(RunSpec):
    name: str


def test_source_is_the_file_validated_and_stays_out_of_dumps(tmp_path):
    path = tmp_path / "study.toml"
    path.write_text('name = "a"\nsource = "elsewhere.toml"\n', encoding="utf-8")
    study = load_toml(path, Study)
    assert study.source == str(path) and study.model_dump() == {"name": "a"}
    assert Study(name="b", source="given").source == "given"  # built in code: what it is given


def test_a_run_config_is_frozen_and_refuses_unknown_keys(tmp_path):
    with pytest.raises(ValidationError):
        Study(name="a").name = "b"  # type: ignore[misc]
    path = tmp_path / "study.toml"
    path.write_text('name = "a"\nnmae = "b"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"study\.toml.*nmae"):
        load_toml(path, Study)
