"""Judged outputs for ``report`` and ``show``: `bineval judge` rows, `bineval demo` output, and suite outputs
(`bineval verify` and `bineval generate` rows) shown as judged rows with one verdict per instruction or check. Each
log is read through its run log (``judged_rows``, ``generated_log``, ``graded_log``), as the run that wrote it does."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

import bineval_dspy.programs.judge_file  # noqa: F401  (the judge's run registers the keys its old rows are told by)
from bineval_dspy.core.degenerate import Degenerate, Tally, degeneracy
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import describe_validation_error
from bineval_dspy.core.repeats import Repeated, RepeatTally
from bineval_dspy.core.schema import Scorecard, Verdict
from bineval_dspy.judges.rows import judged_rows
from bineval_dspy.lm.usage import Cost, total
from bineval_dspy.programs.generator import generated_log
from bineval_dspy.programs.records import EnforcementSummary, GenerationRecord
from bineval_dspy.report.spend import spend_of
from bineval_dspy.runs.header import read_header
from bineval_dspy.runs.kinds import LOG, RUN_KINDS
from bineval_dspy.suites.grading import ResultRow, graded_log

M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], raw: Any, where: str) -> M:
    """``raw`` as ``model``; what does not fit is one InputError line naming ``where`` and the field."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise InputError(f"{where}: {describe_validation_error(exc)}") from None


@dataclass(frozen=True)
class JudgedRow:
    """One judged output: its id (the row's ``id``, else its data line), what it was judged on, and its card."""

    id: str
    input: str
    output: str
    card: Scorecard
    spend: Cost
    repeats: Repeated | None = None  # judged K times (`judge --repeats`): the card holds the verdicts that count


@dataclass(frozen=True)
class JudgedRows:
    """`bineval judge` (or `bineval demo`) output: every row's scorecard with all its verdicts."""

    source: Path
    rows: list[JudgedRow]
    task: str | None = None
    enforcement: EnforcementSummary | None = None  # `generate --enforce` output: what steered decoding did
    kind: str = "judge"  # the run kind it was read from: judge, generate, verify or demo output
    probe_head: str | None = None  # judged by a probe head: its recorded held-out figures, AT CHANCE when they are (the header's)

    @property
    def spend(self) -> Cost:
        return total(row.spend for row in self.rows)

    @property
    def degenerate(self) -> Degenerate | None:
        """Whether the LM verdicts tell the outputs apart (``core.degenerate``): what is wrong with them, or None."""
        return degeneracy(Tally.of(v for row in self.rows for v in row.card.verdicts))

    @property
    def repeats(self) -> RepeatTally:
        """What the rows judged K times add up to (``core.repeats``): the flip rate, pass^K, flips per question."""
        tally = RepeatTally()
        for row in self.rows:
            if row.repeats is not None:
                tally.add(row.repeats)
        return tally



SUITE_DIMENSION = "instructions"  # the one dimension a suite output's verdicts are shown in


def suite_card(verdicts: list[Verdict]) -> Scorecard:
    """A card for a suite row's verdicts: the followed fraction, no score while any is unanswered (ungraded)."""
    answered = [v for v in verdicts if v.answer != "unanswered"]
    unanswered = len(verdicts) - len(answered)
    score = None if unanswered or not verdicts else sum(v.answer == "yes" for v in verdicts) / len(verdicts)
    dims = {SUITE_DIMENSION: score} if verdicts else {}
    return Scorecard(dimension_scores=dims, overall=score, unanswered=unanswered, verdicts=verdicts,
                     unanswered_by_dimension={SUITE_DIMENSION: unanswered} if unanswered else {})


