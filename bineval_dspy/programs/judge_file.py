"""Judging a JSONL file of rows against a checklist, resumably: ``run_file`` (what ``bineval judge`` runs) and
``plan_file`` (its dry run). Complete rows of earlier output made with the same settings are kept, the rest judged
and appended in input order, so a killed run resumes where it stopped."""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from bineval_dspy.core.errors import BudgetExhausted, InputError
from bineval_dspy.core.fingerprint import AFRESH, Fingerprint, check_resumable, digest, file_digest
from bineval_dspy.core.jsonio import check_output_path, load_model, read_jsonl
from bineval_dspy.core.runlog import RunLog
from bineval_dspy.core.schema import Checklist, JudgeFields, JudgeOptions, JudgeSpec, Question
from bineval_dspy.core.settings import added, fingerprint_of, unrecorded
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.code import check_verifiers
from bineval_dspy.judges.rows import JUDGE_KEY, JudgedLine, JudgedSummary, JudgeResult, judged_rows
from bineval_dspy.judges.standing import Standing, standing_of
from bineval_dspy.judges.verdict import BatchAdapter
from bineval_dspy.lm.budget import BudgetMeter
from bineval_dspy.lm.estimate import Plan
from bineval_dspy.lm.retry import fast_path_default
from bineval_dspy.lm.usage import Cost
from bineval_dspy.runs.execute import execute, executor_for, user_verifier_files
from bineval_dspy.runs.header import note, recorded_fingerprint
from bineval_dspy.runs.kinds import RUN_KINDS
from bineval_dspy.runs.spec import UnitRunSpec

logger = logging.getLogger(__name__)

GENERATED_FIELDS = ("prompt", "response")  # `bineval generate` output, judged as it is


class JudgeFile(UnitRunSpec):
    """One judge run over a file: what is judged, by which judge (the LM, limits and executor: ``UnitRunSpec``)."""

    checklist: Path
    data: Path  # JSONL rows; the input and output fields are judged, the others pass through
    output: Path = unrecorded(Path("scorecards.jsonl"))  # each data row with its results under JUDGE_KEY; resumed when it exists
    judge: JudgeOptions = JudgeOptions()
    program: Path | None = None  # a judge program.json (or its run directory): its options replace ``judge``
    fields: tuple[str, str] | None = None  # (input, output); None: input and output, else generate's prompt and response
    limit: int | None = None  # only the first N data rows
    repeats: int = Field(default=1, ge=1)  # each LM question asked K times a row, in shuffled order; the majority counts (``judges.repeats``)
    concurrency: int | None = unrecorded(None)  # remote LMs: requests in flight across rows and questions (in place of threads)
    batch: bool = unrecorded(False)  # the calls go through the LM's OpenAI-style batch API
    fast_path: bool = unrecorded(default_factory=fast_path_default)  # remote per-question verdicts skip DSPy's per-call path (``judges.fast``)


class JudgeFingerprint(BaseModel):
    """What decides a judge run's rows, resolved: the data's and checklist's contents, the judge, the LM; the fields
    a release added after the first are recorded only when they are not at their default."""

    data: str
    checklist: str
    judge: str  # the judge spec's JSON
    lm: str  # the LM's identity, with the sampling settings the spec leaves out
    weights: str | None = added("0.2", None)  # a fine-tuned judge's adapter
    program: str | None = added("0.2", None)  # a program's instructions and demos
    verifiers: str | None = added("0.2", None)  # the code that answers the checklist's code questions
    fields: str = added("0.2", "input -> output")
    repeats: int = added("0.2", 1)  # a row judged K times keeps other verdicts (the majority) and a record of its repeats


@dataclass
class JudgedFile:
    """What a run did: the summary of every row the output holds, and this run's share of it."""

    summary: JudgedSummary
    model: str
    todo: int  # rows this run had to judge
    written: int = 0
    spent: Cost = field(default_factory=Cost)
    stopped: BudgetExhausted | None = None  # the budget ended the run; the rows written so far are saved
    probe_head: Standing | None = None  # a probe judge's head: its recorded held-out figures, at chance or not


def data_fields(config: JudgeFile) -> tuple[str, str]:
    """The rows' input and output fields: ``fields`` when given, else input and output, else a generate output's
    prompt and response (when its first row has those and not the others)."""
    if config.fields is not None:
        return config.fields
    first = next((row for _, row in read_jsonl(config.data)), {})
    if not {"input", "output"} & first.keys() and set(GENERATED_FIELDS) <= first.keys():
        logger.info(f"{config.data}: judging each row's '{GENERATED_FIELDS[1]}' for its '{GENERATED_FIELDS[0]}' (generate output)")
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
    if judge.probe is not None and config.repeats > 1:
        raise InputError(f"{config.program}: `repeats`: a probe judge reads hidden states and decodes nothing: its answers never change, nothing to repeat")
    return judge


