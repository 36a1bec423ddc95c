"""``bineval suite synth``: a seeded training suite of writing tasks with code-checked constraints (no LM)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bineval_dspy.cli.options import add_overwrite_option, count, refuse_replacing
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode, InputError
from bineval_dspy.core.jsonio import check_output_path, rewrite_jsonl


def _threshold(text: str) -> float:
    """--threshold as a similarity above 0 and at most 1; parsed here, so a bad value is one line (exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"--threshold: expected a number above 0 and at most 1, got {text!r}") from None
    if not 0 < value <= 1:  # also refuses nan
        raise InputError(f"--threshold: must be above 0 and at most 1, got {text}")
    return value


def cmd_synth(args: argparse.Namespace) -> int:
    """Draw the rows, keep every one clear of the excluded prompts, and write the suite."""
    from bineval_dspy.suites.synth import load_tasks, read_excluded, select_ids, synthesize  # here: not at parse time

    threshold = _threshold(args.threshold)
    out = Path(args.output)
    tasks_path = Path(args.tasks) if args.tasks else None
    excluded_paths = [Path(path) for path in args.exclude]
    check_output_path(out, *([tasks_path] if tasks_path else []), *excluded_paths)
    refuse_replacing(out, args.overwrite)
    ids = select_ids(args.ids)
    synthesis = synthesize(
        args.count,
        seed=args.seed,
        tasks=load_tasks(tasks_path),
        ids=ids,
        min_instructions=args.min_instructions,
        max_instructions=args.max_instructions,
        excluded=read_excluded(excluded_paths),
        threshold=threshold,
    )
    rewrite_jsonl(out, synthesis.rows)
    if excluded_paths:
        console.print(f"redrew {synthesis.redrawn} candidate(s) that matched an excluded prompt (similarity >= {threshold:g})")
    shown.print(f"wrote {len(synthesis.rows)} row(s) drawn from {len(ids)} instruction id(s) to {out}")
    return ExitCode.OK


def add_suite_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``bineval suite`` and its ``synth`` command; neither takes LM options (they call no LM)."""
    suite = sub.add_parser("suite", help="make IFBench-style suites (no LM)")
    commands = suite.add_subparsers(dest="suite_command", required=True, help="what to make")
    synth = commands.add_parser(
        "synth", help="compose a training suite: writing tasks with 1-3 code-checked constraints, seeded, clear of test prompts"
    )
    synth.add_argument("-n", "--count", type=count(1), default=100, help="rows to write (default: %(default)s)")
    synth.add_argument("--seed", type=int, default=0, help="the same seed writes the same file (default: %(default)s)")
    synth.add_argument("--min-instructions", type=count(1), default=1, help="fewest constraints per prompt (default: %(default)s)")
    synth.add_argument("--max-instructions", type=count(1), default=3, help="most constraints per prompt (default: %(default)s)")
    synth.add_argument(
        "--ids", metavar="LIST",
        help="comma-separated families (ifeval, ifbench, bineval), id prefixes (keywords, format) or instruction ids to draw from (default: every id that can be drawn)",
    )  # fmt: skip
    synth.add_argument("--tasks", metavar="FILE", help="your tasks: one per line, or JSON Lines with a 'task' field (default: the bundled list)")
    synth.add_argument(
        "--exclude", metavar="SUITE", action="append", default=[],
        help="a suite (JSON Lines with 'prompt') whose prompts no row may equal or nearly duplicate; repeatable (default: none)",
    )  # fmt: skip
    synth.add_argument(
        "--threshold", default="0.5", metavar="SIMILARITY",
        help="word 5-gram Jaccard similarity from which a prompt counts as a near-duplicate (default: %(default)s)",
    )  # fmt: skip
    synth.add_argument("-o", "--output", default="synth.jsonl", help="the suite to write (default: %(default)s)")
    add_overwrite_option(synth)
    synth.set_defaults(func=cmd_synth)
