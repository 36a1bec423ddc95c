"""Reports on runs: ``load_runs`` finds and reads any run the library writes (``load_run``: one file, by its kind),
``render`` and ``write_report`` make one self-contained HTML file of them (``bineval report``); ``bineval show``
prints the same runs on a terminal."""

from bineval_dspy.report.html import render, write_report
from bineval_dspy.report.meta_runs import MetaEvaluation  # and, on import, meta-eval's reader and views register
from bineval_dspy.report.runs import (
    AnalysisRun,
    JudgedRows,
    LoadedRun,
    OptimizerRun,
    TuneRun,
    load_run,
    load_runs,
)

__all__ = ["AnalysisRun", "JudgedRows", "MetaEvaluation", "OptimizerRun", "LoadedRun", "TuneRun", "load_run", "load_runs", "render", "write_report"]
