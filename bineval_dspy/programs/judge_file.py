"""Judging a JSONL file of rows against a checklist, resumably: ``run_file`` (what ``bineval judge`` runs) and
``plan_file`` (its dry run). Complete rows of earlier output made with the same settings are kept, the rest judged
and appended in input order, so a killed run resumes where it stopped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bineval_dspy.core.console import console
from bineval_dspy.core.errors import BudgetExhausted, InputError
from bineval_dspy.core.fingerprint import digest, file_digest
from bineval_dspy.core.jsonio import append_jsonl, check_output_path, load_model, read_jsonl
from bineval_dspy.core.runlog import RunLog
from bineval_dspy.core.schema import Checklist, JudgeFields, JudgeOptions, JudgeSpec, Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.rows import JUDGE_KEY, JudgedSummary, JudgeResult
from bineval_dspy.lm.budget import Budget
from bineval_dspy.lm.estimate import Plan
from bineval_dspy.lm.retry import fast_path_default
from bineval_dspy.lm.runtime import LMOptions
from bineval_dspy.lm.usage import Cost

GENERATED_FIELDS = ("prompt", "response")  # `bineval generate` output, judged as it is


class JudgeFile(BaseModel):
    """One judge run over a file: what is judged, by which judge, on which LM, within which limits."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    checklist: Path
    data: Path  # JSONL rows; the input and output fields are judged, the others pass through
    output: Path = Path("scorecards.jsonl")  # each data row with its results under JUDGE_KEY; resumed when it exists
    judge: JudgeOptions = JudgeOptions()
    program: Path | None = None  # a judge program.json (or its run directory): its options replace ``judge``
    fields: tuple[str, str] | None = None  # (input, output); None: input and output, else generate's prompt and response
    limit: int | None = None  # only the first N data rows
    overwrite: bool = False  # replace earlier output instead of resuming it
    concurrency: int | None = None  # remote LMs: requests in flight across rows and questions (in place of threads)
    threads: int | None = None
    batch: bool = False  # the calls go through the LM's OpenAI-style batch API
    lm: LMOptions = LMOptions()
    cache_dir: Path | None = None
    budget: Budget = Budget()
    ray: str | None = None  # a Ray cluster judges the rows: "local" (started here) or its address (``programs.cluster``)
    workers: int = Field(default=2, ge=1)  # with ``ray``: actors judging at once, each with ``concurrency`` in flight
    fast_path: bool = Field(default_factory=fast_path_default)  # remote per-question verdicts skip DSPy's per-call path (``judges.fast``)


@dataclass
class JudgedFile:
    """What a run did: the summary of every row the output holds, and this run's share of it."""

    summary: JudgedSummary
    model: str
    todo: int  # rows this run had to judge
    written: int = 0
    spent: Cost = field(default_factory=Cost)
    stopped: BudgetExhausted | None = None  # the budget ended the run; the rows written so far are saved


def data_fields(config: JudgeFile) -> tuple[str, str]:
    """The rows' input and output fields: ``fields`` when given, else input and output, else a generate output's
    prompt and response (when its first row has those and not the others)."""
    if config.fields is not None:
        return config.fields
    first = next((row for _, row in read_jsonl(config.data)), {})
    if not {"input", "output"} & first.keys() and set(GENERATED_FIELDS) <= first.keys():
        console.print(f"{config.data}: judging each row's '{GENERATED_FIELDS[1]}' for its '{GENERATED_FIELDS[0]}' (generate output)")
        return GENERATED_FIELDS
    if not {"input", "output", GENERATED_FIELDS[1]} & first.keys() and GENERATED_FIELDS[0] in first:
        raise InputError(
            f"{config.data}:1: a 'prompt' and no output to judge (a suite?): generate the responses first (bineval generate), "
            "or name the fields that hold them (`input_field` prompt, `output_field` NAME)"
        )
    return "input", "output"


