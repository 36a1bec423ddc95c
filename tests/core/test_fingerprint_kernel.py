"""The one decision whether earlier output is reused (``core.fingerprint``): a document a run goes on writing is
resumed or refused naming the setting that differs; a result that may be made again is reused or redone, said in
one line; nothing recorded is neither."""

from __future__ import annotations

import pytest

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import resume_check, still_valid

JUDGE = '{"chain_of_thought": false, "partial": false}'


def test_a_document_made_with_other_settings_is_refused_naming_the_field():
    recorded = {"data": "abc", "judge": JUDGE}
    assert resume_check(recorded, dict(recorded), "runs/a", "; use a new run_dir") is True
    with pytest.raises(InputError) as refused:
        resume_check(recorded, {"data": "abc", "judge": JUDGE.replace('"partial": false', '"partial": true')}, "runs/a", "; use a new run_dir")
    assert str(refused.value) == "runs/a: made with other settings (judge.partial: false -> true); use a new run_dir"


def test_nothing_recorded_is_neither_resumed_nor_refused(capsys):
    assert resume_check(None, {"data": "abc"}, "runs/a", "; use a new run_dir") is False
    assert still_valid(None, {"data": "abc"}, "runs/a/arm.json") is False
    assert capsys.readouterr().err == ""


def test_a_result_made_with_other_settings_is_redone_and_one_line_says_so(capsys):
    assert still_valid({"budget": "20"}, {"budget": "20"}, "runs/a/arm.json") is True
    assert capsys.readouterr().err == ""
    assert still_valid({"budget": "20"}, {"budget": "30"}, "runs/a/arm.json") is False
    err = capsys.readouterr().err
    assert err.strip() == "runs/a/arm.json: made with other settings (budget: '20' -> '30'); redoing it", err


def test_a_digest_is_reused_while_equal_and_names_no_difference(capsys):
    assert still_valid("a07a0230139d0e0e", "a07a0230139d0e0e", "runs/a/arm.json") is True
    assert still_valid("a07a0230139d0e0e", "20a4abf89350bf29", "runs/a/arm.json") is False
    assert capsys.readouterr().err.strip() == "runs/a/arm.json: made with other settings; redoing it"
