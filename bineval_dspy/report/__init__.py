"""Reports on runs: ``load_runs`` finds and reads any run the library writes (``load_run``: one file, by its kind),
``render`` and ``write_report`` make one self-contained HTML file of them (``bineval report``); ``bineval show``
prints the same runs on a terminal."""

from bineval_dspy.report.html import render, write_report
from bineval_dspy.report.runs import (
    AnalysisRun,
    JudgedRows,
    LoadedRun,
    MetaEvaluation,
    OptimizerRun,
    TuneRun,
    load_run,
    load_runs,
)

__all__ = ["AnalysisRun", "JudgedRows", "MetaEvaluation", "OptimizerRun", "LoadedRun", "TuneRun", "load_run", "load_runs", "render", "write_report"]
