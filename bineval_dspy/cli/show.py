"""``bineval show RUN...``: any run the library writes, on the terminal, in brief (``report.text.show_run``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bineval_dspy.cli.report import run_kinds
from bineval_dspy.core.console import results_on_stdout


def cmd_show(args: argparse.Namespace) -> None:
    from bineval_dspy.report.runs import load_runs
    from bineval_dspy.report.text import show_run

    runs = [run for path in args.runs for run in load_runs(Path(path))]  # every path read before anything is shown
    with results_on_stdout():  # what show prints is its result: `bineval show RUN > brief.txt` keeps it
        for run in runs:
            show_run(run)


def add_show_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``bineval show``."""
    parser = sub.add_parser("show", help=f"print any run in brief: {run_kinds()}")
    parser.add_argument("runs", nargs="+", metavar="RUN", help="what `bineval report` reads: a run directory or output file, or a meta-eval config")
    parser.set_defaults(func=cmd_show)