def run_file(config: JudgeFile) -> JudgedFile:
    """Judge every row of ``config.data`` not already complete in ``config.output``: a ``JudgeRun`` executed
    (``runs.execute``) here or on Ray actors. A budget stop is returned, not raised, with the summary of what was
    saved."""
    from bineval_dspy.judges.question import NO_P_YES
    from bineval_dspy.lm import runtime
    from bineval_dspy.lm.budget import BudgetMeter
    from bineval_dspy.lm.runtime import effective_threads
    from bineval_dspy.programs.state import program_path

    checklist = load_model(config.checklist, Checklist)
    fields = data_fields(config)
    _count_rows(config.data, config.limit, fields)  # every row checked before the LM loads, and before the checklist's ids
    check_verifiers(checklist, str(config.checklist))
    target = _batch_target(config) if config.batch else None
    check_output_path(config.output, config.data, config.checklist, *([program_path(config.program)] if config.program else []))
    if config.ray is not None and config.batch:
        raise InputError("`ray`: a cluster run takes no `batch`: the cluster's workers send the calls")
    if config.concurrency is not None and config.threads is not None:
        raise InputError("`concurrency`: give it or `threads`, not both (`concurrency` counts requests across rows and questions)")
    config.check_executor()  # before the LM loads
    file_judge(config, "")  # options refused before the LM loads or its cache opens
    lm = runtime.configure(config.lm, config.cache_dir)
    meter = BudgetMeter.for_models(config.budget, [lm.model])
    executor = executor_for(config, meter)
    run = JudgeRun(config, checklist, fields, file_judge(config, lm.model), lm)
    effective_threads(lm, config.concurrency or config.threads or 1, asked=True)  # the embedded model says it ignores them
    if config.repeats > 1:
        _note_repeats(config, checklist, lm)
    if target is not None:  # the replies come from batches; the rows are then judged and saved as usual
        _collect_batches(run, target)
    done = execute(run, executor, overwrite=config.overwrite, resumed=lambda kept, todo: f"resuming: {kept} complete row(s) kept in {config.output}, {todo} to judge")
    judged = JudgedFile(JudgedSummary(checklist, NO_P_YES), lm.model, done.todo, done.written, done.spent, done.stopped)
    for _, line in run.log().read():
        judged.summary.add(line.result, line.row.get("id"))
    if config.program is not None and run.judge.probe is not None:
        judged.probe_head = standing_of(program_path(config.program).parent, run.judge.probe)
    head = judged.probe_head.line() if judged.probe_head is not None else None
    note(config.output, degenerate=judged.summary.degenerate, probe_head=head, repeats=judged.summary.repeats.summary())
    return judged


def _note_repeats(config: JudgeFile, checklist: Checklist, lm: Any) -> None:
    """Say before the run where repeats cannot differ: a checklist all code checks (asked once), or a greedy LM
    (temperature 0), whose repeats can differ only by the order they ask in or by a server that is not
    deterministic."""
    if all(q.verifier is not None for q in checklist.questions):
        logger.warning(f"repeats: every question of {config.checklist} is code-checked: asked once, nothing to repeat (flip rate 0)")
    elif not (lm.kwargs or {}).get("temperature"):
        # DSPy's own warning ("rollout_id has no effect when temperature=0") reads as if repeats shared one cache
        # entry; they do not (the rollout is in the key), and the note below says what does hold
        warnings.filterwarnings("ignore", message="rollout_id has no effect when temperature=0")
        logger.warning(
            f"note: {config.repeats} repeats at temperature 0: greedy answers differ only where the order they are asked in or the server "
            "does; set the LM's `temperature` to sample them"
        )


def _collect_batches(run: JudgeRun, target: Any) -> None:
    """Send the calls of the rows still to judge through the LM's batch API first (their replies land in the cache)."""
    from bineval_dspy.lm.batches import collect_replies

    config = run.config
    finished = run.log().finished_keys() if not config.overwrite else set()
    pending = [(line, row) for line, row in run.items() if str(line) not in finished]
    if not pending:
        return

    def judge_pending() -> None:
        from bineval_dspy.judges.repeats import Repeats

        repeats = Repeats(run.judge, config.repeats) if config.repeats > 1 else None
        for line, row in pending:
            given, judged = row[run.fields[0]], row[run.fields[1]]
            if repeats is not None:  # every repeat's calls, in the order a run asks them
                repeats(str(line), given, judged, run.checklist)
            else:
                run.judge(input=given, output=judged, checklist=run.checklist)

    collect_replies(run.lm, target, judge_pending, config.output, run.fingerprint(), config.overwrite, follow_ups=run.judge.kind.explanations == "failures")


