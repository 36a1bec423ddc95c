"""``bineval eval CONFIG.toml``: prompts x LMs on one suite, one matrix, each column's paired difference from a
baseline with its interval; resumable column by column."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from bineval_dspy.cli.options import add_dry_run_option, add_example_option, lm_options
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode

if TYPE_CHECKING:  # DSPy loads when the command runs, never for the parser
    import dspy

    from bineval_dspy.evalmatrix import LMSpec


def cmd_eval(args: argparse.Namespace) -> int:
    """Generate every column (resuming each), grade and judge every response, then write and print the matrix."""
    from bineval_dspy.core.jsonio import load_model
    from bineval_dspy.core.schema import Checklist
    from bineval_dspy.evalmatrix import MATRIX_FILE, eval_plan, load_eval_config, run_eval
    from bineval_dspy.judges.code import check_verifiers
    from bineval_dspy.lm import runtime
    from bineval_dspy.suites.rows import load_suite

    config = load_eval_config(Path(args.config))
    rows = load_suite(config.suite)[: config.limit] if config.limit else load_suite(config.suite)
    checklist = load_model(config.checklist, Checklist) if config.checklist else None
    if checklist is not None:
        check_verifiers(checklist, str(config.checklist))
    plan = eval_plan(config, rows, checklist, args.api_base)
    if args.dry_run:
        shown.print(plan.summary())
        return ExitCode.OK
    judge_lm = runtime.configure(lm_options(args, spec=config.judge_lm, source=f"{config.source}: field 'judge_lm' ="), runtime.run_cache_dir(args.cache_dir, config.run_dir / "cache"))
    plan.save(config.run_dir)  # `show` holds it against what the run spent

    def column_lm(spec: LMSpec) -> dspy.LM:  # a column's LM takes the command's options (--api-base, --timeout, ...) as the judge's does
        options = lm_options(args, spec=spec.lm, source=f"{config.source}: field 'lms' ({spec.name}) =", servers=spec.servers)
        return runtime.checked_lm(options.model_copy(update={"max_tokens": spec.max_tokens}))

    run = run_eval(config, rows, checklist, judge_lm, column_lm, overwrite=args.overwrite, say=console.print)
    print(run.matrix, end="")  # the matrix, on stdout, wide: never cut
    what = "Y followed, n not, ? ungraded" + ("; then the checklist score" if checklist is not None else "")
    shown.print(f"wrote results.json, {MATRIX_FILE} and grid.jsonl in {config.run_dir} ({what}; mean score with 95% interval, paired difference from {run.results.baseline})")
    console.print(f"cost: {run.results.usage.summary()}")
    if run.incomplete:
        console.print(f"{run.incomplete} cell(s) incomplete (failed, ungraded or unanswered): rerun the same command to retry them", style="yellow")
        if run.first_failure:
            console.print(f"first failure: {run.first_failure}", style="yellow")
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def add_eval_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``bineval eval``."""
    parser = sub.add_parser("eval", parents=[common], help="prompts x LMs on one suite: a matrix with paired intervals against a baseline (TOML config)")
    parser.add_argument("config", help="an eval matrix description (TOML; its keys: bineval eval --example); writes RUN_DIR/results.json, matrix.md, grid.jsonl, plan.json, columns/")
    add_example_option(parser, "bineval_dspy.evalmatrix.EvalConfig", "bineval eval: an eval matrix config")
    parser.add_argument("--overwrite", action="store_true", help="generate every column afresh instead of resuming it")
    add_dry_run_option(parser)
    parser.set_defaults(func=cmd_eval)