def data_rows(path: Path, limit: int | None, fields: tuple[str, str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """The data rows (data line, row), read as they are judged; a bad one is one located line."""
    for index, (number, row) in enumerate(read_jsonl(path, required=fields, standard=True)):  # its text goes to the LM and the output
        if limit is not None and index >= limit:
            return
        for name in fields:
            if not isinstance(row[name], str):
                raise InputError(f"{path}:{number}: field '{name}' must be a string")
        if JUDGE_KEY in row:
            raise InputError(f"{path}:{number}: field '{JUDGE_KEY}' is reserved for the judge's results; rename it")
        yield number, row


def _count_rows(path: Path, limit: int | None, fields: tuple[str, str]) -> int:
    """How many rows a run judges (at most ``limit``), every row checked first, before any LM loads."""
    rows = sum(1 for _ in data_rows(path, None, fields))
    if not rows:
        raise InputError(f"{path}: no rows to judge")
    return min(rows, limit) if limit else rows


def judged_log(out: Path) -> RunLog[dict[str, Any]]:
    """The judge's output as a run log: data rows keyed by their data line, kept when complete; a row kept is a
    row show and report will read, so each carries a whole judge result."""

    def parse(number: int, obj: dict[str, Any]) -> dict[str, Any]:
        try:
            JudgeResult.model_validate(obj[JUDGE_KEY])
        except ValidationError as exc:
            where = ".".join(str(part) for part in exc.errors()[0]["loc"])
            raise InputError(f"{out}:{number}: field '{JUDGE_KEY}.{where}' is not a judge result; use `overwrite` or a new output path") from None
        return obj

    return RunLog(
        out, key=lambda obj: str(obj[JUDGE_KEY]["line"]), parse=parse, dump=lambda obj: obj,
        finished=lambda obj: bool(obj[JUDGE_KEY]["complete"]), required=(JUDGE_KEY,),
    )  # fmt: skip


def file_judge(config: JudgeFile, model: str) -> BinaryJudge:
    """The judge ``config`` describes, on the LM named ``model``: its options, or the program's (instructions,
    demos, thresholds and options; options set beside a program are refused, so the run is the program the
    optimizer measured)."""
    from bineval_dspy.programs.state import load_program

    if config.program is None:
        return BinaryJudge.from_spec(JudgeSpec(model=model, **config.judge.model_dump()))
    changed = [name for name, value in config.judge.model_dump().items() if value != JudgeFields.model_fields[name].default]
    if changed:
        raise InputError(f"{config.program}: the program sets the judge's options; drop `judge.{changed[0]}` (or edit the program's 'judge' field)")
    judge = load_program(config.program, kind="judge").build()
    assert isinstance(judge, BinaryJudge)
    return judge


def run_file(config: JudgeFile) -> JudgedFile:
    """Judge every row of ``config.data`` not already complete in ``config.output``; the rows stream through the
    judging runner (``judges.runner``) and are appended in input order. A budget stop is returned, not raised,
    with the summary of what was saved."""
    from bineval_dspy.judges.binary import NO_P_YES
    from bineval_dspy.judges.code import check_verifiers
    from bineval_dspy.judges.runner import judge_rows, parallelism
    from bineval_dspy.lm import runtime
    from bineval_dspy.lm.budget import BudgetMeter
    from bineval_dspy.lm.runtime import effective_threads, lm_identity
    from bineval_dspy.programs.state import demos_of, instructions_of, program_path
    from bineval_dspy.programs.weights import weights_of
    from bineval_dspy.verifiers import code_digest

    checklist = load_model(config.checklist, Checklist)
    check_verifiers(checklist, str(config.checklist))
    fields = data_fields(config)
    rows = _count_rows(config.data, config.limit, fields)
    target = _batch_target(config) if config.batch else None
    check_output_path(config.output, config.data, config.checklist, *([program_path(config.program)] if config.program else []))
    if config.ray is not None and (config.batch or config.budget.limited):
        raise InputError("`ray`: a cluster run takes no `batch` and no budget (`max_cost`, `max_calls`): size it with `limit`")
    if config.ray is not None:
        from bineval_dspy.core.cluster import ray_module

        ray_module()  # installed, or one line before any work
    if config.concurrency is not None and config.threads is not None:
        raise InputError("`concurrency`: give it or `threads`, not both (`concurrency` counts requests across rows and questions)")
    file_judge(config, "")  # options refused before the LM loads or its cache opens
    lm = runtime.configure(config.lm, config.cache_dir)
    meter = BudgetMeter.for_models(config.budget, [lm.model])
    judge = file_judge(config, lm.model)
    plan = parallelism(lm, sum(q.verifier is None for q in checklist.questions), concurrency=config.concurrency, threads=config.threads)
    effective_threads(lm, config.concurrency or config.threads or 1, asked=True)  # the embedded model says it ignores them
    fingerprint = {
        "data": file_digest(config.data),
        "checklist": digest(checklist.model_dump_json()),
        "judge": judge.spec().model_dump_json(),
        "lm": lm_identity(lm),  # with the sampling settings (temperature, max_tokens) the spec leaves out
        **({"weights": weights.adapter_sha256} if (weights := weights_of(judge)) is not None else {}),  # a fine-tuned judge's
        **({"program": digest(json.dumps([instructions_of(judge), demos_of(judge)], sort_keys=True))} if config.program else {}),
        **({"verifiers": code_digest()} if any(q.verifier for q in checklist.questions) else {}),
        **({"fields": " -> ".join(fields)} if fields != ("input", "output") else {}),
    }
    out = config.output
    finished = {int(line) for line in judged_log(out).open(fingerprint, config.overwrite)}
    todo = rows - sum(1 for n, _ in data_rows(config.data, config.limit, fields) if n in finished) if finished else rows
    if finished:
        console.print(f"resuming: {len(finished)} complete row(s) kept in {out}, {todo} to judge")

    def pending() -> Iterator[tuple[int, dict[str, Any]]]:
        return ((n, row) for n, row in data_rows(config.data, config.limit, fields) if n not in finished)

    if target is not None and todo:  # the replies come from batches; the rows are then judged and saved as usual
        from bineval_dspy.lm.batches import collect_replies

        def judge_pending() -> None:
            for _, row in pending():
                judge(input=row[fields[0]], output=row[fields[1]], checklist=checklist)

        collect_replies(lm, target, judge_pending, out, fingerprint, config.overwrite, follow_ups=judge.explanations == "failures")
    run = JudgedFile(JudgedSummary(checklist, NO_P_YES), lm.model, todo)
    if config.ray is not None and todo:
        from bineval_dspy.programs.cluster import ray_judge_rows

        results = ray_judge_rows(config, checklist.model_dump_json(), pending(), fields=fields, total=todo)
    else:
        results = judge_rows(judge, checklist, pending(), total=todo, plan=plan, meter=meter, fields=fields, fast_path=config.fast_path)
    try:
        for row, result in results:
            append_jsonl(out, result.row(row))
            run.spent, run.written = run.spent + result.usage, run.written + 1
    except BudgetExhausted as exc:
        run.stopped = exc
    for _, obj in read_jsonl(out) if out.exists() else ():
        run.summary.add(JudgeResult.model_validate(obj[JUDGE_KEY]), obj.get("id"))
    return run


def _batch_target(config: JudgeFile) -> Any:
    """The LM's batch API, refused in one line before any work where there is none."""
    from bineval_dspy.lm.batches import batch_target

    return batch_target(config.lm, budgeted=config.budget.limited)


def plan_file(config: JudgeFile) -> tuple[Plan, str | None]:
    """The judge's LM work on the rows a run would judge (complete rows of earlier output are kept): every LM
    question of every row, ``samples`` times, plus its content-free prior under calibration (batch scoring: one
    call for all of a row's questions); and, with ``batch``, where the batches would go."""
    from bineval_dspy.judges.binary import CONTENT_FREE_OUTPUT
    from bineval_dspy.lm.estimate import completion_limit, formatted, message_tokens, token_counter

    checklist = load_model(config.checklist, Checklist)
    fields = data_fields(config)
    _count_rows(config.data, config.limit, fields)
    target = _batch_target(config) if config.batch else None
    spec = config.lm.spec
    judge = file_judge(config, spec)
    count, exact = token_counter(spec)
    kept = {int(line) for line in judged_log(config.output).finished_keys()} if not config.overwrite else set()
    asked = [q for q in checklist.questions if q.verifier is None]
    predictor = judge.named_predictors()[0][1]
    rows = calls = tokens = 0
    given, judged = fields
    for n, row in data_rows(config.data, config.limit, fields):
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
    what = f"judge {rows} row(s) x {len(asked)} LM question(s)" + (f" ({len(kept)} complete row(s) of {config.output} kept)" if kept else "")
    plan = Plan(what, calls, tokens, config.lm.max_tokens or completion_limit(), exact, spec, config.lm.api_base)
    if target is None:
        return plan, None
    from bineval_dspy.lm.batches import batch_plan

    return plan, batch_plan(target, plan)


def _batch_messages(judge: BinaryJudge, input: str, output: str, asked: list[Question]) -> list[dict[str, Any]]:
    """The messages one batch-scoring call sends for a row: every LM question of it, numbered."""
    from bineval_dspy.judges import batch

    assert judge.answer_all is not None  # a batch judge has its batch predictor
    signature = batch.batch_signature(len(asked), judge.explanations == "all").with_instructions(judge.answer_all.signature.instructions)
    return batch.BatchAdapter().format(signature, demos=[], inputs={"input": input, "output": output, "questions": batch.numbered(asked)})
