"""``bineval experiment CONFIG.toml``: arms side by side (start, optimizers, GEPA, Best-of-N, STICK), one table."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from bineval_dspy.cli.options import (
    add_dry_run_option,
    add_example_option,
    add_verifiers_option,
    command_line_lm,
    count,
    lm_options,
)
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode

if TYPE_CHECKING:  # DSPy loads when the command runs, never for the parser
    import dspy

    from bineval_dspy.experiment.config import ExperimentConfig
    from bineval_dspy.experiment.params import ArmLM


def tiny(config: ExperimentConfig) -> ExperimentConfig:
    """The same experiment at smoke-test size, in its own run directory: few groups per split (the first of each
    split file), one iteration, short outputs, and each arm at its kind's smoke-test size (``ArmKind.tiny``)."""
    from bineval_dspy.experiment.arms import ARMS
    from bineval_dspy.experiment.sizes import TINY

    data = config.data
    update = {name: min(value, TINY[name]) for name in ("train", "val", "test") if isinstance(value := getattr(data, name), int)}
    return config.model_copy(update={
        "data": data.model_copy(update={**update, "limit": {n: TINY[n] for n in ("train", "val", "test")}}),
        "program": config.program.model_copy(update={"max_tokens": min(config.program.max_tokens, TINY["max_tokens"])}),
        "optimizer": config.optimizer.model_copy(update={"max_iterations": TINY["max_iterations"]}),
        "arms": [ARMS[arm.kind].tiny(arm) for arm in config.arms],
        "resamples": min(config.resamples, 200),
        "run_dir": config.run_dir.with_name(config.run_dir.name + "-tiny"),
    })


def add_size_options(parser: argparse.ArgumentParser) -> None:
    """``--dry-run`` and ``--tiny``, as ``experiment`` and ``finetune`` (an experiment of two arms) take them."""
    add_dry_run_option(parser)
    parser.add_argument("--tiny", action="store_true", help="the same run at smoke-test size, in RUN_DIR-tiny (what the test suite runs)")


def sized(config: ExperimentConfig, args: argparse.Namespace, api_base: str | None) -> ExperimentConfig | None:
    """The experiment at ``--tiny`` size, its plan saved for ``show``; None once ``--dry-run`` printed the plan (every
    arm at its most; nothing is called or written)."""
    from bineval_dspy.experiment.plan import experiment_plan

    if args.tiny:
        config = tiny(config)
    plan = experiment_plan(config, config.lm, api_base)
    if args.dry_run:
        shown.print(plan.summary())
        return None
    plan.save(config.run_dir)  # `show` holds it against what the run spent
    return config


def cmd_experiment(args: argparse.Namespace) -> int:
    """Run (or resume) every arm of an experiment; ``--lm`` replaces the config's ``lm``."""
    from bineval_dspy.experiment.arms import arm_key
    from bineval_dspy.experiment.config import load_experiment
    from bineval_dspy.experiment.grid import GRID_FILE, MATRIX_FILE
    from bineval_dspy.experiment.runner import RESULTS_FILE, TABLE_FILE, markdown, run_experiment
    from bineval_dspy.lm import runtime

    config = load_experiment(Path(args.config))
    config, options = command_line_lm(args, config)
    ready = sized(config, args, options.api_base)
    if ready is None:
        return ExitCode.OK
    config = ready
    cache = runtime.run_cache_dir(args.cache_dir, config.run_dir / "cache")
    lm = runtime.configure(options, cache)
    if args.arm or args.ray:
        from bineval_dspy.experiment.jobs import arms_on_ray
        from bineval_dspy.experiment.runner import optimize_arms

        names = args.arm or [arm.name for arm in config.arms]
        if args.ray:
            spent = arms_on_ray(config, options, cache, names, args.ray, args.ray_workers)
        else:
            spent = optimize_arms(config, lm, names, say=console.print)
        for name, cost in spent.items():
            console.print(f"arm {name}: optimized in {config.run_dir}; cost {cost.summary()}")
        if args.arm:  # one job of a sweep: a final run without --arm scores every arm on test
            return ExitCode.OK
    def arm_lm(table: ArmLM, source: str) -> dspy.LM:  # an arm's own LM takes the command's options (--timeout, ...) as lm does
        arm = lm_options(args, spec=table.spec, source=source, servers=table.servers)
        if table.api_key_env or arm.destination != options.destination:  # --api-key-env's key is for the command's own servers
            arm = arm.model_copy(update={"api_key": arm_key(table, source)})
        return runtime.checked_lm(arm)

    from bineval_dspy.runs.header import headed

    with headed(config.run_dir / RESULTS_FILE, "experiment") as heading:
        results = run_experiment(config, lm, say=console.print, lm_for=arm_lm)
        heading.usage, heading.status = results.usage, "incomplete" if results.incomplete else "finished"
    print(markdown(results))  # the table, on stdout
    console.print(f"wrote {RESULTS_FILE}, {TABLE_FILE}, {MATRIX_FILE} (every test row's verdicts: Y followed, n not, ? ungraded) and {GRID_FILE} in {config.run_dir}")
    console.print(f"cost: {results.usage.summary()} (optimization and test evaluation of every arm)")
    if results.incomplete:
        console.print(f"arm(s) {', '.join(results.incomplete)} have unanswered verdicts or failed outputs on test; rerun to retry them", style="yellow")
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def add_experiment_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``bineval experiment``."""
    parser = sub.add_parser(
        "experiment", parents=[common], help="arms side by side on one test split, with paired intervals: optimizers, prompts x LMs (TOML config)"
    )
    parser.add_argument("config", help="an optimize run description plus [[arms]] (its keys: bineval experiment --example); "
                        "writes RUN_DIR/results.json, results.md, matrix.md, grid.jsonl and each arm's folder under RUN_DIR/arms")
    add_example_option(parser, "bineval_dspy.experiment.config.ExperimentConfig", "bineval experiment: an experiment config")
    add_size_options(parser)
    parser.add_argument(
        "--arm", action="append", metavar="NAME",
        help="only this arm's optimization (again for more), as one job beside others on the run directory; a run without --arm then scores every arm",
    )
    parser.add_argument("--ray", metavar="ADDRESS", help="each arm's optimization as a Ray task ('local', or a cluster's address), then every arm scored here")
    parser.add_argument("--ray-workers", type=count(1), default=2, metavar="N", help="with --ray local: the cluster's worker CPUs (default 2)")
    add_verifiers_option(parser)
    parser.set_defaults(func=cmd_experiment)
