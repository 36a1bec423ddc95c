"""The output grid: every row's output in each column side by side, with its verdicts and score.

A score table says which column wins; the grid says why, one row at a time. ``bineval experiment`` writes one (a
column per arm, on test: a prompt, an LM, an optimizer) as ``RUN_DIR/grid.jsonl`` and its verdicts as
``matrix.md``; ``report`` shows it with a "columns disagree" filter and ``show`` names the rows where they do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from bineval_dspy.core.jsonio import read_jsonl_models, write_text_atomic

if TYPE_CHECKING:
    from bineval_dspy.optimize.feedback import Evaluation
    from bineval_dspy.suites.rows import SuiteRow

GRID_FILE = "grid.jsonl"
MATRIX_FILE = "matrix.md"


class Check(BaseModel):
    """One verdict on an output: an instruction's code verifier, a checklist question the judge answered, or a
    judge's answer held against the reference's."""

    name: str = Field(description="the instruction id, the question id, or 'reference'")
    by: Literal["code", "llm", "reference"]
    passed: bool | None = Field(description="None: ungraded or unanswered")
    text: str = Field(default="", description="the question, or what was compared")


class GridCell(BaseModel):
    """One row in one column: the output, its verdicts, its score (None: incomplete) and why it failed, if it did."""

    output: str | None = None
    checks: list[Check] = Field(default_factory=list)
    checklist: float | None = Field(default=None, description="the checklist's overall score, when one judged it")
    score: float | None = None
    error: str = ""

    @property
    def followed(self) -> list[bool | None]:
        """The code-checked instructions, in the suite row's order."""
        return [check.passed for check in self.checks if check.by == "code"]

    def text(self) -> str:
        """The cell in a markdown matrix: Y followed, n not, ? ungraded; then the row's score (the checklist's where
        one judged it, else the run's own measure), so a row reads as a figure and not only as its verdicts."""
        if self.error:
            return "failed"
        shown = "".join("Y" if f else "n" if f is False else "?" for f in self.followed)
        score = self.checklist if self.checklist is not None else self.score
        return " ".join(part for part in (shown, f"{score:.2f}" if score is not None else "") if part)

    def verdicts(self) -> tuple[tuple[str, bool | None], ...]:
        return tuple((check.name, check.passed) for check in self.checks)


class GridRow(BaseModel):
    """One input and what every column made of it."""

    id: str
    input: str = ""
    cells: dict[str, GridCell]

    @property
    def disagree(self) -> bool:
        """The columns differ: in a score, in a verdict, or one failed where another did not."""
        seen = {(cell.score, cell.verdicts(), bool(cell.error)) for cell in self.cells.values()}
        return len(seen) > 1


def write_grid(run_dir: Path, rows: Iterable[GridRow]) -> Path:
    """``RUN_DIR/grid.jsonl``, replaced whole (atomically)."""
    path = run_dir / GRID_FILE
    write_text_atomic(path, "".join(row.model_dump_json() + "\n" for row in rows))
    return path


def read_grid(run_dir: Path) -> list[GridRow]:
    """The run's grid; empty for a run written before grids were kept."""
    path = run_dir / GRID_FILE
    return [row for _, row in read_jsonl_models(path, GridRow)] if path.is_file() else []


def experiment_grid(evaluations: Mapping[str, Evaluation], inputs: Mapping[str, str], rows: Mapping[str, SuiteRow] | None) -> list[GridRow]:
    """The test items of every evaluated arm, in test order: a suite's outputs with each instruction's strict
    verdict, a checklist's outputs with their score, a judge's answers against the reference."""
    from bineval_dspy.suites.grading import grade

    grid: dict[str, GridRow] = {}
    for arm, evaluation in evaluations.items():
        for item in evaluation.items:
            row = grid.setdefault(item.id, GridRow(id=item.id, input=inputs.get(item.group, ""), cells={}))
            checks: list[Check] = []
            if item.reference is not None:
                checks.append(Check(name="reference", by="reference", passed=item.answer == item.reference, text=f"reference says {item.reference}"))
            elif rows is not None and item.output is not None and item.id in rows:
                suite_row = rows[item.id]
                followed = grade(suite_row, item.output, "strict").follow_instruction_list
                checks.extend(Check(name=iid, by="code", passed=f) for iid, f in zip(suite_row.instruction_id_list, followed, strict=True))
            checks += [Check(name=a.question_id, by="llm", passed=None if a.answer == "unanswered" else a.answer == "yes", text=a.question) for a in item.asked]
            output = item.output if item.reference is None else item.answer
            checklist = item.score if item.asked and not item.error else None
            row.cells[arm] = GridCell(output=output, checks=checks, checklist=checklist, score=None if item.error else item.score, error=item.error or "")
    return list(grid.values())


def matrix_markdown(rows: Sequence[GridRow], summary: Mapping[str, str]) -> str:
    """Rows x columns, each verdict visible (Y followed, n not, ? ungraded; then the checklist score), and one
    summary line per column (``summary``'s keys, in order)."""
    names = list(summary)
    lines = ["| row | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for row in rows:
        lines.append(f"| {row.id} | " + " | ".join(row.cells[n].text() if n in row.cells else "-" for n in names) + " |")
    lines.append("| **mean** | " + " | ".join(summary[n] for n in names) + " |")
    return "\n".join(lines) + "\n"


def disagreeing(rows: Sequence[GridRow]) -> list[GridRow]:
    return [row for row in rows if row.disagree]