def verified_card(row: ResultRow, where: str) -> Scorecard:
    """`verify`'s row: one verdict per instruction, unanswered where its kwargs left it ungraded."""
    if len(row.instruction_id_list) != len(row.follow_instruction_list):
        raise InputError(f"{where}: fields 'instruction_id_list' and 'follow_instruction_list' must be lists of one length")
    answers = {True: "yes", False: "no", None: "unanswered"}
    # Keyed by the instruction's id, not its position: views add verdicts up by question id across rows, and rows
    # list their instructions in any order (a second use of one id in a row is told apart by its place).
    seen: Counter[str] = Counter()
    verdicts = []
    for i, f in zip(row.instruction_id_list, row.follow_instruction_list):
        seen[i] += 1
        key = i if seen[i] == 1 else f"{i}#{seen[i]}"
        verdicts.append(Verdict(question_id=key, question=i, dimension=SUITE_DIMENSION, answer=answers[f], judge=f"code:{i}"))  # type: ignore[arg-type]
    return suite_card(verdicts)


def generated_card(record: GenerationRecord) -> Scorecard:
    """`generate`'s row: its STICK checks as verdicts (a plain generation has none)."""
    return suite_card([
        Verdict(question_id=f"q{k}", question=c.question, dimension=SUITE_DIMENSION, answer=c.answer, explanation=c.explanation, judge=c.judge)
        for k, c in enumerate(record.checks or [])
    ])


@RUN_KINDS.reads("generate", title="generate output", suffixes=LOG, legacy=({"key", "response"},))
def generated_output(path: Path) -> JudgedRows:
    """`generate` output, read through its run log, shown as judged rows: the prompt as input, the response as output."""
    rows = []
    steered = []
    for number, raw in generated_log(path).read():
        record = validated(GenerationRecord, raw, f"{path}:{number}")
        rows.append(JudgedRow(id=str(record.key), input=record.prompt, output=record.response, card=generated_card(record), spend=record.usage or Cost()))
        steered += [record.enforcement] if record.enforcement is not None else []
    enforcement = EnforcementSummary.of(steered) if steered else None  # from the rows, so a log from before headers held it reads the same
    return JudgedRows(source=path, rows=rows, kind="generate", task="`bineval generate` output: each STICK check a verdict (none without STICK)", enforcement=enforcement)


@RUN_KINDS.reads("verify", title="verify output", suffixes=LOG, legacy=({"response", "follow_instruction_list", "instruction_id_list"},))
def verified_output(path: Path) -> JudgedRows:
    """`verify` output, read through its run log, shown as judged rows: one code-checked verdict per instruction."""
    rows = [
        JudgedRow(id=str(row.key), input=row.prompt, output=row.response, card=verified_card(row, f"{path}:{number}"), spend=Cost())
        for number, row in graded_log(path).read()
    ]
    return JudgedRows(source=path, rows=rows, kind="verify", task="`bineval verify` output: each instruction a code-checked verdict")


@RUN_KINDS.reads("judge", title="judge output", suffixes=LOG)
def judge_output(path: Path) -> JudgedRows:
    rows = [
        JudgedRow(id=line.id, input=text_of(line.row.get("input")), output=text_of(line.row.get("output")), card=line.result.scorecard, spend=line.result.usage, repeats=line.result.repeats)
        for _, line in judged_rows(path).read()
    ]
    header = read_header(path)
    return JudgedRows(source=path, rows=rows, probe_head=header.probe_head if header is not None else None)


def demo_output(path: Path, raw: dict[str, Any]) -> JudgedRows:
    """`bineval demo` output: the bundled article and each summary's scorecard."""
    if not isinstance(raw.get("results"), list):
        raise InputError(f"{path}: field 'results': expected a list")
    rows = []
    for k, result in enumerate(raw["results"]):
        if not isinstance(result, dict) or "scorecard" not in result:
            raise InputError(f"{path}: field 'results.{k}.scorecard' is missing")
        card = validated(Scorecard, result["scorecard"], f"{path}: in 'results.{k}.scorecard'")
        rows.append(JudgedRow(id=text_of(result.get("label", k)), input=text_of(raw.get("article")), output=text_of(result.get("summary")), card=card, spend=spend_of(result, f"{path}: in 'results.{k}'")))
    return JudgedRows(source=path, rows=rows, kind="demo", task=text_of(raw.get("task")) or None)


def text_of(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
