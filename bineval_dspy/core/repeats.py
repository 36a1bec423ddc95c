"""A judge asked the same question K times (``bineval judge --repeats K``): which verdict counts when its answers
flip, and how often they flipped.

An LM judge sampled at a temperature, or one whose answers depend on the order it is asked in, can answer one
question differently on a rerun; one run hides that. Asked K times, the verdict that counts is the strict majority
of the K answers: an answer more than half of them gave. A tie, or a majority that no answer reaches because some
repeats left the question unanswered, is unanswered: fail closed, never a yes by a coin toss. A question flipped on a
row when its K answers are not all the same (an unanswered repeat counts as an answer of its own: a judge that
sometimes gives no verdict is unstable too). A row passes a repeat when every criterion is met and every question
answered (the rule Best-of-N stops at); pass^K is passing in all K, beside the mean over the repeats.

Code-checked questions are deterministic: they are asked once, and are never counted among the flips.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from bineval_dspy.core.schema import Answer, Scorecard, Verdict

NO_MAJORITY = "no majority of repeats"  # how a verdict left unanswered by its repeats' split opens its explanation


def counted(question_id: str, answers: Sequence[Verdict]) -> Verdict:
    """The verdict that counts among one question's K answers: the answer more than half of them gave, with the
    tally and that answer's first explanation; else unanswered, saying how they split. Its P(yes) is the mean of
    the repeats' when every repeat read one (probability mode scores by it), else None."""
    k = len(answers)
    tally = {a: sum(v.answer == a for v in answers) for a in ("yes", "no", "unanswered")}
    said = f"{tally['yes']} yes / {tally['no']} no" + (f" / {tally['unanswered']} unanswered" if tally["unanswered"] else "") + f" of {k} repeats"
    winner: Literal["yes", "no"] | None = "yes" if 2 * tally["yes"] > k else "no" if 2 * tally["no"] > k else None
    if not tally["yes"] + tally["no"]:  # no repeat answered: the first one's reason stands (a dead LM reads as one)
        first = answers[0]
        return first.model_copy(update={"explanation": f"{first.explanation} ({said})".strip()})
    if winner is None:
        example = next((v.explanation for v in answers if v.answer == "unanswered" and v.explanation), "")
        why = f"{NO_MAJORITY}: {said}" + (f". {example}" if example else "")
        return Verdict(question_id=question_id, answer="unanswered", explanation=why, judge=answers[0].judge)
    first = next(v for v in answers if v.answer == winner)
    p = [v.p_yes for v in answers]
    p_yes = sum(x for x in p if x is not None) / k if all(x is not None for x in p) else None
    return Verdict(question_id=question_id, answer=winner, p_yes=p_yes, explanation=f"{said}. {first.explanation}".strip(), judge=first.judge)


def passed(card: Scorecard) -> bool:
    """Every criterion met and every question answered: what a row must be in a repeat to pass it."""
    return card.complete and card.overall == 1.0


class Repeated(BaseModel):
    """One row judged ``k`` times (kept under ``bineval.repeats``): each LM-asked question's answers in repeat order
    (code-checked questions are asked once and are not here), each repeat's overall score, and how many repeats
    the row passed (``passed``); the row's flips, pass^K and mean score are written beside them for a reader of
    the JSON, and derived again when it is read."""

    k: int = Field(ge=2)
    answers: dict[str, list[Answer]]
    scores: list[float | None]
    passes: int = Field(ge=0)

    def flipped(self, question_id: str) -> bool:
        """Whether the question's K answers are not all the same."""
        return len(set(self.answers[question_id])) > 1

    @computed_field  # type: ignore[prop-decorator]
    @property
    def flips(self) -> int:
        """How many of the row's LM questions flipped."""
        return sum(self.flipped(qid) for qid in self.answers)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pass_k(self) -> bool:
        """pass^K: the row passed every repeat."""
        return self.passes == self.k

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mean(self) -> float | None:
        """The row's mean overall score over the repeats that have one."""
        known = [s for s in self.scores if s is not None]
        return sum(known) / len(known) if known else None


def repeated(answers: dict[str, list[Verdict]], cards: Sequence[Scorecard]) -> Repeated:
    """The record of one row's repeats: its LM questions' answers by id, and each repeat's card."""
    return Repeated(
        k=len(cards), answers={qid: [v.answer for v in votes] for qid, votes in answers.items()},
        scores=[card.overall for card in cards], passes=sum(passed(card) for card in cards),
    )  # fmt: skip


class RepeatSummary(BaseModel):
    """What a run's repeats add up to (the summary line, the run header, the report): the flip rate over every LM
    verdict, and pass^K over the rows beside the pass rate of one repeat and the mean score over the repeats."""

    k: int
    rows: int
    asked: int  # LM verdicts: rows x LM questions
    flipped: int  # of those, the ones whose K answers were not all the same
    pass_k: int  # rows that passed every repeat
    pass_rate: float | None  # the mean over rows of the share of repeats passed (pass^1)
    mean: float | None  # the mean over rows of the row's mean overall score over the repeats

    @property
    def flip_rate(self) -> float | None:
        return self.flipped / self.asked if self.asked else None

    def line(self) -> str:
        """One line: the flip rate, pass^K beside the per-repeat pass rate and the mean score."""
        flips = f"flip rate {self.flip_rate:.3f} ({self.flipped} of {self.asked} LM verdicts changed between repeats)" if self.asked else "no LM question (code checks are asked once: nothing to flip)"
        rate = "n/a" if self.pass_rate is None else f"{self.pass_rate:.3f}"
        mean = "n/a" if self.mean is None else f"{self.mean:.3f}"
        return (
            f"repeats: each LM question asked {self.k} times; {flips}; pass^{self.k} {self.pass_k / self.rows if self.rows else 0:.3f} "
            f"({self.pass_k} of {self.rows} rows passed every repeat) beside pass rate {rate} per repeat and mean score {mean}"
        )


class RepeatTally:
    """``RepeatSummary`` summed one row at a time, with the flips per question (memory flat in the rows)."""

    def __init__(self) -> None:
        self.k = self.rows = self.asked = self.flipped = self.pass_k = 0
        self.pass_total = self.score_total = 0.0
        self.scored = 0
        self.by_question: dict[str, tuple[int, int]] = {}  # question id: (rows it flipped on, rows it was asked on)

    def add(self, row: Repeated) -> None:
        self.k = max(self.k, row.k)
        self.rows += 1
        self.asked += len(row.answers)
        self.flipped += row.flips
        self.pass_k += row.pass_k
        self.pass_total += row.passes / row.k
        if (mean := row.mean) is not None:
            self.score_total, self.scored = self.score_total + mean, self.scored + 1
        for qid in row.answers:
            flips, asked = self.by_question.get(qid, (0, 0))
            self.by_question[qid] = (flips + row.flipped(qid), asked + 1)

    def summary(self) -> RepeatSummary | None:
        """The run's figures; None when no row was repeated."""
        if not self.rows:
            return None
        return RepeatSummary(
            k=self.k, rows=self.rows, asked=self.asked, flipped=self.flipped, pass_k=self.pass_k,
            pass_rate=self.pass_total / self.rows, mean=self.score_total / self.scored if self.scored else None,
        )  # fmt: skip

    def flip_rates(self) -> list[tuple[str, float, int]]:
        """(question id, flip rate, rows asked) of each question that flipped, most often first."""
        rates = [(qid, flips / asked, asked) for qid, (flips, asked) in self.by_question.items() if flips]
        return sorted(rates, key=lambda item: -item[1])
