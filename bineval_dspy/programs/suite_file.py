"""Generating responses for a suite file, optionally improved with STICK, resumably: ``run_suite`` (what ``bineval
generate`` runs) and ``plan_suite`` (its dry run). Rows already in the output, made with the same settings, are
kept; the others are generated and appended as they finish."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from bineval_dspy.checklists.tick import TickQuestionWriter
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import check_resumable, digest, file_digest
from bineval_dspy.core.jsonio import check_output_path, read_text
from bineval_dspy.core.settings import unrecorded
from bineval_dspy.enforce.plan import Source
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.lm.budget import BudgetMeter
from bineval_dspy.lm.estimate import Plan
from bineval_dspy.programs.generator import (
    GeneratedRow,
    GenerationReport,
    Generator,
    generated_log,
    generated_rows,
    templated,
)
from bineval_dspy.programs.records import GenerationRecord
from bineval_dspy.programs.refine import DEFAULT_MAX_TOKENS
from bineval_dspy.runs.execute import executor_for, user_verifier_files
from bineval_dspy.runs.header import recorded_fingerprint
from bineval_dspy.runs.kinds import RUN_KINDS
from bineval_dspy.runs.spec import UnitRunSpec
from bineval_dspy.suites.rows import SuiteRow
from bineval_dspy.suites.templates import MissingVariable

STICK_QUESTIONS = 8  # the most LM-written (TICK) questions of a row's hybrid checklist: its judge's calls per response


@RUN_KINDS.writes("generate", results=GenerationRecord)
class GenerateSuite(UnitRunSpec):
    """One generation run over a suite: which prompts, which program, how much STICK (the LM, limits and executor:
    ``UnitRunSpec``)."""

    suite: Path  # JSONL rows: key, prompt, instruction_id_list, kwargs
    output: Path = unrecorded(Path("responses.jsonl"))  # key, prompt, response (and STICK's records); resumed when it exists
    instructions: Path | None = None  # a file whose text replaces the default generation instructions
    program: Path | None = None  # an optimizer's program.json (or its run directory): instructions, demos, token limit
    split: Literal["train", "val", "test"] | None = None  # only this split of the ``program`` run (its splits.json)
    limit: int | None = Field(default=None, ge=1)  # only the first N rows (of the split)
    refine: int = Field(default=0, ge=0)  # STICK self-refinement: up to this many rewrites
    best_of: int = Field(default=1, ge=1)  # STICK best-of-N: keep the best sample
    stop_at_pass: bool = False  # with best_of: draw no sample after the first that passes every check
    verifier_mode: Literal["strict", "loose"] = "strict"  # the STICK judge's code verifiers
    max_tokens: int | None = Field(default=None, ge=1)  # per response; None: the program's, else DEFAULT_MAX_TOKENS
    enforce: Source | None = None  # decode under each prompt's constraints (extracted or annotated); None: the program's

    @property
    def stick(self) -> bool:
        return bool(self.refine) or self.best_of > 1


@dataclass
class GeneratedSuite:
    """What a run did, and the records of its rows the output now holds."""

    report: GenerationReport
    rows: list[SuiteRow]
    records: list[dict[str, Any]]
    model: str
    tick_fallbacks: int  # rows whose TICK questions did not parse: judged by their code checks alone


def suite_rows(config: GenerateSuite) -> list[SuiteRow]:
    """The rows a run generates: the suite's, or one split of the program's run, at most ``limit``. A row of only a key
    and a prompt whose words state no constraint is generated too (decoded plainly, its record saying so): a reply
    needs no instruction ids, and STICK's checklist asks the LM's questions (``verify`` still refuses such a row)."""
    from bineval_dspy.checklists.stated import extracted
    from bineval_dspy.suites.rows import load_suite

    rows = load_suite(config.suite, extract=extracted, bare=True)
    if not rows:
        raise InputError(f"{config.suite}: no suite rows")
    rows = split_of(rows, config.suite, config.program, config.split)
    return rows[: config.limit] if config.limit else rows


def split_of(rows: list[SuiteRow], suite: Path, program: Path | None, split: str | None) -> list[SuiteRow]:
    """The suite rows of one split of the run that wrote ``program`` (its ``splits.json``: beside the program, or an
    experiment arm's in the experiment's folder), in suite order; all rows when ``split`` is None."""
    if not split:
        return rows
    from bineval_dspy.programs.state import SPLITS_FILE, Splits, run_folder

    if program is None:
        raise InputError("`split` needs `program` RUN_DIR/program.json: the split is the one that run recorded")
    folder = run_folder(program)
    wanted = set(getattr(Splits.load(folder), split))
    chosen = [row for row in rows if str(row.key) in wanted]
    if len(chosen) < len(wanted):
        raise InputError(f"{suite}: {len(wanted) - len(chosen)} key(s) of the {split} split in {folder / SPLITS_FILE} are not in the suite")
    return chosen


def suite_program(config: GenerateSuite, rows: list[SuiteRow] | None = None, template: str | None = None) -> Generator:
    """The generator: from ``program`` (its instructions, demos and token limit, unless ``max_tokens`` is given),
    else the ``instructions`` file's, else a template suite's ``template``, else the default instructions; one
    enforcing the suite's annotations is given the run's rows (``rows``, else read here: a Ray worker builds its own)."""
    program = _program(config, template)
    if program.enforce == "annotated":
        try:
            program.annotate(rows if rows is not None else suite_rows(config))
        except InputError as exc:
            raise InputError(f"{config.suite}: {exc}") from None
    return program


def _program(config: GenerateSuite, template: str | None) -> Generator:
    from bineval_dspy.programs.state import load_program

    if config.program is not None and config.instructions is not None:
        raise InputError("give `program` or `instructions`, not both: a program file holds its instructions")
    if config.program is None:
        text = read_text(config.instructions) if config.instructions is not None else template
        if text is not None and not text.strip():
            raise InputError(f"{config.instructions}: the instructions file is empty")
        return Generator(text, max_tokens=config.max_tokens or DEFAULT_MAX_TOKENS, enforce=config.enforce)
    program = load_program(config.program, kind="generator").build()
    assert isinstance(program, Generator)
    if config.max_tokens:
        program.max_tokens = config.max_tokens
    if config.enforce is not None:
        program.enforce = config.enforce
    return program


def _checked(config: GenerateSuite) -> tuple[list[SuiteRow], Generator]:
    if config.stop_at_pass and config.best_of < 2:
        raise InputError("`stop_at_pass` stops Best-of-N early: give it with `best_of` N (N >= 2)")
    config.check_executor()
    rows = suite_rows(config)
    templates = {row.template for row in rows if row.template is not None}
    if not templates:
        return rows, suite_program(config, rows)
    if config.stick:
        raise InputError(f"{config.suite}: a template suite is generated plainly: `refine` and `best_of` take a suite of prompts")
    program = suite_program(config, rows, templates.pop())
    template = program.generate.signature.instructions
    if not templated(template):
        raise InputError(f"{config.suite}: a template suite needs a program whose instructions are a template: {config.program or config.instructions} names no {{{{variable}}}}")
    try:  # the program's template (an optimized one) fills the rows: their prompts are what it sends
        return [row.with_template(template) for row in rows], program
    except MissingVariable as exc:
        raise InputError(f"{config.program or config.instructions}: its template names {{{{{exc.name}}}}}, which the rows of {config.suite} do not have") from None


@dataclass
class GenerationSetup:
    """What generating a row needs, built once per process (the command's, or each Ray worker's): the configured LM,
    the program, and with STICK its judge and TICK writer."""

    config: GenerateSuite
    lm: Any  # dspy.LM
    program: Generator
    judge: BinaryJudge | None
    writer: TickQuestionWriter | None
    threads: int  # rows generated at once

    def generated(self, rows: list[SuiteRow], meter: BudgetMeter | None = None, show: bool = True) -> Iterator[GeneratedRow]:
        """The rows generated here, in order (``programs.generator.generated_rows``)."""
        config = self.config
        return generated_rows(
            rows, self.program, threads=self.threads, refine=config.refine, best_of=config.best_of, judge=self.judge,
            writer=self.writer, meter=meter, stop_at_pass=config.stop_at_pass, show=show,
        )  # fmt: skip


def generation_setup(config: GenerateSuite, program: Generator | None = None) -> GenerationSetup:
    """The LM configured (with the run's disk cache), the program (``program``, or the config's) and STICK's parts."""
    from bineval_dspy.judges.runner import parallelism
    from bineval_dspy.lm import runtime
    from bineval_dspy.lm.runtime import effective_threads
    from bineval_dspy.programs.generator import check_steerable

    program = program or suite_program(config)
    lm = runtime.configure(config.lm, config.cache_dir)
    check_steerable(program, lm)
    judge = BinaryJudge(verifier_mode=config.verifier_mode) if config.stick else None
    plan = parallelism(lm, 0, threads=config.threads)  # rows generated at once, as the judging runner runs rows
    effective_threads(lm, config.threads or 1, asked=True)  # the embedded model says it ignores threads
    if judge is not None:
        judge.threads = plan.questions
    writer = TickQuestionWriter() if judge is not None else None
    return GenerationSetup(config, lm, program, judge, writer, plan.rows)


