"""``bineval verify``: grade a responses file against a suite with the code verifiers (no LM)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.table import Table

from bineval_dspy.cli.options import add_overwrite_option, add_verifiers_option, refuse_replacing
from bineval_dspy.cli.splits import add_split_option, split_rows
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode
from bineval_dspy.core.jsonio import check_output_path, rewrite_jsonl


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2%}"


def cmd_verify(args: argparse.Namespace) -> int:
    """Grade a responses file against a suite with the code verifiers; no LM is involved. Exits 1 when an
    instruction is ungraded or a row was skipped: the accuracies then rest on less than the files hold."""
    from bineval_dspy.core.version import __version__
    from bineval_dspy.runs.header import RunHeader, Status, write_header
    from bineval_dspy.suites.grading import verify_files  # here: the parser loads no DSPy

    out = Path(args.output)
    check_output_path(out, Path(args.suite), Path(args.responses))
    refuse_replacing(out, args.overwrite)
    results, stats = verify_files(Path(args.suite), Path(args.responses), args.mode, args.skip_invalid, lambda rows: split_rows(rows, args))
    rewrite_jsonl(out, (r.model_dump() for r in results))
    status: Status = "incomplete" if stats.ungraded_instructions else "finished"  # an ungraded instruction: never "finished"
    write_header(out, RunHeader(kind="verify", version=__version__, status=status))  # what show and report read it as
    table = Table(title=f"{stats.mode} verification of {len(results)} response(s)")
    for column in ("level", "followed", "total", "accuracy"):
        table.add_column(column, justify="left" if column == "level" else "right")
    table.add_row("prompt", str(stats.prompts_followed), str(stats.prompts), _percent(stats.prompt_accuracy))
    table.add_row(
        "instruction", str(stats.instructions_followed), str(stats.instructions), _percent(stats.instruction_accuracy)
    )
    shown.print(table)
    if stats.ungraded_instructions:
        console.print(
            f"{stats.ungraded_instructions} instruction(s) ungraded (kwargs their verifier rejects, or a verifier that failed; "
            f"reasons in 'ungraded' of {out}), leaving {stats.ungraded_prompts} prompt(s) with an unknown "
            "outcome; both are left out of the accuracies",
            style="yellow",
        )
    if stats.skipped_suite_rows or stats.skipped_responses:
        console.print(
            f"skipped {stats.skipped_suite_rows} invalid suite row(s) and "
            f"{stats.skipped_responses} invalid or unmatched response(s)",
            style="yellow",
        )
    if stats.suite_rows_without_response:
        console.print(
            f"{stats.suite_rows_without_response} suite row(s) had no response and were not graded: the accuracies cover part of the suite",
            style="yellow",
        )
    if args.program and args.split == "test":
        _compare_with_the_run(args, stats)
    shown.print(f"wrote {len(results)} graded row(s) to {out}")
    incomplete = stats.ungraded_instructions or stats.skipped_suite_rows or stats.skipped_responses or stats.suite_rows_without_response
    return ExitCode.INCOMPLETE if incomplete else ExitCode.OK


def _compare_with_the_run(args: argparse.Namespace, stats: Any) -> None:
    """Say whether this grading of the test split gives the accuracy the run recorded for the program (an optimize
    run's ``test.final``, an experiment or fine-tuning arm's test figure): the same responses must give the same one."""
    from bineval_dspy.experiment.runner import recorded_test

    found = recorded_test(Path(args.program), f"{stats.mode}_prompt")
    if found is None or found[0].estimate is None or stats.prompt_accuracy is None:
        return
    recorded, where = found
    here = stats.prompt_accuracy
    if abs(here - recorded.estimate) < 5e-4:
        console.print(f"{stats.mode} prompt accuracy {here:.3f}: as the run recorded for this program on test ({where})")
    else:
        console.print(f"{stats.mode} prompt accuracy {here:.3f}, where the run recorded {recorded.estimate:.3f} for this program on test: these are other responses", style="yellow")


def add_verify_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``bineval verify``; it takes none of the LM options in ``common`` (it calls no LM)."""
    verify_cmd = sub.add_parser(
        "verify", help="grade responses against an IFBench/IFEval-style suite with code verifiers (no LM)"
    )
    verify_cmd.add_argument("--suite", required=True, help="JSONL rows: key, prompt, instruction_id_list, kwargs; or a template suite (.toml: template, rows, checks)")
    verify_cmd.add_argument("--responses", required=True, help="JSONL rows: response, and key or prompt")
    verify_cmd.add_argument("--mode", choices=("strict", "loose"), default="strict", help="IFEval's grading mode")
    verify_cmd.add_argument("--program", metavar="PROGRAM", help="with --split: the run (its program.json or folder: optimize, experiment arm, finetune) whose split to grade")
    add_split_option(verify_cmd)
    verify_cmd.add_argument(
        "--skip-invalid",
        action="store_true",
        help="skip (and count) invalid or unmatched rows; malformed JSON still stops",
    )
    verify_cmd.add_argument("-o", "--output", default="results.jsonl", help="graded rows, official IFBench format")
    add_overwrite_option(verify_cmd)
    add_verifiers_option(verify_cmd)
    verify_cmd.set_defaults(func=cmd_verify)
