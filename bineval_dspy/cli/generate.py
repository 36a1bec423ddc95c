"""``bineval generate``: responses for a suite's prompts, optionally improved with STICK; resumable."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from bineval_dspy.cli.defaults import GENERATE_MAX_TOKENS
from bineval_dspy.cli.options import add_budget_options, add_dry_run_option, budget_meter, count, lm_options
from bineval_dspy.cli.splits import add_split_option, split_rows
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode, InputError
from bineval_dspy.core.fingerprint import digest, file_digest
from bineval_dspy.core.jsonio import check_output_path, read_jsonl, read_text
from bineval_dspy.core.terminal import styled

if TYPE_CHECKING:  # DSPy loads when the command runs, never for the parser
    from bineval_dspy.lm.estimate import Plan
    from bineval_dspy.programs.generator import Generator


def _read_instructions(path: Path) -> str:
    text = read_text(path)
    if not text.strip():
        raise InputError(f"{path}: the instructions file is empty")
    return text


def _mean(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{sum(known) / len(known):.3f}" if known else "n/a"


def _program(args: argparse.Namespace, instructions: str | None) -> Generator:
    """The generator: from ``--program`` (its instructions, demos and token limit, unless ``--max-tokens`` is
    given), else the default or ``--instructions``."""
    from bineval_dspy.programs.generator import Generator
    from bineval_dspy.programs.state import load_program

    if not args.program:
        return Generator(instructions, max_tokens=args.max_tokens or GENERATE_MAX_TOKENS)
    program = load_program(Path(args.program), kind="generator").build()
    if args.max_tokens:
        program.max_tokens = args.max_tokens
    return program


STICK_QUESTIONS = 8  # the most LM-written (TICK) questions of a row's hybrid checklist: its judge's calls per response


def _plan(args: argparse.Namespace, rows: list, program: Generator, out: Path) -> Plan:
    """The LM work of the rows a run would generate (finished rows of earlier output are kept): one response each;
    with STICK also the TICK writer, every sample's and rewrite's judging and the rewrites, counted at most and
    then estimated (their prompts depend on responses not yet written)."""
    from bineval_dspy.lm.estimate import JUDGE_OVERHEAD_TOKENS, Plan, formatted, message_tokens, token_counter
    from bineval_dspy.lm.specs import DEFAULT_LM
    from bineval_dspy.programs.generator import generated_log

    spec = args.lm or DEFAULT_LM
    count, exact = token_counter(spec)
    kept = generated_log(out).finished_keys() if not args.overwrite else set()
    todo = [row for row in rows if str(row.key) not in kept]
    prompts = [message_tokens(count, formatted(program.generate, program.adapter, {"prompt": row.prompt})) for row in todo]
    calls, tokens = len(todo), sum(prompts)
    stick = args.refine or args.best_of > 1
    if stick:  # each response judged by up to STICK_QUESTIONS LM questions; each rewrite sees the prompt and a response
        responses = args.best_of + args.refine
        response_tokens = program.max_tokens
        judge_prompt = [p + response_tokens + JUDGE_OVERHEAD_TOKENS for p in prompts]
        calls += len(todo) * (args.best_of - 1 + 1 + responses * STICK_QUESTIONS + args.refine)
        tokens += sum(p * (args.best_of - 1) + p + j * responses * STICK_QUESTIONS + (p + response_tokens) * args.refine for p, j in zip(prompts, judge_prompt))
    what = f"generate {len(todo)} row(s)" + (f" with STICK (best of {args.best_of}, refine {args.refine}; at most)" if stick else "")
    what += f" ({len(kept)} finished row(s) of {out} kept)" if kept else ""
    return Plan(what, calls, tokens, program.max_tokens, exact, spec, args.api_base, estimated="STICK's judge prompts and rewrites" if stick else "")


def cmd_generate(args: argparse.Namespace) -> int:
    """Generate (optionally STICK-improved) responses for a suite; resumable into output made the same way."""
    from bineval_dspy.checklists.tick import TickQuestionWriter
    from bineval_dspy.cli.judge import runtime_priced
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.judges.runner import parallelism
    from bineval_dspy.lm import runtime
    from bineval_dspy.lm.runtime import effective_threads, lm_identity
    from bineval_dspy.programs.generator import generated_log, run_generation, unchecked
    from bineval_dspy.programs.records import Selection, SelectionStats
    from bineval_dspy.programs.state import demos_of, program_path
    from bineval_dspy.programs.weights import weights_of
    from bineval_dspy.suites.rows import load_suite
    from bineval_dspy.verifiers import code_digest

    suite_path = Path(args.suite)
    rows = load_suite(suite_path)
    if not rows:
        raise InputError(f"{suite_path}: no suite rows")
    rows = split_rows(rows, args)
    rows = rows[: args.limit] if args.limit else rows
    if args.program and args.instructions:
        raise InputError("give --program or --instructions, not both: a program file holds its instructions")
    if args.stop_at_pass and args.best_of < 2:
        raise InputError("--stop-at-pass stops Best-of-N early: give it with --best-of N (N >= 2)")
    instructions = _read_instructions(Path(args.instructions)) if args.instructions else None
    out = Path(args.output)
    if args.dry_run:
        shown.print(_plan(args, rows, _program(args, instructions), out).summary())
        return ExitCode.OK
    inputs = [Path(path) for path in (args.instructions,) if path] + ([program_path(Path(args.program))] if args.program else [])
    check_output_path(out, suite_path, *inputs)
    if out.exists():
        generated_log(out).finished_keys()  # a malformed output file is reported before any LM is loaded
    lm = runtime.configure(lm_options(args), args.cache_dir)
    meter = budget_meter(args, [lm.model])
    program = _program(args, instructions)
    judge = BinaryJudge(verifier_mode=args.mode) if (args.refine or args.best_of > 1) else None
    writer = TickQuestionWriter() if judge is not None else None
    fingerprint = {
        "suite": file_digest(suite_path),
        "instructions": digest(program.generate.signature.instructions),
        **({"demos": digest(json.dumps(demos_of(program), sort_keys=True))} if program.generate.demos else {}),
        "lm": lm_identity(lm),
        **({"weights": weights.adapter_sha256} if (weights := weights_of(program)) is not None else {}),  # it runs on these
        "max_tokens": str(program.max_tokens),
        "refine": str(args.refine),
        "best_of": str(args.best_of),
        **({"stop_at_pass": "1"} if args.stop_at_pass else {}),  # fewer samples, another pick: not the same output
        "judge": judge.spec().model_dump_json() if judge is not None else "none",
        **({"verifiers": code_digest()} if judge is not None else {}),  # refinement and Best-of-N grade by them
    }
    generated_log(out).open(fingerprint, args.overwrite)
    plan = parallelism(lm, 0, threads=args.threads)  # rows generated at once, as the judging runner runs rows
    effective_threads(lm, args.threads or 1, asked=True)  # the embedded model says it ignores --threads
    if judge is not None:
        judge.threads = plan.questions
    report = run_generation(
        rows,
        program,
        out,
        threads=plan.rows,
        refine=args.refine,
        best_of=args.best_of,
        judge=judge,
        writer=writer,
        meter=meter,
        stop_at_pass=args.stop_at_pass,
    )
    wanted = {row.key for row in rows}
    records = [obj for _, obj in read_jsonl(out) if str(obj.get("key")) in wanted] if out.exists() else []
    table = Table(title=f"generation for {len(rows)} suite row(s)")
    for column in ("generated", "resumed", "failed"):
        table.add_column(column, justify="right")
    row_values = [str(report.written), str(report.resumed), str(len(report.failures))]
    stats = None
    if judge is not None:
        selection = [Selection.model_validate(r["selection"]) for r in records if "selection" in r]
        stats = SelectionStats.of(selection)
        if selection:
            table.add_column("mean sample score", justify="right")
            row_values.append(_mean([c.get("score") for s in selection for c in s.candidates]))
        refinement = [r["refinement"] for r in records if "refinement" in r]
        if refinement:
            table.add_column("score before refine", justify="right")
            row_values.append(_mean([r["initial_score"] for r in refinement]))
        table.add_column("final score", justify="right")
        row_values.append(_mean([r.get("score") for r in records]))
    table.add_row(*row_values)
    shown.print(table)
    if stats is not None:
        shown.print(f"best-of-{stats.n}: {stats.text()}")
    if writer is not None and writer.fallbacks:  # those rows were judged by their code checks alone
        console.print(
            f"{writer.fallbacks} row(s) got no TICK questions (the LM's reply did not parse): code checks only; "
            "rerun with --overwrite to ask again", style="yellow",
        )
    for key, error in report.failures[:5]:
        console.print(styled(("failed", "red"), f" row {key}: {error}"))
    shown.print(f"wrote {report.written} row(s) to {out}" if report.written else f"nothing new written to {out}")
    console.print(f"cost: {report.usage.summary(unknown_price=not runtime_priced(lm.model))}")
    if report.stopped is not None:
        raise report.stopped
    if report.failures:
        console.print("failed rows were not written; rerun the same command to retry them", style="yellow")
        return ExitCode.INCOMPLETE
    blank = [r["key"] for r in records if not str(r.get("response") or "").strip()]
    partial = [r["key"] for r in records if unchecked(r)]
    for keys, what in ((blank, "a blank response"), (partial, "unanswered checks")):
        if keys:  # no response, or STICK chose or revised it with part of the checklist unanswered: not a clean result
            console.print(f"{len(keys)} row(s) have {what} (first: key {keys[0]}); rerun to retry them", style="yellow")
    return ExitCode.INCOMPLETE if blank or partial else ExitCode.OK


def add_generate_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``bineval generate``."""
    gen = sub.add_parser(
        "generate", parents=[common], help="generate responses to a suite's prompts, optionally improved with STICK"
    )
    gen.add_argument("--suite", required=True, help="JSONL rows: key, prompt, instruction_id_list, kwargs")
    gen.add_argument("--instructions", help="a file whose text replaces the default generation instructions")
    gen.add_argument("--program", metavar="PROGRAM", help="an optimizer's program.json (or its run directory): its instructions, demos and token limit")
    add_split_option(gen)
    gen.add_argument("--refine", type=count(0), default=0, metavar="K", help="STICK self-refinement: up to K rewrites")
    gen.add_argument("--best-of", type=count(1), default=1, metavar="N", help="STICK best-of-N: keep the best sample")
    gen.add_argument("--stop-at-pass", action="store_true", help="with --best-of: draw no sample after the first that passes every check")
    gen.add_argument("--limit", type=count(1), metavar="N", help="only the first N suite rows")
    gen.add_argument("--mode", choices=("strict", "loose"), default="strict", help="verifier mode of the STICK judge")
    gen.add_argument("--max-tokens", type=count(1), help=f"token limit per response (default {GENERATE_MAX_TOKENS}, or the --program's)")
    gen.add_argument("-o", "--output", default="responses.jsonl", help="JSONL: key, prompt, response (+ STICK records)")
    gen.add_argument("--overwrite", action="store_true", help="replace earlier output instead of resuming it")
    add_dry_run_option(gen)
    add_budget_options(gen, "row")
    gen.set_defaults(func=cmd_generate)
