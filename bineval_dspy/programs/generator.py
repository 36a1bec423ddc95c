"""Generating responses to a suite's prompts: the ``Generator`` program and ``bineval generate``.

``Generator`` is the program whose instructions later issues optimize. ``run_generation`` writes one
JSON line per suite row as soon as it is done, with what it cost (``usage``), so an interrupted run, or one
stopped at its budget, resumes where it stopped; with ``refine``/``best_of`` each response is improved with
STICK against the row's hybrid checklist.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy
from dspy.utils.exceptions import LMAuthError

from bineval_dspy.checklists.hybrid import hybrid_checklist
from bineval_dspy.checklists.stated import Annotated, enforcement_plan
from bineval_dspy.checklists.tick import TickQuestionWriter
from bineval_dspy.core.errors import BudgetExhausted, InputError, one_line
from bineval_dspy.core.runlog import RunLog
from bineval_dspy.core.schema import Checklist, Scorecard
from bineval_dspy.core.scoring import join
from bineval_dspy.enforce.plan import Plan, Source
from bineval_dspy.enforce.steering import metadata
from bineval_dspy.judges.base import Judge
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.lm.budget import BudgetMeter, metered_map
from bineval_dspy.lm.engine import ENGINE_CODE_KEY, engine_of
from bineval_dspy.lm.remote import GRAMMAR_PROVIDER
from bineval_dspy.lm.usage import Cost
from bineval_dspy.programs.records import CheckRecord, Enforced, GenerationRecord, Refinement
from bineval_dspy.programs.refine import DEFAULT_MAX_TOKENS, ChecklistBestOfN, SelfRefine
from bineval_dspy.programs.steer import SteeringSettings, steered_plan
from bineval_dspy.suites.rows import SuiteRow
from bineval_dspy.suites.templates import fill, variables
from bineval_dspy.verifiers import VerifierError, build_check


class GenerateResponse(dspy.Signature):
    """Respond to the user's prompt helpfully and accurately. Follow every instruction and constraint the prompt
    states exactly: length, format, structure, keywords, letter case, language and wording."""

    prompt: str = dspy.InputField(desc="the user's prompt")
    response: str = dspy.OutputField(desc="the reply to the prompt")


def _only_output(signature: type[dspy.Signature]) -> str:
    names = list(signature.output_fields)
    if len(names) != 1:
        raise ValueError(f"PlainChatAdapter needs exactly one output field, got {names}")
    return names[0]


class PlainChatAdapter(dspy.Adapter):
    """Instructions as the system message, the input as the user message, the whole reply as the output.

    This is how instruction-following benchmarks prompt chat models, and it asks no output format of the
    model, so even a 135M model (which ignores DSPy's field headers) always yields a response.
    """

    def format_system_message(self, signature: type[dspy.Signature]) -> str:
        return signature.instructions

    def format_user_message_content(
        self,
        signature: type[dspy.Signature],
        inputs: dict[str, Any],
        prefix: str = "",
        suffix: str = "",
        main_request: bool = False,
    ) -> str:
        names = list(signature.input_fields)
        if len(names) == 1:
            body = str(inputs.get(names[0], ""))
        else:
            body = "\n\n".join(f"{name}:\n{inputs[name]}" for name in names if name in inputs)
        return "\n\n".join(part for part in (prefix, body, suffix) if part)

    def format_assistant_message_content(
        self, signature: type[dspy.Signature], outputs: dict[str, Any], missing_field_message: str | None = None
    ) -> str:
        return str(outputs.get(_only_output(signature), missing_field_message or ""))

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        return {_only_output(signature): completion.strip()}


class TemplateChatAdapter(PlainChatAdapter):
    """A template row's call: the filled template is the whole prompt, one user message (no system message)."""

    def format(self, signature: type[dspy.Signature], demos: list[dict[str, Any]], inputs: dict[str, Any]) -> list[dict[str, Any]]:
        return [message for message in super().format(signature, demos, inputs) if message["role"] != "system"]


class Generator(dspy.Module):
    """``prompt -> response``; ``instructions`` replaces the default generation prompt (the optimizable part). For a
    template suite's row (``suites.templates``) the instructions are its template: called with the row's
    ``variables``, the program sends the template they fill as the prompt, so an edit of the instructions is an edit
    of every row's prompt.

    ``enforce``: decode under the prompt's code-checkable constraints (``enforce.steering``): those its own words
    state (``extracted``) or the suite's annotations (``annotated``, given by ``annotate``). The plan travels with
    the LM call (so it is part of the cache key) and comes back on the prediction as ``plan``; an LM whose engine
    cannot steer is refused before its first call (``check_steerable``). ``steering`` narrows it (``programs.steer``:
    which constraints, how far a floor may raise the token limit); ``enforce`` is its ``enforce``."""

    def __init__(
        self,
        instructions: str | None = None,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        adapter: dspy.Adapter | None = None,
        enforce: Source | None = None,
        steering: SteeringSettings | None = None,
    ) -> None:
        super().__init__()
        if instructions is not None and not instructions.strip():
            raise ValueError("instructions must not be empty")
        signature = GenerateResponse
        if instructions is not None:
            signature = signature.with_instructions(instructions.strip())
        self.generate = dspy.Predict(signature)
        self.max_tokens = max_tokens
        self.adapter = adapter or PlainChatAdapter()
        if steering is not None and enforce is not None and steering.enforce != enforce:
            raise ValueError(f"enforce = {enforce!r} and steering's enforce = {steering.enforce!r}: give one")
        self.steering = steering or SteeringSettings(enforce=enforce)
        self.annotations: dict[str, Annotated] = {}

    @property
    def enforce(self) -> Source | None:
        """Where the constraints decoding keeps come from (None: decoding is plain)."""
        return self.steering.enforce

    @enforce.setter
    def enforce(self, source: Source | None) -> None:
        self.steering = SteeringSettings(enforce=source) if source is None else self.steering.model_copy(update={"enforce": source})

    def annotate(self, rows: Sequence[SuiteRow]) -> Generator:
        """Give an ``annotated`` generator the suite rows whose instruction ids it enforces (found by prompt); a row
        whose ids the extractor supplied has no annotations to enforce."""
        plain = next((row for row in rows if row.extracted), None)
        if plain is not None:
            raise InputError(f"suite row {plain.key!r} has no instruction ids to enforce (enforce = 'annotated'); use 'extracted'")
        self.annotations.update({row.prompt: list(zip(row.instruction_id_list, row.kwargs, strict=True)) for row in rows})
        return self

    def plan(self, prompt: str) -> Plan | None:
        """The decoding plan for ``prompt`` on the LM this program calls (None when not enforcing): a constraint
        that LM's engine cannot execute (a server's grammar cannot express every one) is left to the model, and
        the plan names it as not enforced."""
        if self.enforce is None:
            return None
        if self.enforce == "annotated" and prompt not in self.annotations:
            raise InputError("enforce = 'annotated' needs the suite row of every prompt; this prompt is in none given (use 'extracted' for plain prompts)")
        engine = engine_of(self.generate.lm or dspy.settings.lm)
        refuse = engine.unsteerable if engine.supports_steering else None
        if self.steering.limited:
            return steered_plan(prompt, self.steering, self.annotations.get(prompt), refuse)
        return enforcement_plan(prompt, self.enforce, self.annotations.get(prompt), refuse)

    def forward(self, prompt: str, config: dict[str, Any] | None = None, variables: dict[str, str] | None = None) -> dspy.Prediction:
        adapter = self.adapter
        if variables is not None:
            prompt, adapter = self.filled(variables), TemplateChatAdapter()
        elif templated(self.generate.signature.instructions):
            raise ValueError("the instructions are a template ({{variables}}): this call has no row's `variables` to fill it with")
        plan = self.plan(prompt)
        settings: dict[str, Any] = {"max_tokens": self.max_tokens}
        if plan is not None and plan.steers:
            code = engine_of(self.generate.lm or dspy.settings.lm).steering_code  # a cached reply is this code's
            steered = {**metadata(plan.steering), **({ENGINE_CODE_KEY: code} if code else {})}
            settings = {"max_tokens": self.steering.token_limit(self.max_tokens, plan.steering.min_tokens), "metadata": steered}
        with dspy.context(adapter=adapter):
            prediction = self.generate(prompt=prompt, config={**settings, **(config or {})})
        prediction.plan = plan
        return prediction

    def filled(self, values: dict[str, str]) -> str:
        """The prompt a template row is sent: the instructions (its template) filled with its values."""
        instructions = self.generate.signature.instructions
        if not templated(instructions):
            raise ValueError("a template row needs a template: these instructions name no {{variable}}")
        return fill(instructions, values)


def templated(instructions: str) -> bool:
    """Whether a program's instructions are a prompt template (name a ``{{variable}}``)."""
    return bool(variables(instructions))


def check_steerable(program: dspy.Module, lm: dspy.LM) -> None:
    """Refuse, before any call, an enforcing generator on an LM whose engine cannot enforce: it would decode
    plainly and its figures would read as enforced ones."""
    if isinstance(program, Generator) and program.enforce is not None and not engine_of(lm).supports_steering:
        raise InputError(
            f"enforce = {program.enforce!r}: {lm.model} cannot decode under constraints (the embedded models can, and a llama.cpp "
            f"server named as `lm` {GRAMMAR_PROVIDER}/<model> with `api_base`); leave enforce out"
        )


def plan_of(program: dspy.Module, prompt: str) -> Plan | None:
    """The decoding plan ``program`` follows for ``prompt`` (None: not a generator, or one that does not enforce)."""
    return program.plan(prompt) if isinstance(program, Generator) else None


def enforcement_of(plan: Plan | None, prompt: str, response: str) -> Enforced | None:
    """What a decode of ``prompt`` under ``plan`` enforced (None when it enforced nothing) and, checked by code on
    the final ``response``, whether each enforced constraint held. ``plan``: the one the decode followed
    (``Prediction.plan``), so a row's plan is computed once."""
    if plan is None:
        return None
    held = {}
    for decision in plan.enforced:
        try:
            held[decision.instruction_id] = build_check(decision.instruction_id, decision.kwargs, prompt)(response).passed
        except VerifierError:  # a check that cannot run did not show that it held
            held[decision.instruction_id] = False
    return Enforced(source=plan.source, decisions=plan.decisions, held=held)


# -- one row ---------------------------------------------------------------------------------------
def _checklist_summary(checklist: Checklist, card: Scorecard) -> list[CheckRecord]:
    """Each question with its verdict and the judge that gave it: the record explains its own score."""
    return [
        CheckRecord(question=q.text, dimension=q.dimension, answer=v.answer, judge=v.judge, explanation=v.explanation)
        for q, v in join(checklist, card.verdicts)
    ]


def generate_row(
    row: SuiteRow,
    program: dspy.Module,
    *,
    refine: int = 0,
    best_of: int = 1,
    judge: Judge | None = None,
    writer: TickQuestionWriter | None = None,
    stop_at_pass: bool = False,
) -> GenerationRecord:
    """One output record: ``key``, ``prompt``, ``response``; with STICK also ``score``, ``checks`` and
    ``selection`` (best-of-N: every sample's score, the chosen index) and/or ``refinement`` (iterations).
    Best-of-N runs first (``stop_at_pass``: no sample after the first that passes every check), then refinement
    improves the chosen sample."""
    if refine < 0 or best_of < 1:
        raise ValueError("refine must be >= 0 and best_of >= 1")
    if row.variables is not None:  # a template row: plain generation (``suite_file`` refuses STICK for it)
        if refine or best_of > 1:
            raise ValueError("STICK (refine, best_of) takes a suite of prompts, not a template suite")
        response = program(prompt=row.prompt, variables=row.variables).response
        return GenerationRecord(key=row.json_key, prompt=row.prompt, response=response, variables=row.variables)
    if not refine and best_of == 1:
        prediction = program(prompt=row.prompt)
        plan = getattr(prediction, "plan", None) if isinstance(program, Generator) else None
        return GenerationRecord(key=row.json_key, prompt=row.prompt, response=prediction.response, enforcement=enforcement_of(plan, row.prompt, prediction.response))
    judge = BinaryJudge() if judge is None else judge
    checklist = hybrid_checklist(row, generator=writer)
    card: Scorecard | None = None
    selection = refinement = None
    if best_of > 1:
        pick = ChecklistBestOfN(program, judge, best_of, stop_at_pass=stop_at_pass)(prompt=row.prompt, checklist=checklist)
        response, card, selection = pick.response, pick.scorecard, pick.selection
    else:
        response = program(prompt=row.prompt).response
    if refine:
        refined = SelfRefine(judge, refine)(prompt=row.prompt, response=response, checklist=checklist, scorecard=card)
        refinement = Refinement(
            max_iterations=refine, initial_score=refined.initial_score, final_score=refined.scorecard.overall, iterations=refined.iterations
        )
        response, card = refined.response, refined.scorecard
    assert card is not None
    return GenerationRecord(
        key=row.json_key, prompt=row.prompt, response=response, score=card.overall, checks=_checklist_summary(checklist, card),
        selection=selection, refinement=refinement, enforcement=enforcement_of(plan_of(program, row.prompt), row.prompt, response),
    )


# -- many rows, resumable --------------------------------------------------------------------------
@dataclass
class GenerationReport:
    """What one ``run_generation`` call did; failed rows are not written, so a rerun retries them.

    ``usage`` is what this call spent, failed rows included; ``stopped`` is set when the budget ended it early.
    """

    written: int = 0
    resumed: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    usage: Cost = field(default_factory=Cost)
    stopped: BudgetExhausted | None = None


def unchecked(record: dict[str, Any]) -> bool:
    """Whether a written STICK record was chosen or revised with part of its checklist unanswered (read from the
    raw row: a resume keeps what it cannot type, and a rerun retries it)."""
    return any(check.get("answer") == "unanswered" for check in record.get("checks") or [])


def failed_samples(record: dict[str, Any]) -> int:
    """Best-of-N samples of a written record whose call failed (read from the raw row, as ``unchecked``): the row
    was chosen among fewer samples than asked for, and a rerun draws them again."""
    return sum("error" in candidate for candidate in (record.get("selection") or {}).get("candidates") or [])


def incomplete(record: dict[str, Any]) -> bool:
    """Whether a written record is not finished: part of its checklist unanswered, or a sample that failed."""
    return unchecked(record) or failed_samples(record) > 0


GeneratedRow = tuple[tuple[SuiteRow, GenerationRecord | None, str], Cost]
"""One row's outcome: (row, its record or None, the error that kept it from one), and what its LM calls cost."""


def generated_rows(
    rows: Sequence[SuiteRow],
    program: dspy.Module,
    *,
    threads: int = 1,
    refine: int = 0,
    best_of: int = 1,
    judge: Judge | None = None,
    writer: TickQuestionWriter | None = None,
    meter: BudgetMeter | None = None,
    stop_at_pass: bool = False,
    show: bool = True,
) -> Iterator[GeneratedRow]:
    """Each row generated (``generate_row``) with its cost, in order, ``threads`` at once; a row starts only when
    ``meter``'s budget lets it. A failing row is its error, not the run's end (it is retried on the next run)."""
    if refine or best_of > 1:
        judge = BinaryJudge() if judge is None else judge
        writer = TickQuestionWriter() if writer is None else writer

    def one(row: SuiteRow) -> tuple[SuiteRow, GenerationRecord | None, str]:
        try:
            record = generate_row(row, program, refine=refine, best_of=best_of, judge=judge, writer=writer, stop_at_pass=stop_at_pass)
            return row, record, ""
        except LMAuthError as exc:  # a refused key fails every row alike: the run's setup is wrong, as judge says
            raise InputError(f"the LM refused the API key ({one_line(exc)}); check `api_key_env`") from None
        except Exception as exc:  # one failing row must not stop a long run; it is retried on the next
            return row, None, one_line(exc)

    yield from metered_map(one, rows, "generating", threads=threads, meter=meter, kind="row", what="row(s)", show=show)


def generated_log(out: Path) -> RunLog[dict[str, Any]]:
    """Generate's output as a run log: records keyed by suite key, kept when the response is not blank and the
    record is complete (``incomplete``; a blank response is retried: the LM cache never keeps one)."""
    def finished(record: dict[str, Any]) -> bool:
        return bool(str(record.get("response") or "").strip()) and not incomplete(record)

    return RunLog(out, key=lambda record: str(record["key"]), parse=lambda number, record: record, dump=lambda record: record, finished=finished, required=("key",))
