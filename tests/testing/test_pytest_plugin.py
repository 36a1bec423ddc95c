"""The pytest plugin and ``assert_passes``, used as a project's own tests would use them (a scripted LM here,
``--bineval-lm`` in a real suite). This file is the documented example: copy a test and point it at your outputs."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.testing import question_of, scripted_lm, verdict_json
from bineval_dspy.testing.assertions import BinevalAssertionError, assert_passes

HAIKU = Checklist(task="Write a haiku about autumn.", dimensions=["form", "content"], questions=[
    Question(text="Does the poem have three lines?", dimension="form"),
    Question(text="Does the poem mention autumn?", dimension="content"),
])


def lm_saying_no_to(word: str):
    """A scripted LM: 'no' (with a reason) to questions holding ``word``, 'yes' to the rest."""
    return scripted_lm(lambda r: verdict_json("no", f"nothing about {word}") if word in question_of(r) else verdict_json("yes"))


def test_the_plugin_is_registered_with_its_options(pytestconfig):
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {"bineval": "bineval_dspy.pytest_plugin"}
    assert pytestconfig.pluginmanager.hasplugin("bineval")  # pytest loaded it from the installed entry point
    assert pytestconfig.getoption("--bineval-lm") is None and pytestconfig.getoption("--bineval-cache-dir") is None


def test_the_fixture_takes_the_command_line_lm(bineval, pytestconfig):
    assert bineval.spec == pytestconfig.getoption("--bineval-lm") and bineval.cache_dir is None


def test_an_output_that_meets_its_checklist_passes(bineval):
    card = bineval.assert_passes("Red leaves drift and fall\nautumn wind\ncold", checklist=HAIKU, input=HAIKU.task, lm=lm_saying_no_to("zzz"))
    assert card.overall == 1.0


def test_a_failure_names_each_missed_question_and_why(bineval):
    with pytest.raises(BinevalAssertionError) as failed:
        bineval.assert_passes("Leaves", checklist=HAIKU, input=HAIKU.task, lm=lm_saying_no_to("three lines"))
    message = str(failed.value)
    assert message.startswith("output missed 1 of 2 question(s)")
    assert "[form] Does the poem have three lines? -> no (by custom/scripted) - nothing about three lines" in message
    assert "autumn" not in message.split("\n", 1)[1]  # only what was missed
    assert failed.value.scorecard.verdicts[1].answer == "yes"


SUITE_ROW = {"key": 1, "prompt": "Describe autumn in lowercase, with no commas.",
             "instruction_id_list": ["change_case:english_lowercase", "punctuation:no_comma"], "kwargs": [{}, {}]}


def test_a_suite_rows_verifiers_judge_without_any_lm(bineval):
    bineval.assert_passes("red leaves fall and the wind turns cold", row=SUITE_ROW)
    with pytest.raises(BinevalAssertionError) as failed:
        bineval.assert_passes("Red leaves, cold wind", row=SUITE_ROW)
    message = str(failed.value)
    assert "missed 2 of 2" in message and "by code:change_case:english_lowercase" in message and "by code:punctuation:no_comma" in message
    assert bineval._lm is None  # code checks made no LM


def test_an_unanswered_question_fails_the_test():
    with pytest.raises(BinevalAssertionError, match="-> unanswered"):
        assert_passes("Leaves", checklist=HAIKU, lm=scripted_lm(lambda r: "not json at all"))
