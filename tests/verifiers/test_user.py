"""Verifiers users write themselves (``@bineval_dspy.verifier`` in a file of their own): the decorator's round
trip, loading a file (idempotent, located errors, id clashes), fail-closed checks and the fingerprint digest."""

from __future__ import annotations

from pathlib import Path

import pytest

import bineval_dspy
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import Question
from bineval_dspy.judges.code import make_code_router
from bineval_dspy.suites.grading import grade
from bineval_dspy.suites.rows import SuiteRow
from bineval_dspy.verifiers import VerifierError, build_check, code_digest, describe, diagnose, load_verifier_file
from bineval_dspy.verifiers.registry import VERIFIERS, catalog

pytestmark = pytest.mark.usefixtures("own_verifiers")

EMOJI = '''
from pydantic import BaseModel

import bineval_dspy


class NoEmojiArgs(BaseModel):
    allowed: int = 0


@bineval_dspy.verifier("mine:no_emoji", rule="Use at most {allowed} emoji.", kwargs=NoEmojiArgs)
def no_emoji(response: str, allowed: int) -> bool:
    return sum(ch in "\\U0001F600\\U0001F389" for ch in response) <= allowed


@bineval_dspy.verifier("mine:shout", rule="Shout: write in capitals only.")
def shout(response: str) -> bineval_dspy.Finding:
    lower = [word for word in response.split() if word != word.upper()]
    return bineval_dspy.Finding(not lower, f"lowercase words: {lower[:3]}" if lower else "all capitals")
'''

BROKEN = '''
import bineval_dspy


@bineval_dspy.verifier("mine:boom", rule="Never fails, they said.")
def boom(response: str) -> bool:
    return 1 / 0 > 0


@bineval_dspy.verifier("mine:silent", rule="Says nothing.")
def silent(response: str) -> bool:
    pass
'''


def own_file(folder: Path, text: str, name: str = "my_checks.py") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_a_decorated_function_is_a_verifier_like_the_built_in_ones(tmp_path):
    before = code_digest()
    assert load_verifier_file(own_file(tmp_path, EMOJI)) == ["mine:no_emoji", "mine:shout"]
    assert diagnose(build_check("mine:no_emoji", {}), "Party \U0001F389") == bineval_dspy.Finding(False, "no_emoji returned False")
    assert diagnose(build_check("mine:no_emoji", {"allowed": 1}), "Party \U0001F389").passed
    assert diagnose(build_check("mine:shout", None), "LOUD and clear") == bineval_dspy.Finding(False, "lowercase words: ['and', 'clear']")
    assert describe("mine:no_emoji", {"allowed": 2}) == "Use at most 2 emoji."
    listed = {info.instruction_id: info for info in catalog("mine:")}
    assert listed["mine:no_emoji"].rule == "Use at most 0 emoji." and listed["mine:no_emoji"].kwargs == {"allowed": "0"}
    assert listed["mine:shout"].kwargs == {}
    with pytest.raises(VerifierError, match=r"mine:no_emoji: bad kwargs \(field 'allowed': Input should be a valid integer"):
        build_check("mine:no_emoji", {"allowed": "many"})
    with pytest.raises(VerifierError, match="unexpected kwargs limit"):
        build_check("mine:no_emoji", {"limit": 1})
    assert code_digest() != before  # the file is part of what a run's verdicts came from


def test_loading_a_file_again_is_a_no_op_and_a_changed_file_replaces_its_verifiers(tmp_path):
    path = own_file(tmp_path, EMOJI)
    load_verifier_file(path)
    entry, digest = VERIFIERS["mine:no_emoji"], code_digest()
    assert load_verifier_file(tmp_path / "." / "my_checks.py") == ["mine:no_emoji", "mine:shout"]
    assert VERIFIERS["mine:no_emoji"] is entry and code_digest() == digest
    path.write_text(EMOJI.replace("mine:shout", "mine:yell"))
    assert load_verifier_file(path) == ["mine:no_emoji", "mine:yell"]
    assert "mine:shout" not in VERIFIERS and code_digest() != digest


