"""``bineval judge``: judge rows of (input, output) against a checklist, resumably; the scorecard printout the demo shares."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from bineval_dspy.cli.options import (
    add_budget_options,
    add_dry_run_option,
    budget_meter,
    count,
    lm_options,
)
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import BudgetExhausted, ExitCode, InputError
from bineval_dspy.core.fingerprint import digest, file_digest
from bineval_dspy.core.jsonio import (
    append_jsonl,
    check_output_path,
    load_model,
    read_jsonl,
)
from bineval_dspy.core.runlog import RunLog
from bineval_dspy.core.schema import Checklist, JudgeSpec, Question, Scorecard
from bineval_dspy.core.scoring import join
from bineval_dspy.core.terminal import styled

if TYPE_CHECKING:  # DSPy, LiteLLM and llama.cpp load when a command runs, never for the parser
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.judges.rows import JudgedSummary
    from bineval_dspy.lm.batches import BatchTarget
    from bineval_dspy.lm.estimate import Plan




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
        by = "code" if v.judge.startswith("code:") else "LM"
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


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


# -- commands ----------------------------------------------------------------------------


















GENERATED_FIELDS = ("prompt", "response")  # `bineval generate` output, judged as it is


def _fields(args: argparse.Namespace, path: Path) -> tuple[str, str]:
    """The data rows' input and output fields: ``--input-field``/``--output-field``, else input and output, else a
    generate output's prompt and response (when its first row has those and not the others)."""
    if args.input_field or args.output_field:
        return args.input_field or "input", args.output_field or "output"
    first = next((row for _, row in read_jsonl(path)), {})
    if not {"input", "output"} & first.keys() and set(GENERATED_FIELDS) <= first.keys():
        console.print(f"{path}: judging each row's '{GENERATED_FIELDS[1]}' for its '{GENERATED_FIELDS[0]}' (generate output)")
        return GENERATED_FIELDS
    return "input", "output"


def _data_rows(path: Path, limit: int | None = None, fields: tuple[str, str] = ("input", "output")) -> Iterator[tuple[int, dict[str, Any]]]:
    """The data rows (data line, row), read as they are judged; a bad one is one located line."""
    from bineval_dspy.judges.rows import JUDGE_KEY

    for index, (number, row) in enumerate(read_jsonl(path, required=fields, standard=True)):  # its text goes to the LM and the output
        if limit is not None and index >= limit:
            return
        for field in fields:
            if not isinstance(row[field], str):
                raise InputError(f"{path}:{number}: field '{field}' must be a string")
        if JUDGE_KEY in row:
            raise InputError(f"{path}:{number}: field '{JUDGE_KEY}' is reserved for the judge's results; rename it")
        yield number, row


def _count_rows(path: Path, limit: int | None, fields: tuple[str, str]) -> int:
    """How many rows a run judges (at most ``limit``), every row checked first, before any LM loads."""
    rows = sum(1 for _ in _data_rows(path, fields=fields))
    if not rows:
        raise InputError(f"{path}: no rows to judge")
    return min(rows, limit) if limit else rows


def judged_log(out: Path) -> RunLog[dict[str, Any]]:
    """The judge's output as a run log: data rows keyed by their data line, kept when complete; a row kept is a
    row show and report will read, so each carries a whole judge result."""
    from pydantic import ValidationError

    from bineval_dspy.judges.rows import JUDGE_KEY, JudgeResult

    def parse(number: int, obj: dict[str, Any]) -> dict[str, Any]:
        try:
            JudgeResult.model_validate(obj[JUDGE_KEY])
        except ValidationError as exc:
            where = ".".join(str(part) for part in exc.errors()[0]["loc"])
            raise InputError(f"{out}:{number}: field '{JUDGE_KEY}.{where}' is not a judge result; use --overwrite or a new output path") from None
        return obj

    return RunLog(
        out, key=lambda obj: str(obj[JUDGE_KEY]["line"]), parse=parse, dump=lambda obj: obj,
        finished=lambda obj: bool(obj[JUDGE_KEY]["complete"]), required=(JUDGE_KEY,),
    )


JUDGE_FLAGS = {
    "cot": False, "samples": 1, "probability": False, "partial": False, "explanations": "all", "calibration": "none",
    "scoring": "per_question", "verdict_format": "json",
}  # fmt: skip