def run_suite(config: GenerateSuite) -> GeneratedSuite:
    """Generate (optionally STICK-improved) responses for the suite's rows not already in the output: a
    ``GenerateRun`` executed (``runs.execute``) here, or on Ray actors while this process writes the one output."""
    from bineval_dspy.programs.generation import GenerateRun, generation_fingerprint, note_steering, report_of
    from bineval_dspy.programs.state import program_path

    rows, program = _checked(config)
    out = config.output
    inputs = [path for path in (config.instructions,) if path] + ([program_path(config.program)] if config.program else [])
    check_output_path(out, config.suite, *inputs)
    if out.exists():
        generated_log(out).finished_keys()  # a malformed output file is reported before any LM is loaded
    setup = generation_setup(config, program)
    meter = BudgetMeter.for_models(config.budget, [setup.lm.model])
    settings = generation_fingerprint(
        program, setup.lm, _suite_digest(config, rows), refine=config.refine, best_of=config.best_of, stop_at_pass=config.stop_at_pass, judge=setup.judge
    )
    worker = (GenerateWorker, (config.model_dump_json(), user_verifier_files()))
    run = GenerateRun(rows, out, settings, lambda todo, meter: setup.generated(list(todo), meter=meter), worker)
    report = report_of(run, executor_for(config, meter), config.overwrite)
    wanted = {row.key for row in rows}
    records = [obj for _, obj in run.log().read() if str(obj.get("key")) in wanted] if out.exists() else []
    note_steering(run, setup.program)
    return GeneratedSuite(report, rows, records, setup.lm.model, setup.writer.fallbacks if setup.writer is not None else 0)


