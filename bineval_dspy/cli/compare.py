"""``bineval compare BASE NEW``: two runs of one kind item by item (``report.compare``), and a regression gate for CI."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from bineval_dspy.cli.options import count
from bineval_dspy.core.console import console, results_on_stdout, shown
from bineval_dspy.core.errors import ExitCode, InputError

PLAIN = {"markup": False, "highlight": False}  # keys, paths and questions are data: a "[b]" in one is shown as written

if TYPE_CHECKING:
    from bineval_dspy.report.compare import Column, Flip, RunComparison


def cmd_compare(args: argparse.Namespace) -> int:
    from bineval_dspy.report.compare import compare_paths

    if args.fail_on_regression and args.resamples == 0:  # no interval: the gate could never say "regression"
        raise InputError("--fail-on-regression reads the bootstrap interval; --resamples 0 draws none (give 1000, the default)")
    comparison = compare_paths(Path(args.base), Path(args.new), resamples=args.resamples, seed=args.seed)
    with results_on_stdout():  # the comparison is the command's result: `bineval compare A B > diff.txt` keeps it
        _print(comparison, args.most)
    unscored = sum(len(column.unscored_new) for column in comparison.columns)
    if not comparison.scored:
        console.print("no shared item has a score in both runs, so no difference is measured; judge or verify both outputs to compare scores", style="yellow")
    if args.fail_on_regression and comparison.regressed:
        names = ", ".join(column.name for column in comparison.regressed)
        console.print(f"regression: NEW is worse than BASE beyond noise ({names})", style="red")
        return ExitCode.REGRESSION
    if args.fail_on_regression and (unscored or not comparison.scored):
        why = f"{unscored} item(s) scored in BASE have no score in NEW (rerun NEW to finish them)" if unscored else "nothing was scored in both runs"
        console.print(f"no verdict on regression: {why}; the gate does not pass what it could not compare", style="yellow")
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def _print(comparison: RunComparison, most: int) -> None:
    shown.print(f"{comparison.kind} runs: BASE {comparison.base}, NEW {comparison.new}; NEW - BASE per shared item, 95% paired bootstrap", **PLAIN)
    if comparison.only_base or comparison.only_new:
        shown.print(f"not compared: {_keys(comparison.only_base, most)} only in BASE, {_keys(comparison.only_new, most)} only in NEW", **PLAIN)
    for column in comparison.columns:
        p = "n/a" if column.sign_p is None else f"{column.sign_p:.3f}"
        changed = sum(item.changed_output for item in column.items)
        mark = " (regression)" if column.regressed else ""
        shown.print(f"{column.name}: {len(column.items)} shared, {len(column.scored)} scored in both; NEW - BASE {column.difference.text(signed=True)}{mark}", **PLAIN)
        shown.print(f"  improved {column.improved}, worsened {column.worsened}, sign test p {p}; verdicts flipped yes>no {len(column.lost())}, no>yes {len(column.gained())}; outputs changed {changed}", **PLAIN)
    for column in comparison.columns:
        _print_items(column, most)


def _print_items(column: Column, most: int) -> None:
    """The items that moved most either way, and the verdicts that flipped."""
    moved = sorted((item for item in column.scored if item.difference), key=lambda item: item.difference or 0.0)
    worse = [item for item in moved if (item.difference or 0.0) < 0][:most]
    better = [item for item in reversed(moved) if (item.difference or 0.0) > 0][:most]
    for label, items in (("worse", worse), ("better", better)):
        if items:
            shown.print(f"{column.name}: {label} in NEW: " + ", ".join(f"{item.key} {item.base:.2f}->{item.new:.2f}" for item in items), **PLAIN)
    for label, flips in (("yes>no", column.lost()), ("no>yes", column.gained())):
        if flips:
            shown.print(f"{column.name}: flipped {label}: " + "; ".join(_flip(flip) for flip in flips[:most]) + _more(len(flips), most), **PLAIN)
    if column.unscored_new:
        console.print(f"{column.name}: {len(column.unscored_new)} item(s) scored in BASE have no score in NEW (unanswered or failed): {_keys([item.key for item in column.unscored_new], most)}", style="yellow", **PLAIN)


def _flip(flip: Flip) -> str:
    return f"{flip.key}: {flip.question[:60]}"


def _keys(keys: list[str], most: int) -> str:
    return f"{len(keys)} ({', '.join(keys[:most])}{_more(len(keys), most)})" if keys else "0"


def _more(n: int, most: int) -> str:
    return f" and {n - most} more" if n > most else ""


def add_compare_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``bineval compare``."""
    parser = sub.add_parser(
        "compare", help="compare two runs of one kind on their shared rows: per-item differences, a paired interval, a sign test, flipped verdicts",
    )
    parser.add_argument("base", metavar="BASE", help="the run to hold NEW against: judge, generate or verify output, or an experiment's results.json")
    parser.add_argument("new", metavar="NEW", help="a run of the same kind over the same rows (paired by row key)")
    parser.add_argument(
        "--fail-on-regression", action="store_true",
        help=f"exit {int(ExitCode.REGRESSION)} when NEW is worse than BASE beyond noise (the 95%% interval of the mean difference lies below 0), "
        f"{int(ExitCode.INCOMPLETE)} when an item BASE scored has no score in NEW",
    )
    parser.add_argument("--resamples", type=count(0), default=1000, metavar="N", help="bootstrap resamples for the interval")
    parser.add_argument("--seed", type=int, default=0, help="the bootstrap's seed")
    parser.add_argument("--most", type=count(1), default=10, metavar="N", help="items and flips listed per column")
    parser.set_defaults(func=cmd_compare)
