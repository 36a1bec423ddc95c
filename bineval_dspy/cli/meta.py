"""``bineval meta-eval CONFIG.toml``: score a dataset with every configured method, correlate with the humans."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from bineval_dspy.cli.defaults import DEFAULT_THREADS
from bineval_dspy.cli.options import (
    add_budget_options,
    add_dry_run_option,
    add_example_option,
    add_ray_options,
    add_verifiers_option,
    budget_meter,
    command_line_lm,
    count,
)
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import BudgetExhausted, ExitCode

if TYPE_CHECKING:  # DSPy loads when the command runs, never for the parser
    from bineval_dspy.meta.results import MetaEvalResults


def cmd_meta_eval(args: argparse.Namespace) -> int:
    """Run (or resume) a meta-evaluation; ``--lm`` and ``--limit`` given on the command line replace the config's."""
    from bineval_dspy.lm import runtime
    from bineval_dspy.meta.config import load_config
    from bineval_dspy.meta.runner import SCORES_FILE, Cluster, run_meta_eval

    config = load_config(Path(args.config))
    config, options = command_line_lm(args, config)
    if args.limit is not None and args.limit != config.limit:
        console.print(f"--limit {args.limit} replaces limit = {config.limit} of {config.source}")
        config = config.model_copy(update={"limit": args.limit})
    if args.dry_run:  # every LM method on every sampled output; nothing is called or written
        from bineval_dspy.meta.plan import meta_plan

        shown.print(meta_plan(config, config.lm, options.api_base).summary())
        return ExitCode.OK
    lm = runtime.configure(options, args.cache_dir) if config.uses_lm else None
    models = [m.lm or lm.model for m in config.methods if m.uses_lm] if lm is not None else []
    meter = budget_meter(args, models)
    cluster = Cluster(address=args.ray, workers=args.ray_workers, lm=options if config.uses_lm else None, cache_dir=args.cache_dir) if args.ray else None
    try:
        results = run_meta_eval(config, lm=lm, threads=args.threads or DEFAULT_THREADS, overwrite=args.overwrite, meter=meter, cluster=cluster)
    except BudgetExhausted:
        console.print(f"cost: {meter.spent.summary()}; scores so far in {config.run_dir / SCORES_FILE} (no results table yet)")
        raise
    _report(results)
    if results.missing:
        console.print(f"{results.missing} score(s) missing (no usable LM answer): left out of the correlations; rerun to retry them", style="yellow")
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def _report(results: MetaEvalResults) -> None:
    """Write the results, print the table (as results.md has it, on stdout: wide, never cut) and the cost."""
    from bineval_dspy.meta.report import write_report
    from bineval_dspy.meta.runner import SCORES_FILE

    md, table, full = write_report(results)
    print(md.read_text(encoding="utf-8"), end="")
    console.print(f"wrote {SCORES_FILE}, {md.name}, {table.name} and {full.name} in {results.run_dir}")
    console.print(f"cost: {results.usage.summary()} (every score of the table, over the runs that made them)")


def add_meta_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``bineval meta-eval``."""
    parser = sub.add_parser("meta-eval", parents=[common], help="correlate judges with human scores on a dataset (TOML config)")
    parser.add_argument("config", help="run description (TOML); its keys: bineval meta-eval --example")
    add_example_option(parser, "bineval_dspy.meta.config.MetaEvalConfig", "bineval meta-eval: a meta-evaluation config")
    parser.add_argument("--limit", type=count(1), help="score the outputs of this many documents (seeded), replacing the config's")
    parser.add_argument("--overwrite", action="store_true", help="start the run directory afresh instead of resuming it")
    add_dry_run_option(parser)
    add_budget_options(parser, "score")
    add_ray_options(parser, "score the outputs", "each with --threads outputs at a time")
    add_verifiers_option(parser)
    parser.set_defaults(func=cmd_meta_eval)