def _judge_of(args: argparse.Namespace, model: str) -> BinaryJudge:
    """The judge the flags describe (on the LM named ``model``), or the one ``--program`` holds (its instructions,
    demos, thresholds and options: flags that would change them are refused, so the run is the program the
    optimizer measured)."""
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.programs.state import load_program

    if not args.program:
        try:
            return BinaryJudge.from_spec(JudgeSpec(
                model=model, chain_of_thought=args.cot, samples=args.samples, probability=args.probability, partial=args.partial,
                explanations=args.explanations, calibration=args.calibration, scoring=args.scoring, verdict_format=args.verdict_format,
            ))
        except ValueError as exc:  # options that cannot go together (--verdict-format prefilled --cot, --scoring batch --cot)
            raise InputError(f"judge options: {exc}") from None
    changed = [name for name, default in JUDGE_FLAGS.items() if getattr(args, name) != default]
    if changed:
        flag = "--" + changed[0].replace("_", "-")
        raise InputError(f"{args.program}: the program sets the judge's options; drop {flag} (or edit the program's 'judge' field)")
    judge = load_program(Path(args.program), kind="judge").build()
    assert isinstance(judge, BinaryJudge)
    return judge


def cmd_judge(args: argparse.Namespace) -> int:
    """Judge every row of a JSONL file against a checklist; resumable (complete rows are kept, the rest redone).
    The rows stream through the library's judging runner (``judges.runner``) and are saved in input order."""
    from bineval_dspy.judges.binary import NO_P_YES
    from bineval_dspy.judges.code import check_verifiers
    from bineval_dspy.judges.rows import JUDGE_KEY, JudgedSummary, JudgeResult
    from bineval_dspy.judges.runner import judge_rows, parallelism
    from bineval_dspy.lm import runtime
    from bineval_dspy.lm.runtime import effective_threads, lm_identity
    from bineval_dspy.lm.usage import Cost
    from bineval_dspy.programs.state import demos_of, instructions_of, program_path
    from bineval_dspy.programs.weights import weights_of
    from bineval_dspy.verifiers import code_digest

    checklist_path, data_path, out = Path(args.checklist), Path(args.data), Path(args.output)
    checklist = load_model(checklist_path, Checklist)
    check_verifiers(checklist, str(checklist_path))
    fields = _fields(args, data_path)
    rows = _count_rows(data_path, args.limit, fields)
    target = _batch_target(args) if args.batch else None
    if args.dry_run:
        plan_of_calls = _judge_plan(args, checklist, data_path, out, fields)
        shown.print(plan_of_calls.summary())
        if target is not None:
            from bineval_dspy.lm.batches import batch_plan

            shown.print(batch_plan(target, plan_of_calls))
        return ExitCode.OK
    check_output_path(out, data_path, checklist_path, *([program_path(Path(args.program))] if args.program else []))
    if args.calibration != "none" and args.samples > 1:
        raise InputError("--calibration needs --samples 1: a vote share is not the P(yes) the prior is measured in")
    if args.concurrency is not None and args.threads is not None:
        raise InputError("--concurrency: give it or --threads, not both (--concurrency counts requests across rows and questions)")
    if not args.program:
        _judge_of(args, "")  # options that cannot go together are refused before the LM loads or its cache opens
    lm = runtime.configure(lm_options(args), args.cache_dir)
    meter = budget_meter(args, [lm.model])
    judge = _judge_of(args, lm.model)
    plan = parallelism(lm, sum(q.verifier is None for q in checklist.questions), concurrency=args.concurrency, threads=args.threads)
    effective_threads(lm, args.concurrency or args.threads or 1, asked=True)  # the embedded model says it ignores them
    fingerprint = {
        "data": file_digest(data_path),
        "checklist": digest(checklist.model_dump_json()),
        "judge": judge.spec().model_dump_json(),
        "lm": lm_identity(lm),  # with the sampling settings (--temperature, --max-tokens) the spec leaves out
        **({"weights": weights.adapter_sha256} if (weights := weights_of(judge)) is not None else {}),  # a fine-tuned judge's
        **({"program": digest(json.dumps([instructions_of(judge), demos_of(judge)], sort_keys=True))} if args.program else {}),
        **({"verifiers": code_digest()} if any(q.verifier for q in checklist.questions) else {}),
        **({"fields": " -> ".join(fields)} if fields != ("input", "output") else {}),
    }
    finished = {int(line) for line in judged_log(out).open(fingerprint, args.overwrite)}
    todo = rows - sum(1 for n, _ in _data_rows(data_path, args.limit, fields) if n in finished) if finished else rows
    if finished:
        console.print(f"resuming: {len(finished)} complete row(s) kept in {out}, {todo} to judge")
    if target is not None and todo:  # the replies come from batches; the rows are then judged and saved as usual
        from bineval_dspy.lm.batches import collect_replies

        def judge_pending() -> None:
            for n, row in _data_rows(data_path, args.limit, fields):
                if n not in finished:
                    judge(input=row[fields[0]], output=row[fields[1]], checklist=checklist)

        collect_replies(lm, target, judge_pending, out, fingerprint, args.overwrite, follow_ups=judge.explanations == "failures")

    spent, written, stopped = Cost(), 0, None
    try:
        stream = ((n, row) for n, row in _data_rows(data_path, args.limit, fields) if n not in finished)
        for row, result in judge_rows(judge, checklist, stream, total=todo, plan=plan, meter=meter, fields=fields):
            append_jsonl(out, result.row(row))
            spent, written = spent + result.usage, written + 1
    except BudgetExhausted as exc:
        stopped = exc
    summary = JudgedSummary(checklist, NO_P_YES)
    for _, obj in read_jsonl(out) if out.exists() else ():
        summary.add(JudgeResult.model_validate(obj[JUDGE_KEY]), obj.get("id"))
    if summary.rows:
        _print_means(checklist, summary)
        _print_failures(summary)
    for key in summary.tracked if summary.rows else []:
        _print_lineage_means(summary, key)
    if summary.unread:
        console.print(f"{summary.unread} verdict(s) without P(yes) (the LM sent no logprobs): scored by their answers, marked in each explanation", style="yellow")
    shown.print(f"wrote {written} row(s) to {out}" if todo else f"nothing to judge: {out} is complete")
    if summary.empty_lines:
        console.print(f"{len(summary.empty_lines)} row(s) have an empty output (data line(s) {_lines(summary.empty_lines)}): judged like any other, flagged 'empty_output'", style="yellow")
    console.print(f"cost: {spent.summary(unknown_price=not runtime_priced(lm.model))}")
    if stopped is not None:
        raise stopped
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


