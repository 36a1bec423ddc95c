"""``bineval generate``: responses for a suite's prompts, optionally improved with STICK; resumable."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from bineval_dspy.cli.defaults import GENERATE_MAX_TOKENS
from bineval_dspy.cli.options import (
    add_budget_options,
    add_dry_run_option,
    add_judge_options,
    add_ray_options,
    add_verifiers_option,
    budget_of,
    count,
    lm_options,
)
from bineval_dspy.cli.splits import add_split_option
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode
from bineval_dspy.core.terminal import styled

if TYPE_CHECKING:  # DSPy loads when the command runs, never for the parser
    from bineval_dspy.programs.suite_file import GenerateSuite


def _mean(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{sum(known) / len(known):.3f}" if known else "n/a"


def generate_suite(args: argparse.Namespace) -> GenerateSuite:
    """The run the command line describes."""
    from bineval_dspy.programs.suite_file import GenerateSuite

    return GenerateSuite(
        suite=Path(args.suite), output=Path(args.output), instructions=Path(args.instructions) if args.instructions else None,
        program=Path(args.program) if args.program else None, split=args.split, limit=args.limit, refine=args.refine,
        best_of=args.best_of, stop_at_pass=args.stop_at_pass, verifier_mode=args.verifier_mode, max_tokens=args.max_tokens, enforce=args.enforce,
        overwrite=args.overwrite, threads=args.threads, lm=lm_options(args), cache_dir=Path(args.cache_dir) if args.cache_dir else None,
        budget=budget_of(args), ray=args.ray, workers=args.ray_workers,
    )  # fmt: skip


def enforcement_summary(records: list[dict]) -> str:
    """One line: rows steered and rows with no constraint found, constraints enforced, how many held when checked
    after decoding, and those not enforced (``programs.records.EnforcementSummary``); a run that enforced nothing
    says so first."""
    from bineval_dspy.programs.records import Enforced, EnforcementSummary

    return EnforcementSummary.of([Enforced.model_validate(r) for r in records]).line()


def cmd_generate(args: argparse.Namespace) -> int:
    """Generate (optionally STICK-improved) responses for a suite (``programs.suite_file.run_suite``); resumable."""
    from bineval_dspy.lm.prices import price_of
    from bineval_dspy.programs.generator import failed_samples, unchecked
    from bineval_dspy.programs.records import Selection, SelectionStats
    from bineval_dspy.programs.suite_file import plan_suite, run_suite

    config = generate_suite(args)
    if args.dry_run:
        shown.print(plan_suite(config).summary())
        return ExitCode.OK
    run = run_suite(config)
    report, records = run.report, run.records
    table = Table(title=f"generation for {len(run.rows)} suite row(s)")
    for column in ("generated", "resumed", "failed"):
        table.add_column(column, justify="right")
    row_values = [str(report.written), str(report.resumed), str(len(report.failures))]
    stats = None
    if config.stick:
        selection = [Selection.model_validate(r["selection"]) for r in records if "selection" in r]
        stats = SelectionStats.of(selection)
        if selection:
            table.add_column("mean sample score", justify="right")
            row_values.append(_mean([c.get("score") for s in selection for c in s.candidates]))
        refinement = [r["refinement"] for r in records if "refinement" in r]
        if refinement:
            table.add_column("score before refine", justify="right")
            row_values.append(_mean([r["initial_score"] for r in refinement]))
        table.add_column("final score", justify="right")
        row_values.append(_mean([r.get("score") for r in records]))
    table.add_row(*row_values)
    shown.print(table)
    enforced = [r["enforcement"] for r in records if "enforcement" in r]
    if enforced:
        shown.print(enforcement_summary(enforced))
    if stats is not None:
        shown.print(f"best-of-{stats.n}: {stats.text()}")
    if any(row.template is not None for row in run.rows):  # a template suite's `checks`: graded here, as verify grades them
        from bineval_dspy.cli.verify import show_stats
        from bineval_dspy.suites.grading import verify_records

        checked = verify_records(run.rows, records)
        show_stats(checked, f"the template suite's checks on {checked.prompts + checked.ungraded_prompts} response(s) (strict, as verify grades them)", f"bineval verify --suite {config.suite} --responses {config.output} names them")
    if run.tick_fallbacks:  # those rows were judged by their code checks alone
        console.print(
            f"{run.tick_fallbacks} row(s) got no TICK questions (the LM's reply did not parse): code checks only; "
            "rerun with --overwrite to ask again", style="yellow",
        )
    for key, error in report.failures[:5]:
        console.print(styled(("failed", "red"), f" row {key}: {error}"))
    out = config.output
    shown.print(f"wrote {report.written} row(s) to {out}" if report.written else f"nothing new written to {out}")
    console.print(f"cost: {report.usage.summary(unknown_price=price_of(run.model) is None)}")
    if report.stopped is not None:
        raise report.stopped
    if report.failures:
        console.print("failed rows were not written; rerun the same command to retry them", style="yellow")
        return ExitCode.INCOMPLETE
    blank = [r["key"] for r in records if not str(r.get("response") or "").strip()]
    partial = [r["key"] for r in records if unchecked(r)]
    for keys, what in ((blank, "a blank response"), (partial, "unanswered checks")):
        if keys:  # no response, or STICK chose or revised it with part of the checklist unanswered: not a clean result
            console.print(f"{len(keys)} row(s) have {what} (first: key {keys[0]}); rerun to retry them", style="yellow")
    short = [(r["key"], failed) for r in records if (failed := failed_samples(r))]
    if short:  # chosen among fewer samples than asked for
        console.print(
            f"{sum(failed for _, failed in short)} Best-of-N sample(s) failed in {len(short)} row(s) (first: key {short[0][0]}): "
            "not drawn, not counted in pass@k; rerun to draw them again", style="yellow",
        )
    return ExitCode.INCOMPLETE if blank or partial or short or run.tick_fallbacks else ExitCode.OK


def add_generate_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``bineval generate``."""
    gen = sub.add_parser(
        "generate", parents=[common], help="generate responses to a suite's prompts, optionally improved with STICK"
    )
    gen.add_argument("--suite", required=True, help="JSONL rows: key, prompt, instruction_id_list, kwargs; or a template suite (.toml: template, rows, checks)")
    gen.add_argument("--instructions", help="a file whose text replaces the default generation instructions")
    gen.add_argument("--program", metavar="PROGRAM", help="an optimizer's program.json (or its run directory): its instructions, demos and token limit")
    add_split_option(gen)
    gen.add_argument("--refine", type=count(0), default=0, metavar="K", help="STICK self-refinement: up to K rewrites")
    gen.add_argument("--best-of", type=count(1), default=1, metavar="N", help="STICK best-of-N: keep the best sample")
    gen.add_argument("--stop-at-pass", action="store_true", help="with --best-of: draw no sample after the first that passes every check")
    gen.add_argument("--limit", type=count(1), metavar="N", help="only the first N suite rows")
    add_judge_options(gen, ("verifier_mode",))  # the STICK judge's
    gen.add_argument("--max-tokens", type=count(1), help=f"token limit per response (default {GENERATE_MAX_TOKENS}, or the --program's)")
    gen.add_argument(
        "--enforce", choices=("extracted", "annotated"),
        help="decode under each prompt's code-checkable constraints: those its own words state (extracted) or the suite's instruction ids (annotated); on the embedded models, or a llama.cpp server as --lm llamacpp/<model> --api-base URL (sent as a grammar; what it cannot express is reported as not enforced); every output is still verified after",
    )  # fmt: skip
    gen.add_argument("-o", "--output", default="responses.jsonl", help="JSONL: key, prompt, response (+ STICK records)")
    gen.add_argument("--overwrite", action="store_true", help="replace earlier output instead of resuming it")
    add_ray_options(gen, "generate the rows", "each with --threads rows at a time")
    add_dry_run_option(gen)
    add_budget_options(gen, "row")
    add_verifiers_option(gen)
    gen.set_defaults(func=cmd_generate)
