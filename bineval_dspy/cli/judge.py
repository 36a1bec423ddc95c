"""``bineval demo``, ``checklist`` and ``judge``: write checklists and judge outputs against them."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from bineval_dspy.cli.defaults import CHECKLIST_METHODS
from bineval_dspy.cli.options import (
    add_budget_options,
    add_dry_run_option,
    add_overwrite_option,
    budget_meter,
    count,
    lm_options,
    refuse_replacing,
)
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import BudgetExhausted, ExitCode, InputError, RunError, one_line
from bineval_dspy.core.fingerprint import digest, file_digest, open_for_resume
from bineval_dspy.core.jsonio import (
    append_jsonl,
    check_output_path,
    load_model,
    read_json,
    read_jsonl,
    read_text,
    rewrite_jsonl,
    write_json,
    write_text_atomic,
)
from bineval_dspy.core.schema import Checklist, JudgeSpec, Scorecard
from bineval_dspy.core.scoring import join
from bineval_dspy.core.terminal import styled

if TYPE_CHECKING:  # DSPy, LiteLLM and llama.cpp load when a command runs, never for the parser
    from bineval_dspy.checklists.base import ChecklistWriter
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.judges.rows import JudgedSummary
    from bineval_dspy.lm.batches import BatchTarget
    from bineval_dspy.lm.estimate import Plan


def _read_task(value: str) -> str:
    return read_text(Path(value[1:])) if value.startswith("@") else value


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
    scores.add_row(*[_fmt(v) for v in values])
    scores.add_row(*[f"{_fmt(v)} / 5" for v in rescaled])
    shown.print(scores)
    if card.unanswered:
        how = "scored over the answered ones" if card.partial else "dimensions with one have no score"
        console.print(f"{card.unanswered} question(s) unanswered: never counted as yes; {how}", style="yellow")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


# -- commands ----------------------------------------------------------------------------
def cmd_demo(args: argparse.Namespace) -> int:
    """Judge three bundled summaries (good, mediocre, bad) against a checklist, print and save everything.

    The embedded 135M model writes poor checklists, so by default the demo uses one written for the bundled
    example, whose countable questions (numbers and names found in the article, length, capitals, repeated words,
    the main subject) code answers; ``--write-checklist`` lets the LM write it with BinEval's two steps instead.
    """
    from bineval_dspy.checklists.bineval import BinEvalWriter
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.lm import runtime
    from bineval_dspy.lm.budget import metered_map
    from bineval_dspy.lm.usage import Cost, measured, total

    data = files("bineval_dspy").joinpath("data")
    example = json.loads(data.joinpath("demo.json").read_text(encoding="utf-8"))
    out = Path(args.output)
    check_output_path(out)
    refuse_replacing(out, args.overwrite)
    lm = runtime.configure(lm_options(args), args.cache_dir)
    console.print(styled(("Task:", "bold"), f" {example['task']}"))
    writing = Cost()
    if args.write_checklist:
        with console.status("the LM writes the checklist (requirements, then questions)"):
            writer = BinEvalWriter(max_questions=args.max_questions)
            checklist, writing = measured(lambda: _write_checklist(writer, example["task"], example["dimensions"]))
        source = "written by the LM (BinEval's two steps)"
    else:
        checklist = Checklist.model_validate_json(data.joinpath("demo_checklist.json").read_text(encoding="utf-8"))
        source = "written for this example and shipped with the demo (--write-checklist: let the LM write one)"
    coded = sum(q.verifier is not None for q in checklist.questions)
    console.print(
        f"checklist: {len(checklist.questions)} questions over {', '.join(checklist.dimensions)}, {source}; "
        f"{coded} answered by code, {len(checklist.questions) - coded} by the LM ({lm.model})"
    )
    judge = BinaryJudge.from_spec(JudgeSpec(model=lm.model, probability=args.probability, calibration=args.calibration))
    summaries = example["summaries"]
    judged = list(metered_map(lambda s: judge(input=example["article"], output=s["text"], checklist=checklist), summaries, "judging"))
    cards = [card for card, _ in judged]
    results = []
    for summary, (card, cost) in zip(summaries, judged):
        print_scorecard(f"summary '{summary['label']}'", checklist, card)
        results.append({"label": summary["label"], "summary": summary["text"], "scorecard": card.model_dump(mode="json"), "usage": cost.model_dump(mode="json")})
    _print_ranking(summaries, cards)
    spent = writing + total(cost for _, cost in judged)
    write_json(out, {
        "task": example["task"], "article": example["article"], "checklist_source": source, "checklist": checklist.model_dump(mode="json"),
        "results": results, "checklist_usage": writing.model_dump(mode="json"), "usage": spent.model_dump(mode="json"),
    })
    shown.print(f"wrote {out}")
    console.print(f"cost: {spent.summary()}")
    return ExitCode.OK if all(card.complete for card in cards) else ExitCode.INCOMPLETE


def _print_ranking(summaries: list[dict], cards: list[Scorecard]) -> None:
    """One line a newcomer can check: the overall score of each summary, best first."""
    ranked = sorted(zip(summaries, cards), key=lambda pair: -1.0 if pair[1].overall is None else -pair[1].overall)
    shown.print("ranking: " + " > ".join(f"{s['label']} {_fmt(c.overall)}" for s, c in ranked))


def _write_checklist(writer: ChecklistWriter, task: str, dimensions: list[str]) -> Checklist:
    """The writer's checklist; an LM that gives nothing usable stops the command in one line, and the replies
    that led there are not replayed from the cache: a rerun asks again."""
    from bineval_dspy.lm.cache import reply_journal

    with reply_journal() as journal:
        try:
            return writer(task=task, dimensions=dimensions)
        except InputError:
            raise
        except RunError:
            journal.forget()
            raise
        except Exception as exc:
            journal.forget()
            raise RunError(f"checklist: the LM gave no usable checklist ({one_line(exc)})") from None


QWORLD_FLAGS = ("w1", "w2", "w3")


def _writer_params(args: argparse.Namespace) -> dict[str, Any]:
    """The writer params the flags set; ``--max-questions`` caps each method's questions (qworld: its criteria)."""
    given = [name for name in QWORLD_FLAGS if getattr(args, name) is not None]
    if given and args.method != "qworld":
        raise InputError(f"--{given[0]}: only with --method qworld")
    params: dict[str, Any] = {name: getattr(args, name) for name in given}
    if args.max_questions is not None:
        params["max_criteria" if args.method == "qworld" else "max_questions"] = args.max_questions
    return params | _template_inputs(args)