def _batch_target(args: argparse.Namespace) -> BatchTarget:
    """``--batch``: the LM's batch API, refused in one line before any work where there is none."""
    from bineval_dspy.lm.batches import batch_target

    return batch_target(lm_options(args), budgeted=args.max_cost is not None or args.max_calls is not None)


def _judge_plan(args: argparse.Namespace, checklist: Checklist, data_path: Path, out: Path, fields: tuple[str, str]) -> Plan:
    """The judge's LM work on the rows a run would judge (complete rows of earlier output are kept): every LM
    question of every row, ``--samples`` times, plus its content-free prior under calibration (``--scoring batch``:
    one call for all of a row's questions)."""
    from bineval_dspy.judges.binary import CONTENT_FREE_OUTPUT
    from bineval_dspy.lm.estimate import Plan, completion_limit, formatted, message_tokens, token_counter
    from bineval_dspy.lm.specs import DEFAULT_LM

    spec = args.lm or DEFAULT_LM
    judge = _judge_of(args, spec)
    count, exact = token_counter(spec)
    kept = {int(line) for line in judged_log(out).finished_keys()} if not args.overwrite else set()
    asked = [q for q in checklist.questions if q.verifier is None]
    predictor = judge.named_predictors()[0][1]
    rows = calls = tokens = 0
    given, judged = fields
    for n, row in _data_rows(data_path, args.limit, fields):
        if n in kept:
            continue
        rows += 1
        if judge.scoring == "batch" and asked:  # one call a sample for all the row's questions (and one for its prior)
            for output, times in ((row[judged], judge.samples), (CONTENT_FREE_OUTPUT, int(judge.calibration == "content_free"))):
                prompt = message_tokens(count, _batch_messages(judge, row[given], output, asked))
                calls, tokens = calls + times, tokens + times * prompt
            continue
        for q in asked:
            prompt = message_tokens(count, formatted(predictor, judge.adapter, {"input": row[given], "output": row[judged], "question": q.text}))
            calls, tokens = calls + judge.samples, tokens + judge.samples * prompt
            if judge.calibration == "content_free":
                prior = formatted(predictor, judge.adapter, {"input": row[given], "output": CONTENT_FREE_OUTPUT, "question": q.text})
                calls, tokens = calls + 1, tokens + message_tokens(count, prior)
    what = f"judge {rows} row(s) x {len(asked)} LM question(s)" + (f" ({len(kept)} complete row(s) of {out} kept)" if kept else "")
    return Plan(what, calls, tokens, args.lm_max_tokens or completion_limit(), exact, spec, args.api_base)


