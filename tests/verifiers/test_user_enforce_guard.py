"""A user verifier's ``enforce=`` runs as its check runs (issue 55, fifth pass's own probes): before, an enforce
that raised anything but a TypeError or ValueError was a traceback out of ``compile_plan`` (so out of ``generate
--enforce``), one that called ``sys.exit`` ended the run, and one that never returned hung it. Now each is the
row's decision "invalid" with one line naming the verifier."""

from __future__ import annotations

from pathlib import Path

import pytest

from bineval_dspy.verifiers import load_verifier_file
from bineval_dspy.verifiers.enforcement import compile_plan
from bineval_dspy.verifiers.guard import TIMEOUT_ENV

pytestmark = pytest.mark.usefixtures("own_verifiers")

FILE = '''
import sys

from pydantic import BaseModel

import bineval_dspy


class Args(BaseModel):
    most: int


def steer(most):
    BODY


@bineval_dspy.verifier("probe:steer", rule="at most {most}", kwargs=Args, enforce=steer)
def check(response, most):
    return True
'''


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("return 1 / 0", "probe:steer raised ZeroDivisionError: division by zero"),
        ("sys.exit(0)", "probe:steer raised SystemExit"),
        ("raise KeyboardInterrupt", "probe:steer raised KeyboardInterrupt"),
        ("while True: pass", "probe:steer did not finish within 0.5 s"),
    ],
)
def test_an_enforce_that_raises_exits_or_hangs_is_an_invalid_decision(tmp_path: Path, monkeypatch, body, reason):
    monkeypatch.setenv(TIMEOUT_ENV, "0.5")
    path = tmp_path / "steer.py"
    path.write_text(FILE.replace("BODY", body))
    load_verifier_file(path)
    (decision,) = compile_plan([("probe:steer", {"most": 3})], "p", "annotated").decisions
    assert decision.status == "invalid" and decision.reason.startswith(reason), decision
