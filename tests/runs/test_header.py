"""``headed``: the one header of an output a run writes whole (an experiment's results, a calibration, an
analysis, ...), the same ``RunHeader`` ``execute`` writes beside a log: kind, version, status, usage, fingerprint,
and why a failed run failed. The header decides a file's kind, and the header of a run that failed before writing
its output is read as one line saying why."""

from __future__ import annotations

import json

import pytest

from bineval_dspy import __version__
from bineval_dspy.core.errors import BudgetExhausted, InputError
from bineval_dspy.lm.usage import Cost
from bineval_dspy.report.runs import load_run
from bineval_dspy.runs.files import run_kind
from bineval_dspy.runs.header import headed, header_path, read_header


def test_a_run_that_ends_writes_its_kind_status_usage_and_fingerprint(tmp_path):
    out = tmp_path / "results.json"
    with headed(out, "calibration", {"data": "abc"}) as heading:
        assert read_header(out).status == "running"  # type: ignore[union-attr]
        out.write_text(json.dumps({"kind": "an-older-name"}))
        heading.usage, heading.status = Cost(lm_calls=3), "incomplete"
    header = read_header(out)
    assert header is not None and (header.kind, header.version, header.status, header.usage.lm_calls, header.fingerprint, header.error) == (
        "calibration", __version__, "incomplete", 3, {"data": "abc"}, None
    )
    assert run_kind(out) == "calibration"  # the header decides, whatever the file's own field says
    assert "error" not in json.loads(header_path(out).read_text())  # a header of a run that did not fail reads as before


def test_a_failed_run_says_why_and_its_header_alone_is_one_line(tmp_path):
    out = tmp_path / "run" / "results.json"  # in a run directory not made yet
    with pytest.raises(ValueError, match="no rows"), headed(out, "experiment"):
        raise ValueError("no rows\nin the test split")
    header = read_header(out)
    assert header is not None and (header.status, header.error) == ("failed", "ValueError: no rows")
    with pytest.raises(InputError, match=r"results.json.run.json: a 'experiment' run that wrote no results.json: it is failed \(ValueError: no rows\)"):
        load_run(header_path(out))


def test_a_budget_or_a_ctrl_c_leaves_it_stopped(tmp_path):
    for stop in (BudgetExhausted("max_calls"), KeyboardInterrupt()):
        out = tmp_path / f"{type(stop).__name__}.json"
        with pytest.raises(type(stop)), headed(out, "tune"):
            raise stop
        header = read_header(out)
        assert header is not None and (header.status, header.error) == ("stopped", None)
