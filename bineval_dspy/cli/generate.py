"""``bineval generate``: responses for a suite's prompts, optionally improved with STICK; resumable."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.table import Table

from bineval_dspy.core.console import console
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import read_jsonl
from bineval_dspy.judges.binary import hybrid_judge
from bineval_dspy.lm import runtime
from bineval_dspy.lm.runtime import effective_threads
from bineval_dspy.programs.generator import Generator, finished_keys, run_generation
from bineval_dspy.programs.refine import DEFAULT_MAX_TOKENS
from bineval_dspy.suites.rows import load_suite


def _count(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _read_instructions(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    if not text.strip():
        raise InputError(f"{path}: the instructions file is empty")
    return text


def _mean(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{sum(known) / len(known):.3f}" if known else "n/a"


def cmd_generate(args: argparse.Namespace) -> None:
    """Generate (optionally STICK-improved) responses for a suite; resumable."""

    suite_path = Path(args.suite)
    rows = load_suite(suite_path)
    if not rows:
        raise InputError(f"{suite_path}: no suite rows")
    rows = rows[: args.limit] if args.limit else rows
    instructions = _read_instructions(Path(args.instructions)) if args.instructions else None
    out = Path(args.output)
    finished_keys(out)  # a malformed output file is reported before any LM is loaded
    lm = runtime.configure(args.lm, args.cache_dir)
    judge = hybrid_judge(args.mode) if (args.refine or args.best_of > 1) else None
    report = run_generation(
        rows,
        Generator(instructions, max_tokens=args.max_tokens),
        out,
        threads=effective_threads(lm, args.threads),
        refine=args.refine,
        best_of=args.best_of,
        judge=judge,
    )
    wanted = {row.key for row in rows}
    records = [obj for _, obj in read_jsonl(out) if str(obj.get("key")) in wanted] if out.exists() else []
    table = Table(title=f"generation for {len(rows)} suite row(s)")
    for column in ("generated", "resumed", "failed"):
        table.add_column(column, justify="right")
    row_values = [str(report.written), str(report.resumed), str(len(report.failures))]
    if judge is not None:
        selection = [r["selection"] for r in records if "selection" in r]
        if selection:
            table.add_column("mean sample score", justify="right")
            row_values.append(_mean([c.get("score") for s in selection for c in s["candidates"]]))
        refinement = [r["refinement"] for r in records if "refinement" in r]
        if refinement:
            table.add_column("score before refine", justify="right")
            row_values.append(_mean([r["initial_score"] for r in refinement]))
        table.add_column("final score", justify="right")
        row_values.append(_mean([r.get("score") for r in records]))
    table.add_row(*row_values)
    console.print(table)
    for key, error in report.failures[:5]:
        console.print(f"[red]failed[/] row {key}: {error}")
    console.print(f"wrote {out}")
    if report.failures:
        console.print("[yellow]failed rows were not written; rerun the same command to retry them[/]")
        sys.exit(1)


def add_generate_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``bineval generate``."""
    gen = sub.add_parser(
        "generate", parents=[common], help="generate responses to a suite's prompts, optionally improved with STICK"
    )
    gen.add_argument("--suite", required=True, help="JSONL rows: key, prompt, instruction_id_list, kwargs")
    gen.add_argument("--instructions", help="a file whose text replaces the default generation instructions")
    gen.add_argument("--refine", type=_count(0), default=0, metavar="K", help="STICK self-refinement: up to K rewrites")
    gen.add_argument("--best-of", type=_count(1), default=1, metavar="N", help="STICK best-of-N: keep the best sample")
    gen.add_argument("--limit", type=_count(1), metavar="N", help="only the first N suite rows")
    gen.add_argument("--mode", choices=("strict", "loose"), default="strict", help="verifier mode of the STICK judge")
    gen.add_argument("--max-tokens", type=_count(1), default=DEFAULT_MAX_TOKENS, help="token limit per response")
    gen.add_argument("-o", "--output", default="responses.jsonl", help="JSONL: key, prompt, response (+ STICK records)")
    gen.set_defaults(func=cmd_generate)
