"""``bineval show RUN...``: any run the library writes, on the terminal, in brief (``report.text.show_run``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bineval_dspy.core.console import results_on_stdout, shown
from bineval_dspy.core.errors import InputError


def cmd_show(args: argparse.Namespace) -> None:
    from bineval_dspy.report.runs import load_runs
    from bineval_dspy.report.text import show_run

    if args.kinds:
        show_kinds()
        return
    if not args.runs:
        raise InputError("show: name a run (a run directory or output file), or --kinds")
    runs = [run for path in args.runs for run in load_runs(Path(path))]  # every path read before anything is shown
    with results_on_stdout():  # what show prints is its result: `bineval show RUN > brief.txt` keeps it
        for run in runs:
            show_run(run)


def add_show_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``bineval show``."""
    parser = sub.add_parser("show", help="print any run in brief (--kinds: the kinds it reads)")
    parser.add_argument("--kinds", action="store_true", help="list every run kind show, report and view read, and stop")
    parser.add_argument("runs", nargs="*", metavar="RUN", help="what `bineval report` reads: a run directory or output file, or a meta-eval config")
    parser.set_defaults(func=cmd_show)


def show_kinds() -> None:
    """Every run kind ``show``, ``report`` and ``view`` read, from the registry (``runs.kinds.RUN_KINDS``): never a
    list kept by hand that falls behind a new kind. Listed on request, not in ``--help``: the registry fills as the
    modules defining each run load, which ``--help`` leaves unloaded."""
    from bineval_dspy.report import html, text  # noqa: F401  (the readers and both views register themselves)
    from bineval_dspy.runs.kinds import RUN_KINDS

    with results_on_stdout():
        for name, kind in RUN_KINDS.items():
            if kind.read is not None:
                shown.print(f"{name}: {kind.title} ({' or '.join(kind.suffixes)})", markup=False, highlight=False)
