"""``bineval show RUN_DIR``: the optimization trajectory and the diff between the first and final prompts."""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path

from rich.table import Table

from bineval_dspy.core.console import console
from bineval_dspy.optimize.audit import Audit, EvalSummary


def _score(summary: EvalSummary | None) -> str:
    return "-" if summary is None else f"{summary.score:.3f}"


def show_run(run_dir: Path) -> None:
    """Print held-out score and prompt length per iteration, accepted or not, then the prompt diff."""
    audit = Audit.load(run_dir)
    table = Table(title=f"{run_dir} ({audit.mode} mode): {audit.stopped or 'in progress'}")
    for column in ("iter", "kind", "train", "held-out", "chars", "failures", "lessons", "edits", "LM calls"):
        table.add_column(column, justify="right")
    table.add_column("decision", no_wrap=True)
    start = audit.start
    table.add_row("0", "-", "-", _score(start.val), str(start.prompt_chars), "-", "-", "-", str(start.lm_calls), "start")
    for it in audit.iterations:
        table.add_row(
            str(it.iteration),
            it.kind,
            _score(it.train),
            _score(it.val),
            "-" if it.prompt_chars is None else str(it.prompt_chars),
            str(len(it.failures or [])),
            f"{len(it.lessons_new or [])} -> {len(it.selected or [])}",
            str(len(it.edits or [])),
            str(it.lm_calls),
            it.outcome,
        )
    console.print(table)
    for it in audit.iterations:
        if it.decision is not None:
            console.print(f"iteration {it.iteration}: {it.decision.reason}")
        if it.lessons_discarded:
            console.print(f"  {len(it.lessons_discarded)} drafted lesson(s) discarded, {it.rule_lessons or 0} verifier rule(s) used instead")
    if audit.best.demos:
        console.print("demonstrations kept: " + ", ".join(f"{name} {len(ds)}" for name, ds in audit.best.demos.items()))
    if audit.best.thresholds:
        console.print("P(yes) thresholds kept: " + ", ".join(f"{d} {t:.3f}" for d, t in audit.best.thresholds.items()))
    gaps = audit.best.val.dimension_gaps
    if gaps:
        console.print("per-dimension |S_d(target) - S_d(reference)| of the final prompt: " + ", ".join(f"{d} {g:.3f}" for d, g in gaps.items()))
    before, after = audit.start.instructions, audit.best.instructions
    for name in before:
        diff = list(difflib.unified_diff(before[name].splitlines(), after[name].splitlines(), f"{name} (start)", f"{name} (final)", lineterm=""))
        console.print(f"[bold]{name}[/]: {len(before[name])} -> {len(after.get(name, ''))} chars")
        console.print("\n".join(diff) if diff else "(unchanged)", markup=False, highlight=False)


def cmd_show(args: argparse.Namespace) -> None:
    show_run(Path(args.run_dir))


def add_show_command(sub: argparse._SubParsersAction) -> None:
    """Register ``bineval show``."""
    parser = sub.add_parser("show", help="print an optimize run's trajectory and prompt diff")
    parser.add_argument("run_dir")
    parser.set_defaults(func=cmd_show)
