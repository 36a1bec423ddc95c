"""The guard and the check wrapper on careless settings and returns (issue 55, fifth pass's own probes):
``BINEVAL_CHECK_TIMEOUT=inf`` (no limit) made every check an OverflowError, and a check returning numpy's bool
(``np.all(...)``) was unanswered, "returned bool, not a bool"."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bineval_dspy.verifiers import build_check, load_verifier_file
from bineval_dspy.verifiers.guard import TIMEOUT_ENV, guarded


@pytest.mark.parametrize("limit", ["inf", "1e300"])
def test_no_limit_is_a_long_wait_not_an_overflow(monkeypatch, limit):
    monkeypatch.setenv(TIMEOUT_ENV, limit)
    assert guarded("probe:slow", lambda: (time.sleep(0.05), True)[1]) is True


@pytest.mark.usefixtures("own_verifiers")
def test_numpys_bool_is_a_verdict_and_other_types_are_named_in_full(tmp_path: Path):
    path = tmp_path / "numpy_checks.py"
    path.write_text(
        "import numpy\nimport bineval_dspy\n\n"
        "@bineval_dspy.verifier('probe:np', rule='x')\ndef np_bool(response):\n    return numpy.bool_(len(response) > 3)\n\n"
        "@bineval_dspy.verifier('probe:array', rule='x')\ndef np_array(response):\n    return numpy.array([True])\n"
    )
    load_verifier_file(path)
    assert build_check("probe:np", {})("long enough").passed is True
    assert build_check("probe:np", {})("no").passed is False
    from bineval_dspy.verifiers import VerifierError

    with pytest.raises(VerifierError, match=r"probe:array returned numpy.ndarray, not a bool or a Finding"):
        build_check("probe:array", {})("text")
