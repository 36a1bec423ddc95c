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
    assert bineval.session.spec == pytestconfig.getoption("--bineval-lm") and bineval.session.cache_dir is None


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
    assert bineval.session._lm is None  # code checks made no LM


def test_an_unanswered_question_fails_the_test():
    with pytest.raises(BinevalAssertionError, match="-> unanswered"):
        assert_passes("Leaves", checklist=HAIKU, lm=scripted_lm(lambda r: "not json at all"))


def test_min_score_passes_at_that_score_and_an_unanswered_question_still_fails():
    """Issue 33, item 11."""
    half = lm_saying_no_to("three lines")  # one of the two questions met: 0.5
    assert assert_passes("Leaves", checklist=HAIKU, lm=half, min_score=0.5).overall == 0.5
    with pytest.raises(BinevalAssertionError, match=r"^score below min_score 0.8; output missed 1 of 2"):
        assert_passes("Leaves", checklist=HAIKU, lm=half, min_score=0.8)
    with pytest.raises(BinevalAssertionError, match="-> unanswered"):
        assert_passes("Leaves", checklist=HAIKU, lm=scripted_lm(lambda r: "not json at all"), min_score=0.0)


def test_a_relative_checklist_path_is_read_from_the_test_files_folder(tmp_path, monkeypatch):
    from bineval_dspy.pytest_plugin import Bineval, BinevalSession

    (tmp_path / "haiku.json").write_text(HAIKU.model_dump_json())
    monkeypatch.chdir(tmp_path.parent)  # not where the checklist is
    fixture = Bineval(BinevalSession(None, None), folder=tmp_path)
    assert fixture.assert_passes("Leaves", checklist="haiku.json", lm=lm_saying_no_to("zzz")).overall == 1.0


USING_THE_FIXTURE = """
import pytest

ROW = {"key": 1, "prompt": "Describe autumn in lowercase.", "instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]}


def test_passes(bineval):
    bineval.assert_passes("red leaves fall", row=ROW)


def test_fails(bineval):
    bineval.assert_passes("Red Leaves Fall", row=ROW)
"""


def test_a_run_ends_with_the_judging_summary_and_a_failure_shows_the_tests_line(pytester):
    pytester.makepyfile(test_outputs=USING_THE_FIXTURE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "bineval: 2 output(s) judged, 1 passed, mean score 0.50" in out
    assert "missed 1 of 1 question(s)" in out and "testing/assertions.py" not in out and "pytest_plugin.py" not in out
