"""The one guarded call every code check goes through (issue 55, break 1 and the per-check timeout): a verifier
that calls ``sys.exit``, raises ``KeyboardInterrupt`` or hangs is an unanswered question (judge), an ungraded
instruction (grading) and a failed enforced check, never the end of a run; the user's own Ctrl-C still stops it."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from bineval_dspy.core.schema import Question
from bineval_dspy.judges.code import make_code_router
from bineval_dspy.suites.grading import grade
from bineval_dspy.suites.rows import SuiteRow
from bineval_dspy.verifiers import VerifierError, build_check, describe, load_verifier_file
from bineval_dspy.verifiers.guard import TIMEOUT_ENV, check_timeout, guarded
from tests.verifiers.test_user import own_file

pytestmark = pytest.mark.usefixtures("own_verifiers")

QUITTERS = '''
import sys
import time

from pydantic import BaseModel, field_validator

import bineval_dspy


@bineval_dspy.verifier("mine:exit0", rule="Exits with 0.")
def exit0(response: str) -> bool:
    sys.exit(0)


@bineval_dspy.verifier("mine:exit3", rule="Exits with 3.")
def exit3(response: str) -> bool:
    sys.exit(3)


@bineval_dspy.verifier("mine:interrupt", rule="Interrupts.")
def interrupt(response: str) -> bool:
    raise KeyboardInterrupt


@bineval_dspy.verifier("mine:slow", rule="Takes its time.")
def slow(response: str) -> bool:
    time.sleep(3)
    return True


class QuitArgs(BaseModel):
    n: int = 0

    @field_validator("n")
    @classmethod
    def quit(cls, value: int) -> int:
        sys.exit(value)


@bineval_dspy.verifier("mine:quit_on_kwargs", rule="Quits while its kwargs are read.", kwargs=QuitArgs)
def quit_on_kwargs(response: str, n: int) -> bool:
    return True
'''

CAUSES = {
    "mine:exit0": "mine:exit0 raised SystemExit: 0",
    "mine:exit3": "mine:exit3 raised SystemExit: 3",
    "mine:interrupt": "mine:interrupt raised KeyboardInterrupt",
}


@pytest.mark.parametrize("verifier", sorted(CAUSES))
def test_an_exit_or_interrupt_inside_a_verifier_is_an_unanswered_question(tmp_path, verifier):
    load_verifier_file(own_file(tmp_path, QUITTERS))
    verdict = make_code_router()(Question(text="Fine?", dimension="d", verifier=verifier), "in", "some output")
    assert verdict is not None and verdict.answer == "unanswered"
    assert verdict.explanation == f"verifier failed: {CAUSES[verifier]}"


def test_grading_leaves_an_exiting_verifier_ungraded_and_goes_on(tmp_path):
    load_verifier_file(own_file(tmp_path, QUITTERS))
    row = SuiteRow(key="1", prompt="p", instruction_id_list=["mine:exit3", "punctuation:no_comma", "mine:interrupt"], kwargs=[{}, {}, {}])
    graded = grade(row, "no commas here", "loose")
    assert graded.follow_instruction_list == [None, True, None] and graded.follow_all_instructions is None
    assert graded.ungraded == [
        "instruction_id_list.0: verifier failed: mine:exit3 raised SystemExit: 3",
        "instruction_id_list.2: verifier failed: mine:interrupt raised KeyboardInterrupt",
    ]


def test_a_kwargs_model_that_exits_is_a_verifier_error_when_the_check_is_built(tmp_path):
    load_verifier_file(own_file(tmp_path, QUITTERS))
    with pytest.raises(VerifierError, match="mine:quit_on_kwargs raised SystemExit: 2"):
        build_check("mine:quit_on_kwargs", {"n": 2})
    with pytest.raises(VerifierError, match="SystemExit"):
        describe("mine:quit_on_kwargs", {"n": 1})


def test_a_check_past_its_timeout_is_unanswered_and_not_waited_for(tmp_path, monkeypatch):
    load_verifier_file(own_file(tmp_path, QUITTERS))
    monkeypatch.setenv(TIMEOUT_ENV, "0.2")
    started = time.monotonic()
    verdict = make_code_router()(Question(text="Fine?", dimension="d", verifier="mine:slow"), "in", "some output")
    assert time.monotonic() - started < 2
    assert verdict is not None and verdict.answer == "unanswered"
    assert verdict.explanation == f"verifier failed: mine:slow did not finish within 0.2 s (`{TIMEOUT_ENV}` sets the limit)"


@pytest.mark.parametrize("given, seconds", [("", 60.0), ("2.5", 2.5), ("0", 60.0), ("-1", 60.0), ("soon", 60.0)])
def test_the_timeout_is_read_from_the_environment(monkeypatch, given, seconds):
    monkeypatch.setenv(TIMEOUT_ENV, given)
    assert check_timeout() == seconds


def test_the_users_ctrl_c_still_stops_the_caller_while_a_check_runs():
    """A KeyboardInterrupt raised inside a check is the verifier's; a SIGINT reaches the main thread, which waits.
    Python's own SIGINT handler for the test: another test in this worker (a library that installs its own, Ray's
    driver say) must not decide what a Ctrl-C does here."""
    assert threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            guarded("mine:sleepy", lambda: time.sleep(3), timeout=10)
        assert time.monotonic() - started < 2
    finally:
        signal.signal(signal.SIGINT, previous)
