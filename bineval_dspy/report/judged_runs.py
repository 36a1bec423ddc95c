"""Judged outputs for ``report`` and ``show``: `bineval judge` rows, `bineval demo` output, and suite outputs
(`bineval verify` and `bineval generate` rows) shown as judged rows with one verdict per instruction or check."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from bineval_dspy.core.degenerate import Degenerate, Tally, degeneracy
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import describe_validation_error, read_jsonl
from bineval_dspy.core.schema import Scorecard, Verdict
from bineval_dspy.judges.rows import judged_rows
from bineval_dspy.lm.usage import Cost, total
from bineval_dspy.programs.records import GenerationRecord
from bineval_dspy.report.spend import spend_of

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


@dataclass(frozen=True)
class JudgeRun:
    """`bineval judge` (or `bineval demo`) output: every row's scorecard with all its verdicts."""

    source: Path
    rows: list[JudgedRow]
    task: str | None = None
    kind: Literal["judge"] = "judge"

    @property
    def spend(self) -> Cost:
        return total(row.spend for row in self.rows)

    @property
    def degenerate(self) -> Degenerate | None:
        """Whether the LM verdicts tell the outputs apart (``core.degenerate``): what is wrong with them, or None."""
        return degeneracy(Tally.of(v for row in self.rows for v in row.card.verdicts))



SUITE_DIMENSION = "instructions"  # the one dimension a suite output's verdicts are shown in


def suite_card(verdicts: list[Verdict]) -> Scorecard:
    """A card for a suite row's verdicts: the followed fraction, no score while any is unanswered (ungraded)."""
    answered = [v for v in verdicts if v.answer != "unanswered"]
    unanswered = len(verdicts) - len(answered)
    score = None if unanswered or not verdicts else sum(v.answer == "yes" for v in verdicts) / len(verdicts)
    dims = {SUITE_DIMENSION: score} if verdicts else {}
    return Scorecard(dimension_scores=dims, overall=score, unanswered=unanswered, verdicts=verdicts,
                     unanswered_by_dimension={SUITE_DIMENSION: unanswered} if unanswered else {})


def verified_card(row: dict[str, Any], where: str) -> Scorecard:
    """`verify`'s row: one verdict per instruction, unanswered where its kwargs left it ungraded."""
    ids, follows = row.get("instruction_id_list"), row.get("follow_instruction_list")
    if not isinstance(ids, list) or not isinstance(follows, list) or len(ids) != len(follows):
        raise InputError(f"{where}: fields 'instruction_id_list' and 'follow_instruction_list' must be lists of one length")
    answers = {True: "yes", False: "no", None: "unanswered"}
    if any(f not in answers for f in follows):
        raise InputError(f"{where}: field 'follow_instruction_list': expected true, false or null")
    # Keyed by the instruction's id, not its position: views add verdicts up by question id across rows, and rows
    # list their instructions in any order (a second use of one id in a row is told apart by its place).
    seen: Counter[str] = Counter()
    verdicts = []
    for i, f in zip(ids, follows):
        seen[str(i)] += 1
        key = str(i) if seen[str(i)] == 1 else f"{i}#{seen[str(i)]}"
        verdicts.append(Verdict(question_id=key, question=str(i), dimension=SUITE_DIMENSION, answer=answers[f], judge=f"code:{i}"))  # type: ignore[arg-type]
    return suite_card(verdicts)


def generated_card(row: dict[str, Any], where: str) -> Scorecard:
    """`generate`'s row: its STICK checks as verdicts (a plain generation has none)."""
    record = validated(GenerationRecord, row, where)
    return suite_card([
        Verdict(question_id=f"q{k}", question=c.question, dimension=SUITE_DIMENSION, answer=c.answer, explanation=c.explanation, judge=c.judge)
        for k, c in enumerate(record.checks or [])
    ])


def suite_output(path: Path, card_of: Callable[[dict[str, Any], str], Scorecard], task: str) -> JudgeRun:
    """`verify` or `generate` output shown as judged rows: the prompt as input, the response as output."""
    rows = []
    for number, row in read_jsonl(path, required=("key", "response")):
        where = f"{path}:{number}"
        rows.append(JudgedRow(id=str(row["key"]), input=text_of(row.get("prompt")), output=text_of(row["response"]), card=card_of(row, where), spend=spend_of(row, where)))
    return JudgeRun(source=path, rows=rows, task=task)


def judge_output(path: Path) -> JudgeRun:
    rows = [
        JudgedRow(id=line.id, input=text_of(line.row.get("input")), output=text_of(line.row.get("output")), card=line.result.scorecard, spend=line.result.usage)
        for _, line in judged_rows(path).read()
    ]
    return JudgeRun(source=path, rows=rows)


def demo_output(path: Path, raw: dict[str, Any]) -> JudgeRun:
    """`bineval demo` output: the bundled article and each summary's scorecard."""
    if not isinstance(raw["results"], list):
        raise InputError(f"{path}: field 'results': expected a list")
    rows = []
    for k, result in enumerate(raw["results"]):
        if not isinstance(result, dict) or "scorecard" not in result:
            raise InputError(f"{path}: field 'results.{k}.scorecard' is missing")
        card = validated(Scorecard, result["scorecard"], f"{path}: in 'results.{k}.scorecard'")
        rows.append(JudgedRow(id=text_of(result.get("label", k)), input=text_of(raw["article"]), output=text_of(result.get("summary")), card=card, spend=spend_of(result, f"{path}: in 'results.{k}'")))
    return JudgeRun(source=path, rows=rows, task=text_of(raw.get("task")) or None)


def text_of(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
