"""``bineval view RUN...``: the runs' report served on 127.0.0.1, its row lists read a page at a time."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode, InputError


def cmd_view(args: argparse.Namespace) -> int:
    """Read every run, then serve their page until Ctrl-C (``report.serve``)."""
    from bineval_dspy.report import load_runs  # here: the parser loads no plotly or DSPy
    from bineval_dspy.report.serve import Viewer, server

    runs = [run for path in args.runs for run in load_runs(Path(path))]
    try:
        httpd = server(Viewer.of(runs, title=args.title, charts_on=args.charts), args.port)
    except OSError as exc:  # the port is taken, or not ours to open
        raise InputError(f"--port {args.port}: {exc.strerror or exc}; give another port, or --port 0 for any free one") from None
    host, port = str(httpd.server_address[0]), httpd.server_address[1]
    shown.print(f"serving {len(runs)} run(s) at http://{host}:{port}/ (Ctrl-C stops)", markup=False, highlight=False)
    sys.stdout.flush()
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        console.print("stopped")
    finally:
        httpd.server_close()
    return ExitCode.OK


def _port(text: str) -> int:
    """A TCP port number, 0 to 65535 (0: any free one)."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"a port is a whole number from 0 to 65535 (0: any free one), not {text!r}")
    return int(text)


def add_view_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``bineval view``."""
    parser = sub.add_parser("view", help="serve the report on runs on 127.0.0.1: rows in pages, with filters (the page `report` writes)")
    parser.add_argument("runs", nargs="+", metavar="RUN", help="what `bineval report` takes: run directories, output files, meta-eval configs")
    parser.add_argument("--port", type=_port, default=8765, help="the port to listen on (0: a free one, printed; default 8765)")
    parser.add_argument("--title", default="bineval report", help="the page's title")
    parser.add_argument("--no-charts", dest="charts", action="store_false", help="tables only: leaves out plotly.js and every chart")
    parser.set_defaults(func=cmd_view)