@RUN_KINDS.writes("judge", spec=JudgeFile, results=JudgeResult, legacy=({JUDGE_KEY},), legacy_first=True)
@dataclass
class JudgeRun:
    """``bineval judge`` as a run (``runs.protocol.Run``): the rows of a file, each judged against the checklist."""

    config: JudgeFile
    checklist: Checklist
    fields: tuple[str, str]
    judge: BinaryJudge
    lm: Any  # dspy.LM, configured
    kind: str = "judge"
    prune: bool = False  # rows beyond a smaller ``limit`` stay in the output
    settled: Fingerprint | None = None

    def items(self) -> list[tuple[int, dict[str, Any]]]:
        return list(data_rows(self.config.data, self.config.limit, self.fields))

    def key(self, item: tuple[int, dict[str, Any]]) -> str:
        return str(item[0])

    def log(self) -> RunLog[JudgedLine]:
        return judged_rows(self.config.output, hint=AFRESH)

    def fingerprint(self) -> Fingerprint:
        """Computed once, before any batch round configures DSPy with the LM that answers from the batches (the
        judge's spec would then name that LM)."""
        if self.settled is None:
            self.settled = self._fingerprint()
        return self.settled

    def _fingerprint(self) -> Fingerprint:
        from bineval_dspy.lm.runtime import lm_identity
        from bineval_dspy.programs.state import demos_of, instructions_of
        from bineval_dspy.programs.weights import weights_of
        from bineval_dspy.verifiers import code_digest

        judge, weights = self.judge, weights_of(self.judge)
        return fingerprint_of(
            JudgeFingerprint(
                data=file_digest(self.config.data), checklist=digest(self.checklist.model_dump_json()),
                judge=judge.spec().model_dump_json(), lm=lm_identity(self.lm),
                weights=weights.adapter_sha256 if weights is not None else None,
                program=digest(json.dumps([instructions_of(judge), demos_of(judge)], sort_keys=True)) if self.config.program else None,
                verifiers=code_digest() if any(q.verifier for q in self.checklist.questions) else None,
                fields=" -> ".join(self.fields), repeats=self.config.repeats,
            )
        )  # fmt: skip

    def do(self, todo: Sequence[tuple[int, dict[str, Any]]], meter: BudgetMeter) -> Iterator[tuple[dict[str, Any], JudgeResult]]:
        from bineval_dspy.judges.runner import judge_rows, parallelism

        config = self.config
        plan = parallelism(self.lm, sum(q.verifier is None for q in self.checklist.questions), concurrency=config.concurrency, threads=config.threads)
        return judge_rows(
            self.judge, self.checklist, todo, total=len(todo), plan=plan, meter=meter, fields=self.fields, fast_path=config.fast_path, repeats=config.repeats,
        )  # fmt: skip

    def actor(self) -> tuple[type[JudgeWorker], tuple[Any, ...]]:
        return JudgeWorker, (self.config.model_dump_json(), self.checklist.model_dump_json(), self.fields, user_verifier_files())

    def record(self, outcome: tuple[dict[str, Any], JudgeResult]) -> JudgedLine:
        row, result = outcome
        return JudgedLine(result.row(row), result)

    def usage(self, outcome: tuple[dict[str, Any], JudgeResult]) -> Cost:
        return outcome[1].usage


class JudgeWorker:
    """One Ray actor of ``bineval judge --ray``: the run's LM configured once (its own engine, the shared disk
    cache), then batches of rows judged on it."""

    def __init__(self, config_json: str, checklist_json: str, fields: tuple[str, str], user_files: list[str]) -> None:
        from bineval_dspy.judges.runner import parallelism
        from bineval_dspy.lm import runtime
        from bineval_dspy.verifiers import load_verifier_files

        load_verifier_files(user_files)
        config = JudgeFile.model_validate_json(config_json)
        self.lm = runtime.configure(config.lm, config.cache_dir)
        self.judge = file_judge(config, self.lm.model)
        self.checklist = Checklist.model_validate_json(checklist_json)
        self.fields = fields
        self.repeats = config.repeats
        self.plan = parallelism(self.lm, sum(q.verifier is None for q in self.checklist.questions), concurrency=config.concurrency, threads=config.threads)

    def run(self, rows: list[tuple[int, dict[str, Any]]]) -> list[tuple[dict[str, Any], JudgeResult]]:
        """Each (data line, row) judged, as (row, result), in input order."""
        from bineval_dspy.judges.runner import judge_rows

        return list(judge_rows(self.judge, self.checklist, rows, total=len(rows), plan=self.plan, fields=self.fields, show=False, repeats=self.repeats))


