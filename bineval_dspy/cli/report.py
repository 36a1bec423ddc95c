"""``bineval report RUN... -o report.html``: one self-contained HTML file on any runs the library writes."""

from __future__ import annotations

import argparse
from pathlib import Path

from bineval_dspy.cli.options import add_overwrite_option, refuse_replacing
from bineval_dspy.core.console import shown
from bineval_dspy.core.errors import ExitCode, InputError
from bineval_dspy.core.jsonio import check_output_path


def cmd_report(args: argparse.Namespace) -> int:
    """Read every run (all of them checked before anything is written), then write the one HTML file."""
    from bineval_dspy.report import load_runs, write_report  # here: the parser loads no plotly or DSPy
    from bineval_dspy.report.runs import shown_path

    out = Path(args.output)
    check_output_path(out, *(Path(path) for path in args.runs))
    if out.exists() and out.suffix.lower() not in (".html", ".htm"):  # e.g. a run's own audit.json or scores.jsonl
        raise InputError(f"{out}: exists and is not an HTML file, which the report would replace; give an .html path")
    refuse_replacing(out, args.overwrite)
    runs = [run for path in args.runs for run in load_runs(Path(path))]
    comparisons = []
    if args.compare:
        from bineval_dspy.report.compare import compare_paths

        if len(args.runs) != 2:
            raise InputError(f"--compare holds two runs against each other (BASE NEW); {len(args.runs)} were given")
        comparisons = [compare_paths(Path(args.runs[0]), Path(args.runs[1]))]
    write_report(runs, out, title=args.title, charts_on=args.charts, comparisons=comparisons)
    kinds = ", ".join(f"{run.kind} {shown_path(run.source)}" for run in runs)
    shown.print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB; {kinds})", markup=False, highlight=False)
    return ExitCode.OK


def add_report_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``bineval report``."""
    parser = sub.add_parser("report", help="one self-contained HTML report on runs of any kind (`bineval show --kinds` lists them)")
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="a run directory or output file (judge JSONL, audit.json, scores.jsonl, phi.json, results.json), or a meta-eval config (.toml: with the human scores)",
    )
    parser.add_argument("-o", "--output", default="report.html", help="the HTML file to write (default report.html)")
    parser.add_argument("--title", default="bineval report", help="the page's title")
    parser.add_argument(
        "--compare", action="store_true",
        help="with two runs of one kind (BASE NEW): add a section pairing them on their shared keys, as `bineval compare` does (paired interval, sign test, flipped verdicts)",
    )
    parser.add_argument("--no-charts", dest="charts", action="store_false", help="tables only: leaves out plotly.js (4.6 MB) and every chart")
    add_overwrite_option(parser, "the HTML file")
    parser.set_defaults(func=cmd_report)
