"""``bineval tune CONFIG.toml [--workers N]``: run (or resume) an Optuna study, then save its best trial(s) and a plot."""

from __future__ import annotations

import argparse
from pathlib import Path

from bineval_dspy.cli.options import (
    add_budget_options,
    add_dry_run_option,
    add_example_option,
    add_verifiers_option,
    budget_of,
    count,
    lm_options,
)
from bineval_dspy.core.console import console, results_on_stdout, shown
from bineval_dspy.core.errors import BudgetExhausted, ExitCode


def cmd_tune(args: argparse.Namespace) -> int:
    """Run trials until the study has its count (this process, or ``--workers`` processes), then report it."""
    from bineval_dspy.lm.budget import BudgetMeter
    from bineval_dspy.lm.runtime import run_cache_dir
    from bineval_dspy.runs.header import headed
    from bineval_dspy.tune.report import RESULTS_FILE, best_table, collect, write_results
    from bineval_dspy.tune.study import open_study, prepare, run_workers, work

    path = Path(args.config)
    options = lm_options(args)
    cache_dir = run_cache_dir(args.cache_dir, None)  # None: the study's own DIR/lm-cache
    budget = budget_of(args)
    tuning = prepare(path, lm_spec=args.lm, lm_options=options, cache_dir=cache_dir, priced=budget.max_cost is not None)
    if args.dry_run:  # every trial at its base settings; no study is opened, no LM called
        from bineval_dspy.tune.plan import tune_plan

        shown.print(tune_plan(tuning, args.lm, args.api_base).summary())
        return ExitCode.OK
    study = open_study(tuning)
    code: int = ExitCode.OK
    stopped: BudgetExhausted | None = None
    with headed(tuning.folder / RESULTS_FILE, "tune") as heading:
        if args.workers == 1 and not args.ray:
            try:
                work(tuning, study, BudgetMeter(budget))
            except BudgetExhausted as exc:
                stopped = exc
        else:
            code = run_workers(path, args.workers, lm_spec=args.lm, lm_options=options, cache_dir=cache_dir, budget=budget, ray=args.ray)
        results = collect(tuning.config, study)
        saved, plot = write_results(results, tuning.folder)
        heading.usage, heading.status = results.usage, "stopped" if stopped is not None or code != ExitCode.OK else "finished"
    with results_on_stdout():  # the best trials and the written paths are the study's result
        console.print(best_table(results))
        console.print(f"wrote {saved} and {plot}")
    console.print(f"cost: {results.usage.summary()} (every trial of the study)")
    if stopped is not None:
        raise stopped
    return code


def add_tune_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``bineval tune``."""
    parser = sub.add_parser("tune", parents=[common], help="tune settings with an Optuna study (TOML config); resumable, several workers")
    parser.add_argument("config", help="study description (TOML); its keys: bineval tune --example")
    add_example_option(parser, "bineval_dspy.tune.config.TuneConfig", "bineval tune: a study config ([run] holds the trial kind's settings)")
    parser.add_argument("--workers", type=count(1), default=1, help="worker processes on the study (default 1); or run the command several times")
    parser.add_argument("--ray", metavar="ADDRESS", help="run the --workers as Ray tasks: 'local' starts a cluster here, else its address (give the study an RDB storage); needs the ray extra")
    add_dry_run_option(parser)
    add_budget_options(parser, "trial (each of --workers N gets an N-th of the budget)")
    add_verifiers_option(parser)
    parser.set_defaults(func=cmd_tune)  # --cache-dir's default (None) is shared by every command: never set it here