def test_a_verifier_that_raises_or_returns_no_verdict_is_unanswered_never_a_pass(tmp_path):
    load_verifier_file(own_file(tmp_path, BROKEN))
    route = make_code_router()
    boom = route(Question(text="Fine?", dimension="d", verifier="mine:boom"), "in", "some output")
    assert boom is not None and boom.answer == "unanswered"
    assert boom.explanation == "verifier failed: mine:boom raised ZeroDivisionError: division by zero"
    silent = route(Question(text="Fine?", dimension="d", verifier="mine:silent"), "in", "some output")
    assert silent is not None and silent.answer == "unanswered"
    assert silent.explanation == "verifier failed: mine:silent returned NoneType, not a bool or a Finding"
    row = SuiteRow(key="1", prompt="p", instruction_id_list=["punctuation:no_comma", "mine:boom"], kwargs=[{}, {}])
    graded = grade(row, "no commas here")
    assert graded.follow_instruction_list == [True, None] and graded.follow_all_instructions is None
    assert graded.ungraded == ["instruction_id_list.1: verifier failed: mine:boom raised ZeroDivisionError: division by zero"]


@pytest.mark.parametrize("text, message", [
    ("import bineval_dspy\n\ndef f(:\n", ":3: cannot load verifiers: SyntaxError: invalid syntax"),
    ("import bineval_dspy\nx = 1\nundefined_name()\n", ":3: cannot load verifiers: NameError: name 'undefined_name' is not defined"),
    ("import not_a_module_anywhere\n", ":1: cannot load verifiers: ModuleNotFoundError: No module named 'not_a_module_anywhere'"),
    ("x = 1\n", ": defines no verifier; decorate a function with @bineval_dspy.verifier"),
    ('import bineval_dspy\n\n@bineval_dspy.verifier("nocolon", rule="R.")\ndef f(response):\n    return True\n', ":3: verifier id 'nocolon' is not 'group:name'"),
    ('import bineval_dspy\n\n@bineval_dspy.verifier("mine:typo", rule="Use {nmu}.")\ndef f(response):\n    return True\n', ":3: rule of f does not match its kwargs: ['nmu']"),
])  # fmt: skip
def test_a_file_that_cannot_be_loaded_is_one_located_line(tmp_path, text, message):
    path = own_file(tmp_path, text)
    with pytest.raises(InputError) as bad:
        load_verifier_file(path)
    assert str(bad.value).startswith(str(path.resolve())) and message in str(bad.value), str(bad.value)
    assert "\n" not in str(bad.value)
    assert not any(i.startswith("mine:") for i in VERIFIERS)


def test_an_id_a_built_in_or_another_file_has_is_refused(tmp_path):
    clash = own_file(tmp_path, 'import bineval_dspy\n\n@bineval_dspy.verifier("punctuation:no_comma", rule="R.")\ndef f(response):\n    return True\n')
    with pytest.raises(InputError, match=r"my_checks.py:3: verifier id 'punctuation:no_comma' is a built-in verifier's; rename yours"):
        load_verifier_file(clash)
    assert VERIFIERS["punctuation:no_comma"].factory.__module__ == "bineval_dspy.verifiers.ifeval_format"
    load_verifier_file(own_file(tmp_path, EMOJI, "first.py"))
    with pytest.raises(InputError, match=r"second.py:11: verifier id 'mine:no_emoji' is already defined in .*first.py"):
        load_verifier_file(own_file(tmp_path, EMOJI, "second.py"))
    twice = 'import bineval_dspy\n\n@bineval_dspy.verifier("mine:a", rule="A.")\ndef a(response):\n    return True\n\n' \
        '@bineval_dspy.verifier("mine:a", rule="A again.")\ndef b(response):\n    return False\n'
    with pytest.raises(InputError, match=r"twice.py:7: verifier id 'mine:a' is defined twice in this file"):
        load_verifier_file(own_file(tmp_path, twice, "twice.py"))
    assert "mine:a" not in VERIFIERS
    with pytest.raises(InputError, match="verifiers come from a Python file"):
        load_verifier_file(tmp_path / "checks.txt")
    with pytest.raises(InputError, match="cannot read"):
        load_verifier_file(tmp_path / "missing.py")
