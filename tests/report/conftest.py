"""One report on a run of every kind, built once for the tests of this folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from bineval_dspy.report import load_runs, write_report
from tests.report import builders


@dataclass(frozen=True)
class Built:
    """The runs (judge, meta-eval by its config, optimizer, analysis, tune, in that order) and their report."""

    paths: list[Path]
    report: Path


@pytest.fixture(scope="session")
def every_kind(tmp_path_factory: pytest.TempPathFactory) -> Built:
    folder = tmp_path_factory.mktemp("every-kind")
    paths = builders.every_kind(folder)
    runs = [run for path in paths for run in load_runs(path)]
    assert [run.kind for run in runs] == ["judge", "meta-eval", "optimizer-audit", "phi", "tune"]
    return Built(paths=paths, report=write_report(runs, folder / "report.html"))