def _batch_target(config: JudgeFile) -> Any:
    """The LM's batch API, refused in one line before any work where there is none."""
    from bineval_dspy.lm.batches import batch_target

    return batch_target(config.lm, budgeted=config.budget.limited)


def plan_file(config: JudgeFile) -> tuple[Plan, str | None]:
    """The judge's LM work on the rows a run would judge (complete rows of earlier output are kept): every LM
    question of every row, ``samples`` times, plus its content-free prior under calibration (batch scoring: one
    call for all of a row's questions), all of it ``repeats`` times; and, with ``batch``, where the batches would go."""
    from bineval_dspy.judges.question import CONTENT_FREE_OUTPUT
    from bineval_dspy.lm.estimate import completion_limit, formatted, message_tokens, token_counter

    checklist = load_model(config.checklist, Checklist)
    fields = data_fields(config)
    _count_rows(config.data, config.limit, fields)
    target = _batch_target(config) if config.batch else None
    spec = config.lm.spec
    judge = file_judge(config, spec)
    count, exact = token_counter(spec)
    if not config.overwrite:  # the rows it would keep are no plan when the run refuses them (the LM's part is checked then)
        known = {"data": file_digest(config.data), "checklist": digest(checklist.model_dump_json()), "fields": " -> ".join(fields), "repeats": str(config.repeats)}
        check_resumable(config.output, known, defaults={"fields": JudgeFingerprint.model_fields["fields"].default, "repeats": "1"}, recorded=recorded_fingerprint(config.output))
    kept = {int(line) for line in judged_rows(config.output).finished_keys()} if not config.overwrite else set()
    asked = [q for q in checklist.questions if q.verifier is None]
    predictor, kind = judge.named_predictors()[0][1], judge.kind
    rows = calls = tokens = 0
    given, judged = fields
    for n, row in data_rows(config.data, config.limit, fields):
        if n in kept:
            continue
        rows += 1
        if kind.scoring == "batch" and asked:  # one call a sample for all the row's questions (and one for its prior)
            for output, times in ((row[judged], kind.samples), (CONTENT_FREE_OUTPUT, int(kind.calibration == "content_free"))):
                prompt = message_tokens(count, _batch_messages(judge, row[given], output, asked))
                calls, tokens = calls + times, tokens + times * prompt
            continue
        for q in asked:
            prompt = message_tokens(count, formatted(predictor, kind.adapter, {"input": row[given], "output": row[judged], "question": q.text}))
            calls, tokens = calls + kind.samples, tokens + kind.samples * prompt
            if kind.calibration == "content_free":
                prior = formatted(predictor, kind.adapter, {"input": row[given], "output": CONTENT_FREE_OUTPUT, "question": q.text})
                calls, tokens = calls + 1, tokens + message_tokens(count, prior)
    calls, tokens = calls * config.repeats, tokens * config.repeats  # every LM call again in each repeat (code checks once)
    repeated = f" x {config.repeats} repeats" if config.repeats > 1 else ""
    what = f"judge {rows} row(s) x {len(asked)} LM question(s){repeated}" + (f" ({len(kept)} complete row(s) of {config.output} kept)" if kept else "")
    plan = Plan(what, calls, tokens, config.lm.max_tokens or completion_limit(), exact, spec, config.lm.api_base)
    if target is None:
        return plan, None
    from bineval_dspy.lm.batches import batch_plan

    return plan, batch_plan(target, plan)


def _batch_messages(judge: BinaryJudge, input: str, output: str, asked: list[Question]) -> list[dict[str, Any]]:
    """The messages one batch-scoring call sends for a row: every LM question of it, numbered."""
    from bineval_dspy.judges import batch

    assert judge.answer_all is not None  # a batch judge has its batch predictor
    signature = batch.batch_signature(len(asked), judge.kind.explanations == "all").with_instructions(judge.answer_all.signature.instructions)
    return BatchAdapter().format(signature, demos=[], inputs={"input": input, "output": output, "questions": batch.numbered(asked)})