class GenerateWorker:
    """One Ray actor of ``bineval generate --ray``: the run's LM, program and STICK judge built once (its own engine,
    the shared disk cache), then batches of suite rows generated on them."""

    def __init__(self, config_json: str, user_files: list[str]) -> None:
        from bineval_dspy.verifiers import load_verifier_files

        load_verifier_files(user_files)
        self.setup = generation_setup(GenerateSuite.model_validate_json(config_json))

    def run(self, rows: list[SuiteRow]) -> list[GeneratedRow]:
        """Each row generated (record, or the error that kept it from one) with its cost, in input order."""
        return list(self.setup.generated(rows, show=False))


def _suite_digest(config: GenerateSuite, rows: Sequence[SuiteRow]) -> str:
    """What a generation's fingerprint records of its rows: the suite file's bytes, or a template's filled rows."""
    return file_digest(config.suite) if config.suite.suffix != ".toml" else digest("".join(row.model_dump_json() for row in rows))


def plan_suite(config: GenerateSuite) -> Plan:
    """The LM work of the rows a run would generate (finished rows of earlier output are kept): one response each;
    with STICK also the TICK writer, every sample's and rewrite's judging and the rewrites, counted at most and
    then estimated (their prompts depend on responses not yet written)."""
    from bineval_dspy.lm.estimate import JUDGE_OVERHEAD_TOKENS, formatted, message_tokens, token_counter

    rows, program = _checked(config)
    count, exact = token_counter(config.lm.spec)
    if not config.overwrite:  # the rows it would keep are no plan when the run refuses them (the LM's part is checked then)
        known = {"suite": _suite_digest(config, rows), "instructions": digest(program.generate.signature.instructions), "max_tokens": str(program.max_tokens),
                 "refine": str(config.refine), "best_of": str(config.best_of)}  # fmt: skip
        check_resumable(config.output, known, recorded=recorded_fingerprint(config.output))
    kept = generated_log(config.output).finished_keys() if not config.overwrite else set()
    todo = [row for row in rows if str(row.key) not in kept]
    prompts = [message_tokens(count, formatted(program.generate, program.adapter, {"prompt": row.prompt})) for row in todo]
    calls, tokens = len(todo), sum(prompts)
    best_of, refine = config.best_of, config.refine
    if config.stick:  # each response judged by up to STICK_QUESTIONS LM questions; each rewrite sees the prompt and a response
        responses = best_of + refine
        response_tokens = program.max_tokens
        judge_prompt = [p + response_tokens + JUDGE_OVERHEAD_TOKENS for p in prompts]
        calls += len(todo) * (best_of - 1 + 1 + responses * STICK_QUESTIONS + refine)
        tokens += sum(p * (best_of - 1) + p + j * responses * STICK_QUESTIONS + (p + response_tokens) * refine for p, j in zip(prompts, judge_prompt))
    what = f"generate {len(todo)} row(s)" + (f" with STICK (best of {best_of}, refine {refine}; at most)" if config.stick else "")
    what += f" ({len(kept)} finished row(s) of {config.output} kept)" if kept else ""
    estimated = "STICK's judge prompts and rewrites" if config.stick else ""
    return Plan(what, calls, tokens, program.max_tokens, exact, config.lm.spec, config.lm.api_base, estimated=estimated)
