"""`bineval show RUN_DIR`: the optimization trajectory and the diff between the first and final prompts."""

from __future__ import annotations

import argparse
import difflib
import json
from pathlib import Path

from rich.table import Table

from bineval_dspy.errors import InputError
from bineval_dspy.optimizer import AUDIT_FILE
from bineval_dspy.progress import console


def load_audit(run_dir: Path) -> dict:
    path = run_dir / AUDIT_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError:
        raise InputError(f"{run_dir}: no {AUDIT_FILE} (not an optimize run directory?)") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: malformed JSON ({exc.msg})") from None


def _score(summary: dict | None) -> str:
    return "-" if not summary else f"{summary['score']:.3f}"


def show_run(run_dir: Path) -> None:
    """Print held-out score and prompt length per iteration, accepted or not, then the prompt diff."""
    audit = load_audit(run_dir)
    table = Table(title=f"{run_dir} ({audit['mode']} mode): {audit.get('stopped') or 'in progress'}")
    for column in ("iter", "train", "held-out", "chars", "failures", "lessons", "edits", "LM calls"):
        table.add_column(column, justify="right")
    table.add_column("decision", no_wrap=True)
    start = audit["start"]
    table.add_row("0", "-", _score(start["val"]), str(start["prompt_chars"]), "-", "-", "-", str(start.get("lm_calls", "-")), "start")
    for it in audit["iterations"]:
        decision = it.get("decision", {})
        if not decision:
            verdict = "in progress"
        elif decision["accepted"]:
            verdict = "accepted"
        else:
            verdict = "rolled back" if "val" in it else "stopped"
        table.add_row(
            str(it["iteration"]),
            _score(it.get("train")),
            _score(it.get("val")),
            str(it.get("prompt_chars", "-")),
            str(len(it.get("failures", []))),
            f"{len(it.get('lessons_new', []))} -> {len(it.get('selected', []))}",
            str(len(it.get("edits", []))),
            str(it.get("lm_calls", 0)),
            verdict,
        )
    console.print(table)
    for it in audit["iterations"]:
        if it.get("decision"):
            console.print(f"iteration {it['iteration']}: {it['decision']['reason']}")
    gaps = audit["best"]["val"].get("dimension_gaps")
    if gaps:
        console.print("per-dimension |S_d(target) - S_d(reference)| of the final prompt: " + ", ".join(f"{d} {g:.3f}" for d, g in gaps.items()))
    before, after = audit["start"]["instructions"], audit["best"]["instructions"]
    for name in before:
        diff = list(difflib.unified_diff(before[name].splitlines(), after[name].splitlines(), f"{name} (start)", f"{name} (final)", lineterm=""))
        console.print(f"[bold]{name}[/]: {len(before[name])} -> {len(after[name])} chars")
        console.print("\n".join(diff) if diff else "(unchanged)", markup=False, highlight=False)


def cmd_show(args: argparse.Namespace) -> None:
    show_run(Path(args.run_dir))


def add_show_command(sub: argparse._SubParsersAction) -> None:
    """Register ``bineval show``."""
    parser = sub.add_parser("show", help="print an optimize run's trajectory and prompt diff")
    parser.add_argument("run_dir")
    parser.set_defaults(func=cmd_show)
