"""Judged rows as ``bineval judge`` writes them: each data row with its result under one key, and what a run's rows
add up to (means, failures, lineage), summed one row at a time so a report on any number of rows holds none of them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SerializerFunctionWrapHandler, ValidationError, model_serializer

from bineval_dspy.core.degenerate import Degenerate, Tally, degeneracy
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.repeats import Repeated, RepeatTally
from bineval_dspy.core.runlog import RunLog
from bineval_dspy.core.schema import Checklist, Question, Scorecard, Verdict
from bineval_dspy.core.scoring import join, lineage_scores
from bineval_dspy.lm.usage import Cost

JUDGE_KEY = "bineval"  # judge output rows keep the user's fields and put ours under this one key
LINEAGE_KEYS = ("perspective", "scenario")  # what a Qworld criterion's lineage names, reported in that order
MOST_FAILED = 5  # rows and questions a summary lists as failing most


class JudgeResult(BaseModel):
    """What the judge adds to one data row (under ``JUDGE_KEY``): the data line it judged, whether every question
    was answered (a resume judges incomplete rows again), the scorecard and its cost. ``empty_output``: the output
    was empty (judged like any other, but rarely meant); ``lineage_scores``: the card's score per Qworld perspective
    and scenario; ``repeats``: the row judged K times (``core.repeats``). Each is left out of the row when not set."""

    line: int
    complete: bool
    scorecard: Scorecard
    usage: Cost = Cost()
    empty_output: bool | None = None
    lineage_scores: dict[str, dict[str, float | None]] | None = None
    repeats: Repeated | None = None  # `--repeats K`: each LM question's K answers; the scorecard holds the ones that count

    @model_serializer(mode="wrap")
    def _unset_left_out(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        for name in ("empty_output", "lineage_scores", "repeats"):
            if isinstance(data, dict) and data.get(name) is None:
                data.pop(name, None)
        return data

    def row(self, data: dict[str, Any]) -> dict[str, Any]:
        """The output line: the data row's fields, then this result under ``JUDGE_KEY``."""
        return {**data, JUDGE_KEY: self.model_dump(mode="json")}


@dataclass(frozen=True)
class JudgedLine:
    """One line of `bineval judge` output: the whole row (the data's fields, ours under ``JUDGE_KEY``) and our result
    read from it."""

    row: dict[str, Any]
    result: JudgeResult

    @property
    def id(self) -> str:
        """The row's ``id`` field, else the data line it was judged from."""
        return str(self.row.get("id", self.result.line))


def judged_rows(path: Path, hint: str = "") -> RunLog[JudgedLine]:
    """`bineval judge` output as its run log, for every reader of judged rows (``show``, ``report``, ``analyze``): rows
    keyed by their data line, kept by a resume when complete; a line whose result is damaged is one located error
    naming the field (``hint`` appended: what to do about it)."""

    def parse(number: int, row: dict[str, Any]) -> JudgedLine:
        ours = row[JUDGE_KEY]
        if not isinstance(ours, dict) or "scorecard" not in ours:
            raise InputError(f"{path}:{number}: missing field '{JUDGE_KEY}.scorecard': not a `bineval judge` row{hint}")
        try:
            return JudgedLine(row, JudgeResult.model_validate(ours))
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join([JUDGE_KEY, *(str(part) for part in error["loc"])])
            raise InputError(f"{path}:{number}: field '{field}': {error['msg']}{hint}") from None

    return RunLog(
        path, key=lambda line: str(line.result.line), parse=parse, dump=lambda line: line.row,
        finished=lambda line: line.result.complete, required=(JUDGE_KEY,), hint=hint,
    )  # fmt: skip


def judge_result(line: int, output: str, checklist: Checklist, card: Scorecard, cost: Cost, repeats: Repeated | None = None) -> JudgeResult:
    """The result of judging one row's ``output``: with its lineage scores when the checklist is a Qworld tree's, and
    its ``repeats`` when it was judged K times."""
    tracked = LINEAGE_KEYS if has_qworld_lineage(checklist) else ()
    return JudgeResult(
        line=line, complete=card.complete, scorecard=card, usage=cost, empty_output=True if not output.strip() else None,
        lineage_scores={key: lineage_scores(checklist, card, key) for key in tracked} or None, repeats=repeats,
    )


def has_qworld_lineage(checklist: Checklist) -> bool:
    return any("perspective" in q.lineage and "scenario" in q.lineage for q in checklist.questions)


def failed(question: Question, verdict: Verdict) -> bool:
    """A requirement missed: 'no' to a requirement, 'yes' to a penalized flaw (negative weight)."""
    return verdict.answer == ("yes" if question.weight < 0 else "no")


class _Mean:
    """A running mean over the values that are known."""

    def __init__(self) -> None:
        self.total, self.count = 0.0, 0

    def add(self, value: float | None) -> None:
        if value is not None:
            self.total, self.count = self.total + value, self.count + 1

    @property
    def value(self) -> float | None:
        return self.total / self.count if self.count else None


_ERROR_KIND = re.compile(r"no usable answer: (\w+)")