TEMPLATE_FLAGS = ("reference", "candidates", "observations", "definitions")


def _template_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """A template writer's inputs from their flags: a reference (text or @FILE), candidates (JSONL, field 'output'),
    observations (JSONL, field 'text'), definitions (a JSON object: dimension -> definition)."""
    from bineval_dspy.checklists.templates import TEMPLATES

    given = [name for name in TEMPLATE_FLAGS if getattr(args, name) is not None]
    if given and args.method not in TEMPLATES:
        raise InputError(f"--{given[0]}: only with a template writer ({', '.join(TEMPLATES)})")
    params: dict[str, Any] = {}
    if args.reference is not None:
        params["reference"] = _read_task(args.reference)
    for name, field in (("candidates", "output"), ("observations", "text")):
        if getattr(args, name) is not None:
            rows = read_jsonl(Path(getattr(args, name)), required=(field,), standard=True)
            params[name] = [str(row[field]) for _, row in rows]
    if args.definitions is not None:
        definitions = read_json(Path(args.definitions))
        if not isinstance(definitions, dict) or not all(isinstance(v, str) for v in definitions.values()):
            raise InputError(f"{args.definitions}: must be one JSON object of dimension -> definition text")
        params["definitions"] = definitions
    return params


def cmd_checklist(args: argparse.Namespace) -> int:
    """Generate a checklist for a task with the chosen method, save it as JSON, and say what it cost."""
    from bineval_dspy.checklists.qworld import QworldWriter
    from bineval_dspy.checklists.screen import promised_minimum, write_screened
    from bineval_dspy.checklists.writers import make_writer, save_checklist_usage
    from bineval_dspy.lm import runtime
    from bineval_dspy.lm.usage import measured

    task = _read_task(args.task)
    if not task.strip():
        raise InputError("--task: the task description is empty")
    dims = [d for d in (args.dimensions or "").split(",") if d.strip()]
    out = Path(args.output)
    check_output_path(out, *([Path(args.task[1:])] if args.task.startswith("@") else []))
    refuse_replacing(out, args.overwrite)
    if args.writer_file:
        from bineval_dspy.checklists.templates import load_templates

        load_templates(Path(args.writer_file))
    writer = make_writer(args.method, **_writer_params(args))  # bad params fail before the LM loads
    lm = runtime.configure(lm_options(args), args.cache_dir)
    minimum = promised_minimum(writer, dims)
    failures: list[tuple[int, RunError]] = []
    with console.status(f"writing the checklist ({args.method})"):
        screened, cost = measured(lambda: write_screened(lambda attempt: _write_attempt(writer, task, dims, lm, attempt, failures), dims, minimum))
    for line in screened.dropped:
        console.print(f"left out: {line}", style="yellow")
    for number, failure in failures if screened.checklist is not None else []:
        console.print(f"attempt {number + 1} gave no usable checklist: {failure}", style="yellow")
    checklist = screened.checklist
    if checklist is None:
        for problem in screened.problems:
            console.print(f"problem: {problem}", style="yellow")
        console.print(f"cost: {cost.summary()} ({screened.attempts} attempt(s))")
        if len(failures) == screened.attempts:  # no attempt gave a checklist: the first one's reason
            raise failures[0][1]
        raise RunError(f"checklist: no question the LM wrote passed the screen in {screened.attempts} attempt(s); nothing written")
    write_text_atomic(out, checklist.model_dump_json(indent=2))
    sidecar = save_checklist_usage(out, args.method, lm.model, cost, attempts=screened.attempts)
    for q in checklist.questions:
        weight = (f" (weight {q.weight:+g})", "magenta") if q.weight != 1 else ""
        where = (f" ({q.lineage['perspective_text']})", "dim") if "perspective_text" in q.lineage else ""
        by = (f" (code: {q.verifier})", "dim") if q.verifier else ""
        shown.print(styled((f"{q.dimension:>14}", "cyan"), f" {q.text}", weight, where, by))
    if isinstance(writer, QworldWriter) and writer.tree is not None:
        tree = writer.tree
        stats = tree.stats
        console.print(
            f"qworld tree: {len(tree.scenarios)} scenarios, {len(tree.perspectives)} perspectives, {len(tree.criteria)} criteria; "
            f"merged duplicates {stats.merged}; unparseable answers {stats.unparseable}"
        )
    shown.print(f"wrote {len(checklist.questions)} questions to {out} (its cost to {sidecar.name})")
    retried = f" ({screened.attempts} attempts: the screen asked again)" if screened.attempts > 1 else ""
    console.print(f"cost: {cost.summary()}{retried}")
    for problem in screened.problems:
        console.print(f"problem: {problem}", style="yellow")
    if screened.problems:
        console.print(f"{len(screened.problems)} problem(s) left after {screened.attempts} attempt(s): the checklist holds what passed; rerun or edit it", style="yellow")
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def _write_attempt(
    writer: ChecklistWriter, task: str, dims: list[str], lm: Any, attempt: int, failures: list[tuple[int, RunError]]
) -> Checklist | None:
    """One writer attempt: the first as configured, a retry as a new sample (raised temperature, its own cache
    entry). An LM that gives nothing usable leaves that attempt empty (its reason kept in ``failures``), so the
    screen's bounded retries also cover an unparseable answer."""
    import dspy

    from bineval_dspy.checklists.screen import RETRY_TEMPERATURE

    temperature = max(float(lm.kwargs.get("temperature") or 0.0), RETRY_TEMPERATURE)
    try:
        if attempt == 0:
            return _write_checklist(writer, task, dims)
        with dspy.context(lm=lm.copy(rollout_id=attempt, temperature=temperature)):
            return _write_checklist(writer, task, dims)
    except RunError as exc:
        failures.append((attempt, exc))
        return None


