"""``bineval optimize CONFIG.toml``: run (or resume) the optimization a TOML run description gives."""

from __future__ import annotations

import argparse
from pathlib import Path

from bineval_dspy.cli.show import show_run
from bineval_dspy.core.console import console
from bineval_dspy.core.errors import ExitCode
from bineval_dspy.lm import runtime
from bineval_dspy.lm.runtime import lm_identity
from bineval_dspy.lm.specs import make_lm
from bineval_dspy.optimize.config import build, load_config, run_fingerprint


def cmd_optimize(args: argparse.Namespace) -> int:
    """Run (or resume) the optimization a config describes; ``--lm`` given on the command line replaces ``lm``."""
    config = load_config(Path(args.config))
    source = f"{config.source}: field 'lm' ="
    if args.lm is not None and args.lm != config.lm:
        console.print(f"--lm {args.lm} replaces lm = {config.lm!r} of {config.source}")
        config.lm, source = args.lm, "--lm"
    lm = runtime.configure(runtime.lm_options(args, spec=config.lm, source=source), args.cache_dir)
    student, optimizer, (train, val, _) = build(config)
    optimizer.fingerprint = run_fingerprint(config, lm_identity(lm))
    if config.lesson_lm:
        lesson_lm = make_lm(config.lesson_lm, source=f"{config.source}: field 'lesson_lm' =")
        optimizer.note_taker.set_lm(lesson_lm)
        optimizer.updater.set_lm(lesson_lm)
    optimizer.compile(student, trainset=train, valset=val)
    show_run(config.run_dir)
    return ExitCode.OK


def add_optimize_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``bineval optimize``."""
    parser = sub.add_parser("optimize", parents=[common], help="optimize a prompt from question-level feedback (TOML config)")
    parser.add_argument("config", help="run description (TOML); see README")
    parser.set_defaults(func=cmd_optimize)
