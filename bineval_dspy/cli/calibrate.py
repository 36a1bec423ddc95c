"""``bineval calibrate CONFIG.toml``: train a probe judge on reference labels; its program goes in the run folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from bineval_dspy.cli.options import add_example_option
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode, InputError


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Read the config, read the judge LM's states (cached), fit the head, print its figures."""
    from bineval_dspy.lm import runtime
    from bineval_dspy.lm.cache import installed_dir
    from bineval_dspy.lm.hidden import reader_for
    from bineval_dspy.lm.specs import make_lm
    from bineval_dspy.optimize.calibrate import RESULTS_FILE, calibrate, load_calibrate
    from bineval_dspy.runs.header import headed

    config = load_calibrate(Path(args.config))
    spec = args.lm or config.lm
    if args.api_base:
        raise InputError(f"--api-base: a probe reads hidden states, which only a model in this process gives; {config.source} calibrates {spec}")
    where = "--lm" if args.lm else f"{config.source}: field 'lm' ="
    cache = runtime.run_cache_dir(args.cache_dir, None)
    if args.lm or not config.probe.backbones:
        readers = [reader_for(runtime.configure(runtime.LMOptions(spec=spec, source=where), cache), installed_dir(), where, config.probe.backend)]
    else:  # each backbone's states; the program's LM is the chosen one
        where = f"{config.source}: field 'probe.backbones'"
        runtime.configure(runtime.LMOptions(spec=config.probe.backbones[0], source=where), cache)  # first: it installs the cache the readers keep states in
        readers = [reader_for(make_lm(name, source=where), installed_dir(), f"{where}: {name}", config.probe.backend) for name in config.probe.backbones]
    with headed(config.run_dir / RESULTS_FILE, "calibration"):  # the head reads a model in this process: no LM calls billed
        results = calibrate(config, readers)
    validation = results.record["validation"]
    assert isinstance(validation, dict)
    figures = ", ".join(f"{k} {v:.3f}" for k, v in validation.items() if isinstance(v, float))
    groups = results.record["groups"]
    assert isinstance(groups, list)
    if len(results.backbones) > 1:
        shown.print("backbones (out-of-fold AUROC): " + ", ".join(f"{m} {v:.3f}" if v is not None else f"{m} -" for m, v in results.backbones.items()), markup=False)
    shown.print(f"reads {results.record['model']}; trained on {results.record['rows']} rows of {len(groups)} task(s); out-of-fold: {figures}", markup=False)
    if results.test:
        majority = results.test_majority
        baseline = f" (always {majority.answer!r} agrees {majority.agreement:.3f})" if majority is not None else ""
        shown.print(f"test ({results.test_rows} rows): " + ", ".join(f"{k} {v.text()}" for k, v in results.test.items()) + baseline, markup=False, soft_wrap=True)
    if results.standing is not None and results.standing.at_chance:  # on stdout: a file the figures go to carries it
        where = "on the test split" if results.standing.source == "test" else "out of fold (no test split)"
        shown.print(f"(!) AT CHANCE {where}: {'; '.join(results.standing.at_chance)}; its verdicts say little" + (": the learning curve below says what more labels give" if results.curve else ""), markup=False, soft_wrap=True)
    for name, compared in results.baselines.items():
        shown.print(compared.text(name), markup=False, soft_wrap=True)
    for line in results.curve.lines() if results.curve is not None else []:
        shown.print(line, markup=False, soft_wrap=True)
    if results.test_best:
        best = results.test_best.get("kappa_at_best_threshold")
        shown.print(f"  diagnostic (never used to choose): kappa at the test rows' own best threshold {best:.3f}" if best is not None else "  diagnostic: no kappa at a best threshold (one answer only)", markup=False)
    console.print(f"wrote program.json, probe.json and {RESULTS_FILE} in {config.run_dir}")
    return ExitCode.OK


def add_calibrate_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``bineval calibrate``."""
    parser = sub.add_parser(
        "calibrate", parents=[common],
        help="train a probe judge (a head on the judge LM's hidden state) on reference verdicts or human scores (TOML config)",
    )
    parser.add_argument("config", help="run description (TOML); its keys: bineval calibrate --example")
    add_example_option(parser, "bineval_dspy.optimize.calibrate.CalibrateConfig", "bineval calibrate: a probe judge's training")
    parser.set_defaults(func=cmd_calibrate)