def _data_rows(path: Path, limit: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """The data rows (data line, row), read as they are judged; a bad one is one located line."""
    from bineval_dspy.judges.rows import JUDGE_KEY

    for index, (number, row) in enumerate(read_jsonl(path, required=("input", "output"), standard=True)):  # its text goes to the LM and the output
        if limit is not None and index >= limit:
            return
        for field in ("input", "output"):
            if not isinstance(row[field], str):
                raise InputError(f"{path}:{number}: field '{field}' must be a string")
        if JUDGE_KEY in row:
            raise InputError(f"{path}:{number}: field '{JUDGE_KEY}' is reserved for the judge's results; rename it")
        yield number, row


def _count_rows(path: Path, limit: int | None) -> int:
    """How many rows a run judges (at most ``limit``), every row checked first, before any LM loads."""
    rows = sum(1 for _ in _data_rows(path))
    if not rows:
        raise InputError(f"{path}: no rows to judge")
    return min(rows, limit) if limit else rows


def _finished_rows(out: Path) -> set[int]:
    """The data lines of complete rows of earlier output. Incomplete rows, a torn last line (a killed run) and
    repeats are dropped from the file, rewritten atomically, to be judged again; a file with none is left as is."""
    from bineval_dspy.judges.rows import JUDGE_KEY

    kept: dict[int, int] = {}  # data line -> the output line that holds it
    read = 0
    for number, obj in read_jsonl(out, required=(JUDGE_KEY,), torn_tail=True):
        ours = obj[JUDGE_KEY]
        if not isinstance(ours, dict) or not isinstance(ours.get("line"), int) or "complete" not in ours:
            raise InputError(f"{out}:{number}: field '{JUDGE_KEY}' is not a judge result; use --overwrite or a new output path")
        read += 1
        if ours["complete"]:
            kept.setdefault(ours["line"], number)
    if len(kept) < read or not _ends_whole(out):
        rewrite_jsonl(out, (obj for number, obj in read_jsonl(out, torn_tail=True) if kept.get(obj[JUDGE_KEY]["line"]) == number))
    return set(kept)


def _ends_whole(path: Path) -> bool:
    """Whether a file is empty or ends with its last line's "\n" (a killed run may leave a torn line)."""
    with path.open("rb") as handle:
        if handle.seek(0, 2) == 0:
            return True
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


JUDGE_FLAGS = {"cot": False, "samples": 1, "probability": False, "partial": False, "explanations": "all", "calibration": "none", "scoring": "per_question"}


def _judge_of(args: argparse.Namespace, model: str) -> BinaryJudge:
    """The judge the flags describe (on the LM named ``model``), or the one ``--program`` holds (its instructions,
    demos, thresholds and options: flags that would change them are refused, so the run is the program the
    optimizer measured)."""
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.programs.state import load_program

    if not args.program:
        return BinaryJudge.from_spec(JudgeSpec(
            model=model, chain_of_thought=args.cot, samples=args.samples, probability=args.probability, partial=args.partial,
            explanations=args.explanations, calibration=args.calibration, scoring=args.scoring,
        ))
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

    checklist_path, data_path, out = Path(args.checklist), Path(args.data), Path(args.output)
    checklist = load_model(checklist_path, Checklist)
    check_verifiers(checklist, str(checklist_path))
    rows = _count_rows(data_path, args.limit)
    target = _batch_target(args) if args.batch else None
    if args.dry_run:
        plan_of_calls = _judge_plan(args, checklist, data_path, out)
        shown.print(plan_of_calls.summary())
        if target is not None:
            from bineval_dspy.lm.batches import batch_plan

            shown.print(batch_plan(target, plan_of_calls))
        return ExitCode.OK
    check_output_path(out, data_path, checklist_path)
    if args.calibration != "none" and args.samples > 1:
        raise InputError("--calibration needs --samples 1: a vote share is not the P(yes) the prior is measured in")
    if args.concurrency is not None and args.threads is not None:
        raise InputError("--concurrency: give it or --threads, not both (--concurrency counts requests across rows and questions)")
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
    }
    finished = _finished_rows(out) if open_for_resume(out, fingerprint, args.overwrite) else set()
    todo = rows - sum(1 for n, _ in _data_rows(data_path, args.limit) if n in finished) if finished else rows
    if finished:
        console.print(f"resuming: {len(finished)} complete row(s) kept in {out}, {todo} to judge")
    if target is not None and todo:  # the replies come from batches; the rows are then judged and saved as usual
        from bineval_dspy.lm.batches import collect_replies

        def judge_pending() -> None:
            for n, row in _data_rows(data_path, args.limit):
                if n not in finished:
                    judge(input=row["input"], output=row["output"], checklist=checklist)

        collect_replies(lm, target, judge_pending, out, fingerprint, args.overwrite, follow_ups=judge.explanations == "failures")

    spent, written, stopped = Cost(), 0, None
    try:
        stream = ((n, row) for n, row in _data_rows(data_path, args.limit) if n not in finished)
        for row, result in judge_rows(judge, checklist, stream, total=todo, plan=plan, meter=meter):
            append_jsonl(out, result.row(row))
            spent, written = spent + result.usage, written + 1
    except BudgetExhausted as exc:
        stopped = exc
    summary = JudgedSummary(checklist, NO_P_YES)
    for _, obj in read_jsonl(out) if out.exists() else ():
        summary.add(JudgeResult.model_validate(obj[JUDGE_KEY]))
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
        console.print(f"{summary.incomplete} row(s) incomplete (unanswered questions): rerun the same command to judge them again", style="yellow")
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def _batch_target(args: argparse.Namespace) -> BatchTarget:
    """``--batch``: the LM's batch API, refused in one line before any work where there is none."""
    from bineval_dspy.lm.batches import batch_target

    return batch_target(lm_options(args), budgeted=args.max_cost is not None or args.max_calls is not None)


