"""``bineval finetune CONFIG.toml``: train the embedded model's weights on samples its checklists approve."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from bineval_dspy.cli.options import add_example_option, command_line_lm, lm_options
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode

if TYPE_CHECKING:  # DSPy loads when the command runs, never for the parser
    from bineval_dspy.optimize.results import SplitScore


def cmd_finetune(args: argparse.Namespace) -> int:
    """Sample, select, train and export (each stage resumes); then score start and fine-tuned on test."""
    from bineval_dspy.finetune.config import load_finetune_config, run_finetune
    from bineval_dspy.lm import runtime
    from bineval_dspy.lm.runtime import lm_identity

    config = load_finetune_config(Path(args.config))
    config, source = command_line_lm(args, config)
    lm = runtime.configure(lm_options(args, spec=config.lm, source=source), args.cache_dir)
    results = run_finetune(config, lm_identity(lm))
    training = results.training
    source = (
        f"{results.samples} sample(s) ({results.passing_samples} passing every code check)" if results.samples else "reference verdicts"
    )
    if training:
        shown.print(
            f"trained {training.get('method')} on {results.training_examples} example(s) from {source}: {training.get('steps')} "
            f"step(s), loss {training.get('first_loss') or 0:.3f} -> {training.get('last_loss') or 0:.3f}, {training.get('seconds')} s, "
            f"peak memory {training.get('peak_memory_mb')} MB"
        )
    if results.start is not None and results.finetuned is not None:
        for name, interval in results.difference.items():
            before, after = (_figure(score, name) for score in (results.start, results.finetuned))
            shown.print(f"test {name}: start {before}, fine-tuned {after}, difference {interval.text(signed=True)}")
    console.print(f"wrote program.json and results.json in {config.run_dir}")
    if results.finetuned is not None and (results.finetuned.unanswered or results.finetuned.errors):
        console.print("the test evaluation has unanswered verdicts or failed outputs; rerun to retry them", style="yellow")
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def _figure(score: SplitScore, name: str) -> str:
    """One test figure of a program with its interval: the score, an accuracy or kappa."""
    interval = score.interval if name == "score" else score.kappa if name == "kappa" else score.accuracy[name]
    return interval.text() if interval is not None else "n/a"


def add_finetune_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``bineval finetune``."""
    parser = sub.add_parser(
        "finetune", parents=[common], help="fine-tune the embedded model: a generator on its samples that pass the checks, a judge on reference verdicts (TOML config)"
    )
    parser.add_argument(
        "config",
        help="an optimize run description plus [finetune] and optional train_data (its keys: bineval finetune "
        "--example); writes RUN_DIR/program.json, results.json, splits.json and RUN_DIR/finetune (samples, data set, checkpoints, adapter)",
    )
    add_example_option(parser, "bineval_dspy.finetune.config.FinetuneConfig", "bineval finetune: a fine-tuning config")
    parser.set_defaults(func=cmd_finetune)
