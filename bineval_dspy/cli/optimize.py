"""``bineval optimize CONFIG.toml``: run (or resume) the optimization a TOML run description gives."""

from __future__ import annotations

import argparse
from pathlib import Path

from bineval_dspy.cli.options import (
    add_budget_options,
    add_dry_run_option,
    add_example_option,
    add_verifiers_option,
    budget_meter,
    command_line_lm,
)
from bineval_dspy.core.console import console, results_on_stdout, shown
from bineval_dspy.core.errors import BudgetExhausted, ExitCode


def cmd_optimize(args: argparse.Namespace) -> int:
    """Run (or resume) the optimization a config describes; ``--lm`` given on the command line replaces ``lm``."""
    from bineval_dspy.lm import runtime
    from bineval_dspy.lm.runtime import lm_identity
    from bineval_dspy.optimize.audit import AUDIT_FILE
    from bineval_dspy.optimize.config import load_config
    from bineval_dspy.optimize.plan import optimize_plan
    from bineval_dspy.optimize.run import run_optimize

    config = load_config(Path(args.config))
    config, options = command_line_lm(args, config)
    if args.dry_run:  # the most the run may ask of its LM; nothing is called or written
        shown.print(optimize_plan(config, config.lm, options.api_base).summary())
        return ExitCode.OK
    lm = runtime.configure(options, args.cache_dir)
    optimize_plan(config, config.lm, options.api_base).save(config.run_dir)  # `show` holds it against what the run spent
    meter = budget_meter(args, [lm.model, *(spec for spec in (config.lesson_lm, config.reference.lm) if spec)])
    try:
        results = run_optimize(config, lm_identity(lm), meter)
    except BudgetExhausted:
        if (config.run_dir / AUDIT_FILE).is_file():
            _summary(config.run_dir, "the run so far")
        raise
    _summary(config.run_dir, "the whole run, as its audit records it")
    if not results.complete:
        console.print("the test evaluation has unanswered verdicts or failed outputs; rerun to retry them", style="yellow")
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def _summary(run_dir: Path, what: str) -> None:
    """The trajectory (``bineval show``), then the cost line."""
    from bineval_dspy.optimize.audit import Audit
    from bineval_dspy.optimize.results import RESULTS_FILE, RunResults
    from bineval_dspy.report.runs import load_runs
    from bineval_dspy.report.text import show_run

    with results_on_stdout():  # the trajectory and the prompt diff are the run's result; the cost line stays on stderr
        for run in load_runs(run_dir):
            show_run(run)
    test_cost = RunResults.load(run_dir).usage if (run_dir / RESULTS_FILE).is_file() else None
    extra = f"; test evaluation: {test_cost.summary()}" if test_cost is not None and test_cost.lm_calls else ""
    console.print(f"cost: {Audit.load(run_dir).usage.summary()} ({what}){extra}")


def add_optimize_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``bineval optimize``."""
    parser = sub.add_parser("optimize", parents=[common], help="optimize a prompt from question-level feedback (TOML config)")
    parser.add_argument("config", help="run description (TOML); its keys: bineval optimize --example. Writes RUN_DIR/audit.json, program.json, splits.json, results.json")
    add_example_option(parser, "bineval_dspy.optimize.config.RunConfig", "bineval optimize: a run config")
    add_dry_run_option(parser)
    add_budget_options(parser, "step (an evaluation, the lessons, the edits)")
    add_verifiers_option(parser)
    parser.set_defaults(func=cmd_optimize)