def _judge_plan(args: argparse.Namespace, checklist: Checklist, data_path: Path, out: Path) -> Plan:
    """The judge's LM work on the rows a run would judge (complete rows of earlier output are kept): every LM
    question of every row, ``--samples`` times, plus its content-free prior under calibration."""
    from bineval_dspy.judges.binary import CONTENT_FREE_OUTPUT
    from bineval_dspy.judges.rows import JUDGE_KEY
    from bineval_dspy.lm.estimate import Plan, completion_limit, formatted, message_tokens, token_counter
    from bineval_dspy.lm.specs import DEFAULT_LM

    spec = args.lm or DEFAULT_LM
    judge = _judge_of(args, spec)
    count, exact = token_counter(spec)
    kept = {obj[JUDGE_KEY]["line"] for n, obj in read_jsonl(out, torn_tail=True) if isinstance(obj.get(JUDGE_KEY), dict) and obj[JUDGE_KEY].get("complete")} if out.exists() and not args.overwrite else set()
    asked = [q for q in checklist.questions if q.verifier is None]
    predictor = judge.named_predictors()[0][1]
    rows = calls = tokens = 0
    for n, row in _data_rows(data_path, args.limit):
        if n in kept:
            continue
        rows += 1
        for q in asked:
            prompt = message_tokens(count, formatted(predictor, judge.adapter, {"input": row["input"], "output": row["output"], "question": q.text}))
            calls, tokens = calls + judge.samples, tokens + judge.samples * prompt
            if judge.calibration == "content_free":
                prior = formatted(predictor, judge.adapter, {"input": row["input"], "output": CONTENT_FREE_OUTPUT, "question": q.text})
                calls, tokens = calls + 1, tokens + message_tokens(count, prior)
    what = f"judge {rows} row(s) x {len(asked)} LM question(s)" + (f" ({len(kept)} complete row(s) of {out} kept)" if kept else "")
    return Plan(what, calls, tokens, args.lm_max_tokens or completion_limit(), exact, spec, args.api_base)


