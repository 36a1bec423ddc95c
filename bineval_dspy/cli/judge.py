"""``bineval judge``: judge rows of (input, output) against a checklist, resumably; the scorecard printout the demo shares."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from bineval_dspy.cli.options import (
    add_budget_options,
    add_dry_run_option,
    add_judge_options,
    add_ray_options,
    add_verifiers_option,
    budget_of,
    count,
    judge_options,
    lm_options,
    share,
)
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode
from bineval_dspy.core.schema import Checklist, Scorecard
from bineval_dspy.core.scoring import join
from bineval_dspy.core.terminal import styled

if TYPE_CHECKING:  # DSPy, LiteLLM and llama.cpp load when a command runs, never for the parser
    from bineval_dspy.judges.rows import JudgedSummary
    from bineval_dspy.programs.judge_file import JudgeFile




def print_scorecard(title: str, checklist: Checklist, card: Scorecard) -> None:
    """Per-question verdicts with explanations, then per-dimension scores."""
    table = Table(title=title, show_lines=False, expand=True)
    table.add_column("dimension", style="cyan", no_wrap=True)
    table.add_column("question")
    table.add_column("answer", no_wrap=True)
    table.add_column("by", no_wrap=True)
    table.add_column("explanation", style="dim")
    colours = {"yes": "green", "no": "red", "unanswered": "yellow"}
    for q, v in join(checklist, card.verdicts):
        p = f" ({v.p_yes:.2f})" if v.p_yes is not None else ""
        by = "code" if v.judge.startswith("code:") else "probe" if v.judge.startswith("probe:") else "LM"
        table.add_row(q.dimension, q.text, styled((v.answer, colours[v.answer]), p), by, v.explanation)
    shown.print(table)
    scores = Table(show_header=True)
    for dim in [*card.dimension_scores, "overall"]:
        scores.add_column(dim, justify="right")
    values = [*card.dimension_scores.values(), card.overall]
    rescaled = [card.rescaled.get(d) for d in [*card.dimension_scores, "overall"]]
    scores.add_row(*[fmt(v) for v in values])
    scores.add_row(*[f"{fmt(v)} / 5" for v in rescaled])
    shown.print(scores)
    if card.unanswered:
        how = "scored over the answered ones" if card.partial else "dimensions with one have no score"
        console.print(f"{card.unanswered} question(s) unanswered: never counted as yes; {how}", style="yellow")


MOST_FLIPPED = 5  # questions the repeats' table lists


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"



def judge_file(args: argparse.Namespace) -> JudgeFile:
    """The run the command line describes."""
    from bineval_dspy.lm.retry import fast_path_default
    from bineval_dspy.programs.judge_file import JudgeFile

    fields = (args.input_field or "input", args.output_field or "output") if args.input_field or args.output_field else None
    return JudgeFile(
        checklist=Path(args.checklist), data=Path(args.data), output=Path(args.output), judge=judge_options(args),
        program=Path(args.program) if args.program else None, fields=fields, limit=args.limit, repeats=args.repeats, overwrite=args.overwrite,
        concurrency=args.concurrency, threads=args.threads, batch=args.batch, lm=lm_options(args),
        cache_dir=Path(args.cache_dir) if args.cache_dir else None, budget=budget_of(args), ray=args.ray, workers=args.ray_workers,
        fast_path=not args.no_fast_path and fast_path_default(),
    )  # fmt: skip


def cmd_judge(args: argparse.Namespace) -> int:
    """Judge every row of a JSONL file against a checklist (``programs.judge_file.run_file``); resumable."""
    from bineval_dspy.lm.prices import price_of
    from bineval_dspy.programs.judge_file import plan_file, run_file

    config = judge_file(args)
    if args.dry_run:
        plan, batches = plan_file(config)
        shown.print(plan.summary())
        if batches is not None:
            shown.print(batches)
        return ExitCode.OK
    run = run_file(config)
    summary = run.summary
    if run.probe_head is not None:  # on stdout above the scores: a head at chance is said where its means are read
        shown.print(("(!) " if run.probe_head.at_chance else "") + run.probe_head.line(), soft_wrap=True, markup=False)
    if summary.rows:
        _print_means(summary.checklist, summary)
        _print_failures(summary)
        _print_repeats(summary)
    for key in summary.tracked if summary.rows else []:
        _print_lineage_means(summary, key)
    if summary.unread:
        console.print(f"{summary.unread} verdict(s) without P(yes) (the LM sent no logprobs): scored by their answers, marked in each explanation", style="yellow")
    shown.print(f"wrote {run.written} row(s) to {config.output}" if run.todo else f"nothing to judge: {config.output} is complete")
    if summary.empty_lines:
        console.print(f"{len(summary.empty_lines)} row(s) have an empty output (data line(s) {_lines(summary.empty_lines)}): judged like any other, flagged 'empty_output'", style="yellow")
    if summary.degenerate is not None:
        console.print(summary.degenerate.message(), style="yellow", soft_wrap=True)  # one line, whatever the width
    console.print(f"cost: {run.spent.summary(unknown_price=price_of(run.model) is None)}")
    if run.stopped is not None:
        raise run.stopped
    below = summary.below(args.fail_under, args.fail_under_question)
    for line in below:
        console.print(f"under the gate: {line}", style="red", soft_wrap=True)
    if below:  # with unanswered rows, why they are unanswered too; a dead LM is its own exit, no quality verdict
        if summary.incomplete and _incomplete(summary) == ExitCode.LM_FAILURE:
            return ExitCode.LM_FAILURE
        return ExitCode.BELOW_GATE
    if summary.incomplete:
        return _incomplete(summary)
    return ExitCode.OK


def _incomplete(summary: JudgedSummary) -> ExitCode:
    """Say why verdicts are unanswered (the most common kind, one line, an example whole). Where every LM verdict
    failed in one LM call error (a server not listening, refusing, timing out) the LM failed: exit 3, and a rerun
    fails alike until it is fixed. Else the run is incomplete (exit 1): a rerun asks again."""
    if summary.causes:
        kind, count = summary.causes.most_common(1)[0]
        example = " ".join(summary.example_cause[kind].split())
        if count == summary.asked and len(summary.causes) == 1 and kind.startswith("LM"):
            print(f"error: every LM verdict ({count}) unanswered, each the same way: {example}", file=sys.stderr)
            return ExitCode.LM_FAILURE
        console.print(f"{sum(summary.causes.values())} LM verdict(s) unanswered, most often ({count}) so: {example}", style="yellow")
    console.print(f"{summary.incomplete} row(s) incomplete (unanswered questions): rerun the same command to judge them again", style="yellow")
    return ExitCode.INCOMPLETE


def _print_means(checklist: Checklist, summary: JudgedSummary) -> None:
    table = Table(title=f"mean scores over {summary.rows} row(s)")
    dims = [*checklist.by_dimension(), "overall"]
    for d in dims:
        table.add_column(d, justify="right")
    table.add_column("unanswered", justify="right")
    table.add_row(*[fmt(summary.mean(d)) for d in dims], str(summary.unanswered))
    shown.print(table)
    if summary.degenerate is not None:  # on stdout under the scores, so a file they are redirected to carries it too
        shown.print(f"(!) degenerate judge: {summary.degenerate.what}: these means say little about the outputs", soft_wrap=True)
    if summary.scored < summary.rows:
        console.print(f"means over the {summary.scored} of {summary.rows} row(s) that have a score", style="yellow")


def _lines(numbers: list[int], most: int = 5) -> str:
    shown = ", ".join(map(str, numbers[:most]))
    return shown + (f" and {len(numbers) - most} more" if len(numbers) > most else "")


def _print_failures(summary: JudgedSummary) -> None:
    """The rows that failed the most questions and the questions failed by the most rows: where to look first."""
    if not summary.worst:
        shown.print(f"no question failed in {summary.rows} row(s)")
        return
    shown.print(f"rows that failed most (row: failed questions): {', '.join(f'{name}: {n}' for name, n in summary.worst)}")
    table = Table(title="questions that failed most")
    table.add_column("failed", justify="right")
    table.add_column("dimension", style="cyan")
    table.add_column("question")
    for q, failed in summary.most_failed_questions():
        table.add_row(f"{failed}/{summary.rows}", q.dimension, q.text)
    shown.print(table)


def _print_repeats(summary: JudgedSummary) -> None:
    """With repeats: the run's flip rate and pass^K (on stdout, with the scores), the questions that flipped most,
    and how many verdicts no majority of the repeats decided."""
    from bineval_dspy.core.repeats import NO_MAJORITY

    repeats = summary.repeats.summary()
    if repeats is None:
        return
    shown.print(repeats.line(), soft_wrap=True)
    texts = {q.id: (q.dimension, q.text) for q in summary.checklist.questions}
    if flips := summary.repeats.flip_rates():
        table = Table(title="questions that flipped most (rows whose repeats disagreed)")
        for column in ("flip rate", "rows", "dimension", "question"):
            table.add_column(column, justify="right" if column in ("flip rate", "rows") else "left")
        for qid, rate, asked in flips[:MOST_FLIPPED]:
            dimension, text = texts.get(qid, ("", qid))
            table.add_row(f"{rate:.2f}", str(asked), dimension, text)
        shown.print(table)
    split = sum(n for kind, n in summary.causes.items() if kind.startswith(NO_MAJORITY))
    if split:
        console.print(
            f"{split} LM verdict(s) unanswered: no answer had a majority of the {repeats.k} repeats (a tie, or too many unanswered); "
            "a rerun replays their answered repeats from the cache; an odd --repeats avoids ties", style="yellow", soft_wrap=True,
        )  # fmt: skip


def _print_lineage_means(summary: JudgedSummary, key: str) -> None:
    """Mean score per perspective (or scenario) over the rows, with its name and how many questions it has."""
    names: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for q in summary.checklist.questions:
        if key in q.lineage:
            value = q.lineage[key]
            names.setdefault(value, q.lineage.get(f"{key}_text", ""))
            sizes[value] = sizes.get(value, 0) + 1
    table = Table(title=f"mean scores per {key} over {summary.rows} row(s)")
    for column in (key, "name", "questions", "score"):
        table.add_column(column, justify="right" if column in ("questions", "score") else "left")
    for value, name in names.items():
        table.add_row(value, name, str(sizes[value]), fmt(summary.lineage_mean(key, value)))
    shown.print(table)


def add_judge_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``bineval judge``."""
    judge = sub.add_parser("judge", parents=[common], help="judge rows of (input, output) against a checklist")
    judge.add_argument("--checklist", required=True, help="the checklist JSON (bineval checklist writes one)")
    judge.add_argument("--program", metavar="PROGRAM", help="a judge program.json from a cross-model optimize run (or its run directory): instructions, demos, thresholds and options")
    judge.add_argument("--data", required=True, help="JSONL rows with 'input' and 'output' (or generate's 'prompt' and 'response'); other fields pass through")
    judge.add_argument("--input-field", metavar="FIELD", help="the data rows' field holding the task input (default: input, or prompt in generate output)")
    judge.add_argument("--output-field", metavar="FIELD", help="the data rows' field holding the output to judge (default: output, or response in generate output)")
    judge.add_argument("-o", "--output", default="scorecards.jsonl", help="JSONL: each data row with its results under 'bineval'; resumed when it exists")
    add_judge_options(judge)
    judge.add_argument("--max-tokens", dest="lm_max_tokens", type=count(1), metavar="N", help="token limit per verdict (default 256)")
    judge.add_argument(
        "--concurrency", type=count(1), metavar="N",
        help="remote LMs: up to N requests in flight across rows and questions (in place of --threads); rows are still saved in input order",
    )
    judge.add_argument(
        "--no-fast-path", action="store_true",
        help="remote LMs: send every verdict request through DSPy's per-call path instead of the lean one (same requests, "
        "cache entries and verdicts, more client CPU a call; also BINEVAL_FAST_PATH=0)",
    )
    judge.add_argument(
        "--repeats", type=count(1), default=1, metavar="K",
        help="ask each LM question K times a row (at the LM's temperature, in a shuffled order): the majority counts (a tie is unanswered), "
        "and the summary gives the flip rate and pass^K (passed every repeat); code checks are asked once. An odd K avoids ties",
    )
    judge.add_argument("--limit", type=count(1), metavar="N", help="only the first N data rows (default: all); a later run without it resumes")
    judge.add_argument("--overwrite", action="store_true", help="replace earlier output instead of resuming it")
    judge.add_argument(
        "--batch", action="store_true",
        help="send the calls as OpenAI-style batches (/v1/files + /v1/batches: about half the price, done within 24 h); "
        "waits for them, and a rerun after Ctrl-C collects the batch it submitted (OUTPUT.batch.json)",
    )
    judge.add_argument(
        "--fail-under", type=share, metavar="SCORE",
        help=f"exit {int(ExitCode.BELOW_GATE)} when the mean overall score is under SCORE (0 to 1): a quality gate for CI; completeness alone exits 0",
    )
    judge.add_argument(
        "--fail-under-question", type=share, metavar="RATE",
        help=f"exit {int(ExitCode.BELOW_GATE)} when any question is passed by under RATE of the rows (an unanswered one is not passed)",
    )
    add_ray_options(judge, "judge the rows", "each with --concurrency requests in flight")
    add_dry_run_option(judge)
    add_budget_options(judge, "row")
    add_verifiers_option(judge)
    judge.set_defaults(func=cmd_judge)