def _batch_messages(judge: BinaryJudge, input: str, output: str, asked: list[Question]) -> list[dict[str, Any]]:
    """The messages one batch-scoring call sends for a row: every LM question of it, numbered."""
    from bineval_dspy.judges import batch

    assert judge.answer_all is not None  # a batch judge has its batch predictor
    signature = batch.batch_signature(len(asked), judge.explanations == "all").with_instructions(judge.answer_all.signature.instructions)
    return batch.BatchAdapter().format(signature, demos=[], inputs={"input": input, "output": output, "questions": batch.numbered(asked)})


def _print_means(checklist: Checklist, summary: JudgedSummary) -> None:
    table = Table(title=f"mean scores over {summary.rows} row(s)")
    dims = [*checklist.by_dimension(), "overall"]
    for d in dims:
        table.add_column(d, justify="right")
    table.add_column("unanswered", justify="right")
    table.add_row(*[fmt(summary.mean(d)) for d in dims], str(summary.unanswered))
    shown.print(table)
    if summary.scored < summary.rows:
        console.print(f"means over the {summary.scored} of {summary.rows} row(s) that have a score", style="yellow")


def runtime_priced(model: str) -> bool:
    """Whether the bundled price map knows ``model``: a run that made no call still says "price unknown" then."""
    from bineval_dspy.lm.prices import price_of

    return price_of(model) is not None


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


CALIBRATION_HELP = "content_free: divide out the LM's yes-bias per question, measured on a content-free output (reads logprobs)"


def add_judge_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``bineval judge``."""
    judge = sub.add_parser("judge", parents=[common], help="judge rows of (input, output) against a checklist")
    judge.add_argument("--checklist", required=True, help="the checklist JSON (bineval checklist writes one)")
    judge.add_argument("--program", metavar="PROGRAM", help="a judge program.json from a cross-model optimize run (or its run directory): instructions, demos, thresholds and options")
    judge.add_argument("--data", required=True, help="JSONL rows with 'input' and 'output' (or generate's 'prompt' and 'response'); other fields pass through")
    judge.add_argument("--input-field", metavar="FIELD", help="the data rows' field holding the task input (default: input, or prompt in generate output)")
    judge.add_argument("--output-field", metavar="FIELD", help="the data rows' field holding the output to judge (default: output, or response in generate output)")
    judge.add_argument("-o", "--output", default="scorecards.jsonl", help="JSONL: each data row with its results under 'bineval'; resumed when it exists")
    judge.add_argument("--cot", action="store_true", help="reason before answering")
    judge.add_argument("--samples", type=count(1), default=1, help="k-sample majority vote")
    judge.add_argument("--probability", action="store_true", help="score with P(yes) from logprobs")
    judge.add_argument("--calibration", choices=("none", "content_free"), default="none", help=CALIBRATION_HELP)
    judge.add_argument("--max-tokens", dest="lm_max_tokens", type=count(1), metavar="N", help="token limit per verdict (default 256)")
    judge.add_argument("--partial", action="store_true", help="score dimensions over answered questions only")
    judge.add_argument(
        "--scoring", choices=("per_question", "batch"), default="per_question",
        help="one LM call per question (default), or all of an output's questions in one call (a missing verdict is unanswered)",
    )
    judge.add_argument(
        "--verdict-format", choices=("json", "prefilled"), default="json",
        help="prefilled (embedded model): the verdict's JSON start is in the prompt, so the answer is the first token generated",
    )
    judge.add_argument(
        "--explanations",
        choices=("all", "failures", "none"),
        default="all",
        help="explain every verdict, only the 'no' ones, or none (fastest: the answer is decoded first)",
    )
    judge.add_argument(
        "--concurrency", type=count(1), metavar="N",
        help="remote LMs: up to N requests in flight across rows and questions (in place of --threads); rows are still saved in input order",
    )
    judge.add_argument("--limit", type=count(1), metavar="N", help="only the first N data rows (default: all); a later run without it resumes")
    judge.add_argument("--overwrite", action="store_true", help="replace earlier output instead of resuming it")
    judge.add_argument(
        "--batch", action="store_true",
        help="send the calls as OpenAI-style batches (/v1/files + /v1/batches: about half the price, done within 24 h); "
        "waits for them, and a rerun after Ctrl-C collects the batch it submitted (OUTPUT.batch.json)",
    )
    add_dry_run_option(judge)
    add_budget_options(judge, "row")
    judge.set_defaults(func=cmd_judge)