def _print_means(checklist: Checklist, summary: JudgedSummary) -> None:
    table = Table(title=f"mean scores over {summary.rows} row(s)")
    dims = [*checklist.by_dimension(), "overall"]
    for d in dims:
        table.add_column(d, justify="right")
    table.add_column("unanswered", justify="right")
    table.add_row(*[_fmt(summary.mean(d)) for d in dims], str(summary.unanswered))
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
    shown.print(f"rows that failed most (data line: failed questions): {', '.join(f'{line}: {n}' for line, n in summary.worst)}")
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
        table.add_row(value, name, str(sizes[value]), _fmt(summary.lineage_mean(key, value)))
    shown.print(table)


CALIBRATION_HELP = "content_free: divide out the LM's yes-bias per question, measured on a content-free output (reads logprobs)"


def add_judge_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``bineval demo``, ``checklist`` and ``judge``."""
    demo = sub.add_parser("demo", parents=[common], help="judge three bundled summaries with the embedded LM")
    demo.add_argument("-o", "--output", default="demo-results.json", help="the JSON file of checklist, verdicts and scores")
    add_overwrite_option(demo)
    demo.add_argument("--max-questions", type=count(1), default=12, help="with --write-checklist: most questions the LM may write")
    demo.add_argument("--probability", action="store_true", help="score with P(yes) from logprobs")
    demo.add_argument("--calibration", choices=("none", "content_free"), default="none", help=CALIBRATION_HELP)
    demo.add_argument("--write-checklist", action="store_true", help="let the LM write the checklist (BinEval's two steps)")
    demo.set_defaults(func=cmd_demo)

    checklist = sub.add_parser("checklist", parents=[common], help="generate a checklist for a task")
    checklist.add_argument("--task", required=True, help="the task text, or @FILE")
    checklist.add_argument(
        "--method", "--writer", dest="method", default="bineval", metavar="NAME",
        help=f"bineval (two steps), tick (2-8 questions), qworld (expansion tree), a published template ({', '.join(CHECKLIST_METHODS[3:])}; docs/checklist_methods.md) or one from --writer-file",
    )
    checklist.add_argument("--writer-file", metavar="FILE", help="TOML or JSON of template writers ([[templates]]: name, steps with prompt and schema) to choose from")
    checklist.add_argument("--reference", help="template writers: a reference answer, or @FILE (rocketeval)")
    checklist.add_argument("--candidates", metavar="FILE", help="template writers: JSONL of sampled responses, field 'output' (rlcf-contrastive)")
    checklist.add_argument("--observations", metavar="FILE", help="template writers: JSONL of feedback notes, field 'text' (feedback)")
    checklist.add_argument("--definitions", metavar="FILE", help="template writers: a JSON object of dimension -> definition (checkeval)")
    checklist.add_argument("--dimensions", help="comma-separated dimensions (default: bineval chooses them; tick and qworld use one)")
    checklist.add_argument("--max-questions", type=count(1), default=None, help="most questions (bineval 24, tick 8, qworld 60 criteria)")
    for name, rounds in zip(QWORLD_FLAGS, ("scenarios (default 3)", "perspectives (default 4)", "criteria (default 0)")):
        checklist.add_argument(f"--{name}", type=count(0), default=None, metavar="N", help=f"qworld: horizontal expansion rounds for {rounds}")
    checklist.add_argument("-o", "--output", default="checklist.json", help="the checklist JSON to write (its cost beside it, in OUTPUT.usage.json)")
    add_overwrite_option(checklist, "the checklist")
    checklist.set_defaults(func=cmd_checklist)

    judge = sub.add_parser("judge", parents=[common], help="judge rows of (input, output) against a checklist")
    judge.add_argument("--checklist", required=True, help="the checklist JSON (bineval checklist writes one)")
    judge.add_argument("--program", metavar="PROGRAM", help="a judge program.json from a cross-model optimize run (or its run directory): instructions, demos, thresholds and options")
    judge.add_argument("--data", required=True, help="JSONL rows with 'input' and 'output'; other fields pass through")
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
