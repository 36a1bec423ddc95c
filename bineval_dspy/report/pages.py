"""A report's row lists (a judge run's scorecards, an experiment's output grid) as plain JSON rows, filtered and cut
into pages.

The page draws these rows itself (``assets/report.js``), one page at a time: from the rows inlined in the file that
``bineval report`` writes, or from ``bineval view``'s JSON API (``report/serve.py``), which answers each page from
``page`` here so a 50,000-row run never enters the page whole. Every number a row shows is formatted here, once, so
both ways show the same text; the filter is the one rule ``report.js`` applies to inlined rows (``pageOf``), and a
browser test holds the two to the same rows.

A row matches when its id holds the ``id`` text, when ``disagree`` asks for it and its columns disagree, and, when any
verdict filter is set, when one of its verdicts (marks) has every chosen value: ``dimension``, ``answer``, ``judge``,
``question``, ``arm`` and, with ``failed``, an answer other than yes (an errored cell counts as one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.experiment.grid import GridRow
from bineval_dspy.report.judged_runs import JudgedRows
from bineval_dspy.report.spend import spend_entries

PAGE_SIZE = 50  # rows a page shows
MAX_PAGE = 500  # the most rows one API call returns
MARK_FIELDS = ("dimension", "answer", "judge", "question", "arm")

Row = dict[str, Any]


class Query(BaseModel):
    """What a reader filters the rows by (the page's controls, the API's query parameters); empty: everything."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = ""
    dimension: str = ""
    answer: str = ""
    judge: str = ""
    question: str = ""
    arm: str = ""
    failed: bool = False
    disagree: bool = False

    @property
    def on_marks(self) -> bool:
        """Whether a verdict filter is set (then a row needs a matching verdict)."""
        return self.failed or any(getattr(self, name) for name in MARK_FIELDS)


class Page(BaseModel):
    """One page of rows and the counts the page's filter bar shows."""

    total: int = Field(description="rows in the list")
    matched: int = Field(description="rows the query keeps")
    marks: int = Field(description="verdicts in the list")
    marks_matched: int = Field(description="verdicts the query keeps, in the rows it keeps")
    offset: int
    rows: list[Row]


def number(value: float | None, digits: int = 3) -> str:
    """A number for a table cell; ``n/a`` where there is none."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def amount(value: float) -> str:
    """A cost figure: whole counts as integers, money and fractions with their digits."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.6g}"


def judge_rows(run: JudgedRows) -> list[Row]:
    """Every output of a judge run with its scores and verdicts, as its scorecard shows them."""
    rows = []
    for row in run.rows:
        card = row.card
        rescaled = card.rescaled.get("overall")
        verdicts = [
            {"dimension": v.dimension or "", "question": v.question or v.question_id, "answer": v.answer, "judge": v.judge,
             "p_yes": number(v.p_yes), "explanation": v.explanation}
            for v in card.verdicts
        ]  # fmt: skip
        rows.append({
            "id": row.id, "input": row.input, "output": row.output,
            "head": f"overall {number(card.overall)}" + (f" ({number(rescaled, 2)} / 5)" if rescaled is not None else ""),
            "unanswered": card.unanswered, "scores": [[dim, number(value)] for dim, value in card.dimension_scores.items()],
            "spend": [[key, amount(value)] for key, value in spend_entries(row.spend).items()], "verdicts": verdicts,
        })  # fmt: skip
    return rows


def grid_rows(grid: Sequence[GridRow], columns: Sequence[str]) -> list[Row]:
    """Every row of an output grid, a cell per column in ``columns``' order (``None``: the column has no output)."""
    rows = []
    for row in grid:
        cells: list[Row | None] = []
        for name in columns:
            cell = row.cells.get(name)
            if cell is None:
                cells.append(None)
                continue
            score = f"{cell.score:.2f}" if cell.score is not None else ("failed" if cell.error else "incomplete")
            checks = [{"name": k.name, "answer": "yes" if k.passed else ("no" if k.passed is False else "unanswered"), "text": k.text} for k in cell.checks]
            cells.append({"arm": name, "score": score, "checks": checks, "error": cell.error, "output": cell.output})
        rows.append({"id": row.id, "input": row.input, "disagree": row.disagree, "cells": cells})
    return rows


def marks(row: Row) -> list[Row]:
    """The verdicts a row is filtered by: a scorecard's verdicts, or each grid cell's checks (an errored cell is one
    unanswered mark of its arm)."""
    if "verdicts" in row:
        return row["verdicts"]
    found: list[Row] = []
    for cell in row["cells"]:
        if cell is None:
            continue
        found += [{"arm": cell["arm"], "question": check["name"], "answer": check["answer"]} for check in cell["checks"]]
        if cell["error"]:
            found.append({"arm": cell["arm"], "question": "", "answer": "unanswered"})
    return found


def mark_matches(mark: Row, query: Query) -> bool:
    """Whether one verdict has every value the query chose (and is not a yes, with ``failed``)."""
    return all(not getattr(query, name) or mark.get(name, "") == getattr(query, name) for name in MARK_FIELDS) and not (query.failed and mark["answer"] == "yes")


def matches(row: Row, query: Query) -> bool:
    """Whether the query keeps the row (the module's rule)."""
    if query.id and query.id.lower() not in row["id"].lower():
        return False
    if query.disagree and not row.get("disagree"):
        return False
    return not query.on_marks or any(mark_matches(mark, query) for mark in marks(row))


def page(rows: Sequence[Row], query: Query, offset: int = 0, limit: int = PAGE_SIZE) -> Page:
    """The rows the query keeps, ``limit`` of them from ``offset`` on, with the filter bar's counts."""
    kept = [row for row in rows if matches(row, query)]
    shown = sum(sum(mark_matches(m, query) for m in marks(row)) if query.on_marks else len(marks(row)) for row in kept)
    limit = max(1, min(limit, MAX_PAGE))
    return Page(
        total=len(rows), matched=len(kept), marks=sum(len(marks(row)) for row in rows), marks_matched=shown, offset=max(0, offset),
        rows=kept[max(0, offset) : max(0, offset) + limit],
    )


def query_of(params: Mapping[str, str]) -> Query:
    """A query from the API's parameters (a flag is on when given as anything but '' or '0')."""
    given = {name: value for name, value in params.items() if name in Query.model_fields}
    flags = {name: given.pop(name) not in ("", "0") for name in ("failed", "disagree") if name in given}
    return Query.model_validate({**given, **flags})
