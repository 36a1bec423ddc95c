"""The judging runner: one judge over a stream of rows, results in input order, many LM requests in flight.

Rows and their questions run together: a remote LM gets up to ``concurrency`` requests open at once across rows
and questions (threads; DSPy's cache, our usage accounting and budgets see each row as one unit). Results come
back in input order, so whoever saves them (``bineval judge``, meta-eval) resumes, fingerprints and stops on a
budget exactly as one row at a time would. Rows are drawn from the stream as they start: only those in flight are
held, so memory is flat in the number of rows. A per-question judge on a remote server asks through the verdict
fast path (``judges.fast``): its rows are coroutines on the I/O loop instead of threads, the rest as above.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import dspy

from bineval_dspy.core.repeats import Repeated
from bineval_dspy.core.schema import Checklist, Scorecard
from bineval_dspy.judges.base import Judge
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.fast import FastJudge
from bineval_dspy.judges.repeats import Repeats
from bineval_dspy.judges.rows import JudgeResult, judge_result
from bineval_dspy.lm.budget import BudgetMeter, metered_amap, metered_map
from bineval_dspy.lm.engine import engine_of
from bineval_dspy.lm.remote import io_loop
from bineval_dspy.lm.runtime import DEFAULT_THREADS
from bineval_dspy.lm.specs import is_local
from bineval_dspy.lm.usage import Cost

Row = dict[str, Any]  # a data row: its "input" and "output" are judged, its other fields pass through
T = TypeVar("T")


@dataclass(frozen=True)
class Parallelism:
    """How many rows are judged at once, and how many questions of each row are asked at once (None: the judge's
    own choice: an in-process model decodes one row's questions as one batch)."""

    rows: int
    questions: int | None


def parallelism(lm: dspy.LM, asked: int, *, concurrency: int | None = None, threads: int | None = None) -> Parallelism:
    """The parallelism for ``asked`` LM questions a row on ``lm``. ``threads`` T: T rows and T questions of each.
    ``concurrency`` N (remote LMs): enough rows that N requests are in flight across rows and questions, the
    engine capping the requests open at N; twice as many rows as fill N, since results come in input order and a
    slow row would otherwise hold the others' slots. An in-process model: ``embedded_parallelism``."""
    if is_local(lm):
        return embedded_parallelism(lm, asked)
    if concurrency is None:
        threads = threads or DEFAULT_THREADS
        return Parallelism(rows=threads, questions=threads)
    asked = max(1, asked)
    if engine_of(lm).limit_in_flight(concurrency):  # our engine (a server at api_base) holds the cap
        return Parallelism(rows=2 * math.ceil(concurrency / asked), questions=min(concurrency, asked))
    return Parallelism(rows=max(1, concurrency // asked), questions=min(concurrency, asked))  # no engine cap: never more than N open


def embedded_parallelism(lm: dspy.LM, asked: int) -> Parallelism:
    """The embedded (in-process) model: each row's questions sent together, and enough rows in flight that the
    questions of the next rows wait while a batch decodes, so the engine batches them across rows (one row
    more than fills its ``parallel_sequences``). One row at a time when it batches nothing (no LM question a
    row, or an engine without parallel sequences)."""
    batched = engine_of(lm).parallel_sequences
    if asked <= 0 or batched <= 1:
        return Parallelism(rows=1, questions=None)
    return Parallelism(rows=math.ceil(batched / asked) + 1, questions=None)


def judge_rows(
    judge: Judge,
    checklist: Checklist,
    rows: Iterable[tuple[int, Row]],
    *,
    total: int,
    plan: Parallelism,
    meter: BudgetMeter | None = None,
    fields: tuple[str, str] = ("input", "output"),
    show: bool = True,
    fast_path: bool = True,
    repeats: int = 1,
) -> Iterator[tuple[Row, JudgeResult]]:
    """Each (data line, row) of the stream judged against ``checklist``, as (row, result) in input order; ``total``
    is how many the stream holds (for the progress bar and a budget stop's message). The judge asks
    ``plan.questions`` of a row's questions at once. ``fields``: the row's input and output fields. ``fast_path``:
    a per-question judge on a remote server asks through the verdict fast path (``judges.fast``): ``plan.rows``
    rows as coroutines on the I/O loop, each row one hand-off from this thread. ``repeats`` K > 1: each row's LM
    questions asked K times (``judges.repeats``), its card the verdicts that count, the repeats kept beside it."""
    if isinstance(judge, BinaryJudge):  # ours asks a row's questions at once; another judge decides for itself
        judge.threads = plan.questions
    given, judged = fields
    if repeats > 1:
        if not isinstance(judge, BinaryJudge):
            raise ValueError(f"repeats: a {type(judge).__name__} is not repeated; only a BinaryJudge asks its questions again")
        yield from _repeated_rows(Repeats(judge, repeats), checklist, rows, total=total, plan=plan, meter=meter, fields=fields, show=show, fast_path=fast_path)
        return
    fast = FastJudge.of(judge) if fast_path else None
    if fast is not None:

        async def scored(item: tuple[int, Row]) -> tuple[tuple[tuple[int, Row], Scorecard], Cost]:
            card, cost = await fast.score(item[1][given], item[1][judged], checklist)
            return (item, card), cost

        judged_rows = metered_amap(scored, rows, "judging", loop=io_loop(), window=plan.rows, meter=meter, kind="row", what="row(s)", total=total, show=show)
        try:
            for ((line, row), card), cost in judged_rows:
                yield row, judge_result(line, row[judged], checklist, card, cost)
        finally:
            judged_rows.close()  # rows still in flight (the consumer stopped early) are cancelled
            fast.close()
        return

    def one(item: tuple[int, Row]) -> tuple[tuple[int, Row], Scorecard]:
        return item, judge(input=item[1][given], output=item[1][judged], checklist=checklist)

    for ((line, row), card), cost in metered_map(one, rows, "judging", threads=plan.rows, meter=meter, kind="row", what="row(s)", total=total, show=show):
        yield row, judge_result(line, row[judged], checklist, card, cost)


def _repeated_rows(
    repeats: Repeats, checklist: Checklist, rows: Iterable[tuple[int, Row]], *, total: int, plan: Parallelism,
    meter: BudgetMeter | None, fields: tuple[str, str], show: bool, fast_path: bool,
) -> Iterator[tuple[Row, JudgeResult]]:
    """``judge_rows`` with each row judged by every repeat in turn (``Repeats``), on the fast path where it applies."""
    given, judged = fields
    fasts = repeats.fast() if fast_path else None
    if fasts is not None:

        async def scored(item: tuple[int, Row]) -> tuple[tuple[tuple[int, Row], Scorecard, Repeated], Cost]:
            card, cost, record = await repeats.ascore(fasts, str(item[0]), item[1][given], item[1][judged], checklist)
            return (item, card, record), cost

        judged_rows = metered_amap(scored, rows, "judging", loop=io_loop(), window=plan.rows, meter=meter, kind="row", what="row(s)", total=total, show=show)
        try:
            for ((line, row), card, record), cost in judged_rows:
                yield row, judge_result(line, row[judged], checklist, card, cost, record)
        finally:
            judged_rows.close()
            for fast in fasts:
                fast.close()
        return

    def one(item: tuple[int, Row]) -> tuple[tuple[int, Row], Scorecard, Repeated]:
        return (item, *repeats(str(item[0]), item[1][given], item[1][judged], checklist))

    for ((line, row), card, record), cost in metered_map(one, rows, "judging", threads=plan.rows, meter=meter, kind="row", what="row(s)", total=total, show=show):
        yield row, judge_result(line, row[judged], checklist, card, cost, record)
