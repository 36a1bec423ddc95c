"""Bad input a newcomer writes by hand: config keys named all at once with a "did you mean", a checklist's dimensions
(issue 47)."""

from __future__ import annotations

import json

import pytest

from bineval_dspy import cli


def test_every_unknown_toml_key_is_named_at_once_with_a_did_you_mean(tmp_path, capsys):
    config = tmp_path / "run.toml"
    config.write_text('mode = "self"\nrun_dir = "r"\n[data]\nsuite = "s.jsonl"\ntrian = 3\n[optimizr]\nmax_iterations = 1\n[program]\nmax_tokns = 3\nzzz = 1\n')
    assert cli.main(["optimize", str(config)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    for said in ("'data.trian' (did you mean 'data.train'?)", "'optimizr' (did you mean 'optimizer'?)", "'program.max_tokns' (did you mean 'program.max_tokens'?)", "'program.zzz'"):
        assert said in err


@pytest.mark.parametrize("kind", ["experiment", "tune"])
def test_other_configs_name_unknown_keys_too(tmp_path, capsys, kind):
    config = tmp_path / "c.toml"
    config.write_text("nmae = 'x'\n")
    assert cli.main([kind, str(config)]) == 2
    assert "'nmae' (did you mean 'name'?)" in capsys.readouterr().err


def test_a_checklists_dimensions_may_be_left_out_and_an_unlisted_one_is_an_error(tmp_path, capsys):
    from bineval_dspy.core.jsonio import load_model
    from bineval_dspy.core.schema import Checklist

    questions = [{"text": "Is it short?", "dimension": "form"}, {"text": "Is it kind?", "dimension": "tone"}, {"text": "Is it clear?", "dimension": "form"}]
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"task": "t", "questions": questions}))
    assert load_model(path, Checklist).dimensions == ["form", "tone"]
    path.write_text(json.dumps({"task": "t", "dimensions": ["form", "tone"], "questions": [*questions, {"text": "Is it fun?", "dimension": "tnoe"}]}))
    assert cli.main(["judge", "--checklist", str(path), "--data", str(tmp_path / "rows.jsonl")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "c.json" in err and "questions.3.dimension: 'tnoe' is not one of the dimensions" in err
