"""Phi coefficients between the questions of each dimension: do two questions tell the same thing about outputs?

BinEval's averaging of many yes/no checks only reduces variance when the checks are not redundant; the paper
audits that with the phi coefficient (the Pearson correlation of two binary vectors) within each dimension. Here
it is computed over a set of judged outputs: an output where either question is unanswered is left out of that
pair only, and a question that gives one answer to every output has no phi with anything (None, never 0), since
a constant tells nothing about which outputs fail together. ``values="p_yes"`` correlates P(yes) instead (the
Pearson r of a probability-mode judge's scores, for judges whose hard answers are nearly constant).
"""

from __future__ import annotations

import csv
import io
from typing import Literal

import numpy as np
from pydantic import BaseModel, computed_field

from bineval_dspy.analysis.judged import JudgedSet, Values
from bineval_dspy.meta.correlation import pearson
from bineval_dspy.runs.kinds import RUN_KINDS

LABELS = {"phi": "phi", "pearson": "Pearson r of P(yes)"}  # how tables and heatmaps name each statistic


class QuestionStats(BaseModel):
    """How one question answered over the set: what its pruning priority and its phi rest on."""

    id: str
    text: str
    code: bool  # answered by a code verifier: costs no LM call
    answered: int
    mean: float | None  # the yes rate (P(yes) mean with values="p_yes"); None when never answered
    variance: float | None  # of its values: p(1-p) for yes/no, 0 for a constant question
    constant: bool  # one value on every answered output: phi undefined


class PhiPair(BaseModel):
    """The phi of two questions over the outputs where both were answered (``pairs``)."""

    a: str
    b: str
    phi: float | None
    pairs: int


class DimensionPhi(BaseModel):
    """A dimension's questions, their phi matrix (checklist order; None where undefined) and every pair."""

    dimension: str
    questions: list[QuestionStats]
    matrix: list[list[float | None]]
    pairs: list[PhiPair]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mean_abs_phi(self) -> float | None:
        """The mean |phi| over the defined pairs: the paper's summary of a dimension's redundancy."""
        known = [abs(p.phi) for p in self.pairs if p.phi is not None]
        return float(np.mean(known)) if known else None

    def strongest(self) -> PhiPair | None:
        """The defined pair with the largest |phi| (the first such in checklist order)."""
        known = [p for p in self.pairs if p.phi is not None]
        return max(known, key=lambda p: abs(p.phi or 0.0)) if known else None


@RUN_KINDS.writes("phi", legacy=({"statistic", "dimensions"},))
class PhiReport(BaseModel):
    """``phi.json``: per dimension, the phi of every pair of its questions over the judged outputs."""

    source: str
    values: Values
    statistic: Literal["phi", "pearson"]  # phi on yes/no answers; Pearson r on P(yes)
    outputs: int
    dimensions: list[DimensionPhi]


def phi(x: np.ndarray, y: np.ndarray) -> tuple[float | None, int]:
    """Pearson r of two value vectors over the entries where both are known (not NaN), and how many those are;
    on 0/1 answers this is the phi coefficient. None when either side is constant there or fewer than two."""
    both = ~np.isnan(x) & ~np.isnan(y)
    return pearson(x[both].tolist(), y[both].tolist()), int(both.sum())


def _stats(column: np.ndarray) -> tuple[int, float | None, float | None, bool]:
    known = column[~np.isnan(column)]
    if not known.size:
        return 0, None, None, True
    return int(known.size), float(known.mean()), float(known.var()), bool(known.min() == known.max())


def phi_report(judged: JudgedSet, values: Values = "answers") -> PhiReport:
    """The phi matrix of every dimension of the judged set's checklist."""
    dimensions = []
    for dim, questions in judged.checklist.by_dimension().items():
        table = judged.values(questions, values)
        stats = []
        for j, q in enumerate(questions):
            answered, mean, variance, constant = _stats(table[:, j])
            stats.append(QuestionStats(id=q.id, text=q.text, code=q.verifier is not None, answered=answered, mean=mean, variance=variance, constant=constant))
        size = len(questions)
        matrix: list[list[float | None]] = [[None] * size for _ in range(size)]
        pairs = []
        for i in range(size):
            matrix[i][i] = None if stats[i].constant else 1.0
            for j in range(i + 1, size):
                value, n = phi(table[:, i], table[:, j])
                matrix[i][j] = matrix[j][i] = value
                pairs.append(PhiPair(a=questions[i].id, b=questions[j].id, phi=value, pairs=n))
        dimensions.append(DimensionPhi(dimension=dim, questions=stats, matrix=matrix, pairs=pairs))
    return PhiReport(
        source=judged.source,
        values=values,
        statistic="phi" if values == "answers" else "pearson",
        outputs=len(judged.outputs),
        dimensions=dimensions,
    )


def phi_csv(report: PhiReport) -> str:
    """``phi.csv``: one row per pair of questions of a dimension; an undefined phi is an empty cell."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["dimension", "question_a", "question_b", "text_a", "text_b", report.statistic, "pairs"])
    for dim in report.dimensions:
        texts = {q.id: q.text for q in dim.questions}
        for pair in dim.pairs:
            writer.writerow([dim.dimension, pair.a, pair.b, texts[pair.a], texts[pair.b], "" if pair.phi is None else repr(round(pair.phi, 6)), pair.pairs])
    return buffer.getvalue()