def cause_of(explanation: str) -> str:
    """What kind of failure left a verdict unanswered: the error's class for a failed call or an unparseable reply,
    else the explanation's first words (the same for every verdict it left unanswered)."""
    match = _ERROR_KIND.match(explanation)
    return match.group(1) if match else " ".join(explanation.split()[:4])


class JudgedSummary:
    """What a run's judged rows add up to, fed one result at a time (``add``): memory flat in the number of rows.

    Means per dimension and overall (over the rows that have a score), unanswered and incomplete counts, verdicts
    without the P(yes) they were to be scored by, whether the LM verdicts are degenerate (``degenerate``), the rows with an empty output, the rows and questions that failed
    most, and with a Qworld checklist the mean score per perspective and scenario.
    """

    def __init__(self, checklist: Checklist, unread_mark: str) -> None:
        self.checklist = checklist
        self.unread_mark = unread_mark
        self.rows = self.scored = self.unanswered = self.incomplete = self.unread = 0
        self.means = {d: _Mean() for d in [*checklist.by_dimension(), "overall"]}
        self.empty_lines: list[int] = []
        self.worst: list[tuple[str, int]] = []  # (row id, else "line N"; failed questions), most failed first, input order on ties
        self.failed_by_question = {q.id: 0 for q in checklist.questions}
        self.passed_by_question = {q.id: 0 for q in checklist.questions}  # rows that met it (an unanswered one did not)
        self.asked = 0  # verdicts the LM was asked for (not code-verified)
        self.causes: Counter[str] = Counter()  # why LM-asked verdicts are unanswered: the error's kind
        self.example_cause: dict[str, str] = {}  # one whole explanation of each kind
        self.tally = Tally()  # the LM verdicts as the degenerate-judge rule reads them
        self.tracked = list(LINEAGE_KEYS) if has_qworld_lineage(checklist) else []
        self.lineage = {key: {q.lineage[key]: _Mean() for q in checklist.questions if key in q.lineage} for key in self.tracked}
        self.repeats = RepeatTally()  # rows judged K times (`--repeats`): flips and pass^K

    def add(self, result: JudgeResult, row_id: Any = None) -> None:
        """Count one judged row; ``row_id`` (the data row's ``id``) names it where it failed most."""
        card = result.scorecard
        self.rows += 1
        self.scored += card.overall is not None
        self.unanswered += card.unanswered
        self.incomplete += not card.complete
        self.unread += sum(self.unread_mark in v.explanation for v in card.verdicts)
        if result.empty_output:
            self.empty_lines.append(result.line)
        for dim, mean in self.means.items():
            mean.add(card.overall if dim == "overall" else card.dimension_scores.get(dim))
        for v in card.verdicts:
            self.tally.add(v)
            if v.judge.startswith("code:"):
                continue
            self.asked += 1
            if v.answer == "unanswered":
                kind = cause_of(v.explanation)
                self.causes[kind] += 1
                self.example_cause.setdefault(kind, v.explanation)
        misses = 0
        for q, v in join(self.checklist, card.verdicts):
            miss = failed(q, v)
            self.passed_by_question[q.id] += v.answer != "unanswered" and not miss
            self.failed_by_question[q.id] += miss
            misses += miss
        if misses:
            name = f"line {result.line}" if row_id is None else str(row_id)
            self.worst = sorted([*self.worst, (name, misses)], key=lambda pair: -pair[1])[:MOST_FAILED]
        for key in self.tracked:
            for value, score in lineage_scores(self.checklist, card, key).items():
                self.lineage[key][value].add(score)
        if result.repeats is not None:
            self.repeats.add(result.repeats)

    @property
    def degenerate(self) -> Degenerate | None:
        """Whether the LM verdicts tell the outputs apart (``core.degenerate``): what is wrong with them, or None."""
        return degeneracy(self.tally)

    def mean(self, dimension: str) -> float | None:
        """The mean score of ``dimension`` (or ``overall``) over the rows that have one."""
        return self.means[dimension].value

    def below(self, score: float | None = None, question_rate: float | None = None) -> list[str]:
        """Why the run is under its quality gates, one line each (none: it passes): the mean overall score under
        ``score``, or a question passed by under ``question_rate`` of the rows. Failing closed: a row that did not
        answer a question did not pass it, and a run with no scored row has no score to pass with."""
        lines = []
        if score is not None:
            overall = self.mean("overall")
            if overall is None or overall < score:
                lines.append(f"overall score {'n/a' if overall is None else f'{overall:.3f}'} is under {score:g} (`fail_under`)")
        if question_rate is not None and self.rows:
            for q in self.checklist.questions:
                rate = self.passed_by_question[q.id] / self.rows
                if rate < question_rate:
                    lines.append(f"question {q.id} passed by {self.passed_by_question[q.id]}/{self.rows} rows, under {question_rate:g} (`fail_under_question`): {q.text}")
        return lines

    def most_failed_questions(self) -> list[tuple[Question, int]]:
        ranked = sorted(self.checklist.questions, key=lambda q: -self.failed_by_question[q.id])[:MOST_FAILED]
        return [(q, self.failed_by_question[q.id]) for q in ranked if self.failed_by_question[q.id]]

    def lineage_mean(self, key: str, value: str) -> float | None:
        return self.lineage[key][value].value
