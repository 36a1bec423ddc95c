"""``bineval finetune CONFIG.toml``: train the embedded model's weights on samples its checklists approve (a
generator) or on reference verdicts (a judge), and score the result against the start on test."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from bineval_dspy.cli.experiment import add_size_options, sized
from bineval_dspy.cli.options import add_example_option, add_verifiers_option, command_line_lm
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode

if TYPE_CHECKING:  # DSPy loads when the command runs, never for the parser
    from bineval_dspy.experiment.config import ExperimentConfig
    from bineval_dspy.finetune.config import FinetuneConfig

FINETUNED_ARM = "finetuned"


def as_experiment(config: FinetuneConfig) -> ExperimentConfig:
    """The run as an experiment: the start program against the fine-tuned one on test, in the config's run
    directory (so ``bineval show`` and ``report`` read it like any experiment)."""
    from bineval_dspy.experiment.config import ExperimentConfig
    from bineval_dspy.experiment.params import FinetuneArm, StartArm

    arm = FinetuneArm(name=FINETUNED_ARM, train_data=config.train_data, finetune=config.finetune.model_dump(exclude_defaults=True))
    base = config.model_dump(exclude={"train_data", "finetune", "source"})
    return ExperimentConfig(**base, source=config.source, name=Path(config.source).stem or "finetune", arms=[StartArm(name="start"), arm])


def cmd_finetune(args: argparse.Namespace) -> int:
    """Sample, select, train and export (each stage resumes); then start against fine-tuned on test."""
    from bineval_dspy.experiment.runner import markdown, run_experiment
    from bineval_dspy.finetune.config import load_finetune_config
    from bineval_dspy.lm import runtime
    from bineval_dspy.programs.state import PROGRAM_FILE, load_program

    config, options = command_line_lm(args, load_finetune_config(Path(args.config)))
    experiment = sized(as_experiment(config), args, options.api_base)
    if experiment is None:  # --dry-run: the plan printed
        return ExitCode.OK
    lm = runtime.configure(options, args.cache_dir)
    results = run_experiment(experiment, lm, say=console.print)
    run_dir = experiment.run_dir
    program = load_program(run_dir / "arms" / FINETUNED_ARM / PROGRAM_FILE)
    program.save(run_dir / PROGRAM_FILE)  # `generate --program RUN_DIR` runs the fine-tuned program
    if program.weights is not None:
        report = program.weights.training
        shown.print(
            f"trained {report['method']} on {report['examples']} example(s): {report['steps']} step(s), loss "
            f"{report['first_loss'] or 0:.3f} -> {report['last_loss'] or 0:.3f}, {report['seconds']} s on {report['threads']} "
            f"thread(s), peak memory {report['peak_memory_mb']} MB"
        )
    else:
        console.print("no training data: the program is the start program", style="yellow")
    print(markdown(results))  # the table, on stdout
    console.print(f"wrote {PROGRAM_FILE} and results.json in {run_dir}")
    console.print(f"cost: {results.usage.summary()} (sampling, training data and the test evaluation of both arms)")
    if results.incomplete:
        console.print("the test evaluation has unanswered verdicts or failed outputs; rerun to retry them", style="yellow")
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def add_finetune_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``bineval finetune``."""
    parser = sub.add_parser(
        "finetune", parents=[common],
        help="fine-tune the embedded model: a generator on its samples that pass the checks, a judge on reference verdicts (TOML config)",
    )
    parser.add_argument(
        "config",
        help="an optimize run description plus [finetune] and optional train_data (its keys: bineval finetune --example); writes "
        "RUN_DIR/program.json, results.json (start against fine-tuned on test), splits.json and RUN_DIR/arms/ (samples, data set, "
        "checkpoints, adapter)",
    )
    add_example_option(parser, "bineval_dspy.finetune.config.FinetuneConfig", "bineval finetune: a fine-tuning config")
    add_size_options(parser)
    add_verifiers_option(parser)
    parser.set_defaults(func=cmd_finetune)
