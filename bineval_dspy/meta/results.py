"""What a meta-evaluation writes and concludes: each method's score of an output (``OutputScore``, a line of
``scores.jsonl``), and the results from them: each method's correlations with the human scores per dimension and
level, its agreement with labeled questions, its cost (``MetaEvalResults``, written as ``results.json``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field, computed_field

from bineval_dspy.checklists.writers import ChecklistUsage, usage_sidecar
from bineval_dspy.core.jsonio import (
    load_model,
)
from bineval_dspy.lm.usage import Cost, total
from bineval_dspy.meta.agreement import agreement, cohen_kappa
from bineval_dspy.meta.config import MetaEvalConfig
from bineval_dspy.meta.correlation import (
    DimensionCorrelation,
    Draws,
    LevelCorrelation,
    average,
    draws,
    summarize,
)
from bineval_dspy.meta.datasets import MetaRow
from bineval_dspy.meta.methods import (
    BinEvalMethod,
    MethodConfig,
    Scored,
)
from bineval_dspy.stats.bootstrap import resample_counts


class OutputScore(Scored):
    """One line of ``scores.jsonl``: one method's scores for one output."""

    method: str
    id: str
    doc_id: str
    usage: Cost
    seconds: float

    @property
    def complete(self) -> bool:
        """Every dimension the method scores got a score; an incomplete line is scored again on resume."""
        return all(value is not None for value in self.scores.values())


class QuestionAgreement(BaseModel):
    """Question-level agreement with the reference labels (InFoBench's GPT-4 verdicts)."""

    questions: int
    agreement: float | None  # an unanswered question disagrees
    kappa: float | None  # Cohen's kappa over the answered questions
    unanswered: int


class MethodResult(BaseModel):
    """One row group of the results table: a method's correlations per dimension, their average, and its cost."""

    name: str
    kind: str
    outputs: int
    missing: dict[str, int]  # per dimension: outputs the method gave no usable score for
    correlations: dict[str, DimensionCorrelation]  # the dimensions the method scores
    average: dict[str, LevelCorrelation] | None  # over every dimension, when the method scores them all
    lm_calls_per_output: float
    seconds_per_output: float
    agreement: QuestionAgreement | None = None
    usage: Cost = Field(default_factory=Cost, description="the method's scores of these outputs, and its generated checklist")
    system_means: dict[str, dict[str, float]] = Field(default_factory=dict, description="dimension -> system -> mean score")


class MetaEvalResults(BaseModel):
    """What ``run_meta_eval`` returns (and ``meta.report`` writes as ``results.md`` and ``results.csv``)."""

    dataset: str
    lm: str | None
    documents: int
    outputs: int
    dimensions: list[str]
    resamples: int
    confidence: float
    run_dir: Path
    methods: list[MethodResult]
    human_system_means: dict[str, dict[str, float]] = Field(default_factory=dict, description="dimension -> system -> mean")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def usage(self) -> Cost:
        """Every method's cost together."""
        return total(m.usage for m in self.methods)

    @property
    def missing(self) -> int:
        """Scores no method could give, over all methods and dimensions: the run is incomplete when positive."""
        return sum(sum(m.missing.values()) for m in self.methods)


def _checklist_usage(config: MetaEvalConfig, method: MethodConfig) -> Cost:
    """What writing the method's generated checklist cost, from its sidecar (none: no generated checklist)."""
    sidecar = usage_sidecar(config.run_dir / f"checklist-{method.name}.json")
    if not (isinstance(method, BinEvalMethod) and method.checklist == "generate" and sidecar.is_file()):
        return Cost()
    return load_model(sidecar, ChecklistUsage).usage


def results(config: MetaEvalConfig, rows: Sequence[MetaRow], records: dict[tuple[str, str], OutputScore], lm: str | None) -> MetaEvalResults:
    """Correlations of every method with the human scores, from the scores of ``rows`` (missing ones left out)."""
    dimensions = config.scored_dimensions()
    order = sorted({row.doc_id for row in rows})
    counts = resample_counts(len(order), config.bootstrap.resamples, config.seed)  # one set of draws for every cell
    documents = [row.doc_id for row in rows]
    systems = [row.system_id for row in rows]
    confidence = config.bootstrap.confidence
    methods = []
    for method in config.methods:
        mine = [records.get((method.name, row.id)) for row in rows]
        done = [r for r in mine if r is not None]
        cells: dict[str, Draws] = {}
        missing: dict[str, int] = {}
        for dim in dimensions:
            if not any(dim in r.scores for r in done):
                continue  # the method does not score this dimension (e.g. no checklist question about it)
            human = [row.scores.get(dim) for row in rows]
            metric = [r.scores.get(dim) if r is not None else None for r in mine]
            missing[dim] = sum(dim in r.scores and r.scores[dim] is None for r in done)
            cells[dim] = draws(human, metric, documents, order, counts, systems)
        methods.append(
            MethodResult(
                name=method.name,
                kind=method.kind,
                outputs=len(done),
                missing=missing,
                correlations={dim: summarize(cell, confidence) for dim, cell in cells.items()},
                average=average(list(cells.values()), confidence) if cells and len(cells) == len(dimensions) else None,
                lm_calls_per_output=float(np.mean([r.usage.lm_calls for r in done])) if done else 0.0,
                seconds_per_output=float(np.mean([r.seconds for r in done])) if done else 0.0,
                agreement=_agreement(rows, mine),
                usage=_checklist_usage(config, method) + total(r.usage for r in done),
                system_means={dim: _system_means(rows, [r.scores.get(dim) if r is not None else None for r in mine], dim) for dim in cells},
            )
        )
    return MetaEvalResults(
        dataset=config.dataset.kind,
        lm=lm,
        documents=len(order),
        outputs=len(rows),
        dimensions=dimensions,
        resamples=config.bootstrap.resamples,
        confidence=confidence,
        run_dir=config.run_dir,
        methods=methods,
        human_system_means={dim: _system_means(rows, [row.scores.get(dim) for row in rows], dim) for dim in dimensions},
    )


def _system_means(rows: Sequence[MetaRow], values: Sequence[float | None], dimension: str) -> dict[str, float]:
    """Each system's mean of ``values`` over its outputs that people rated on ``dimension`` and that have a value:
    the ranking the system level correlates."""
    sums: dict[str, list[float]] = {}
    for row, value in zip(rows, values, strict=True):
        if value is not None and dimension in row.scores:
            sums.setdefault(row.system_id, []).append(value)
    return {system: float(np.mean(v)) for system, v in sorted(sums.items())}


def _agreement(rows: Sequence[MetaRow], records: Sequence[OutputScore | None]) -> QuestionAgreement | None:
    """Agreement and kappa with the rows' labeled questions, when the method answered them (BinEval on InFoBench)."""
    target: list[str] = []
    reference: list[str] = []
    for row, record in zip(rows, records):
        if record is not None and record.answers is not None:
            target += record.answers
            reference += [q.label for q in row.questions]
    if not target:
        return None
    answered = [(t, r) for t, r in zip(target, reference) if t != "unanswered"]
    return QuestionAgreement(
        questions=len(target),
        agreement=agreement(target, reference),
        kappa=cohen_kappa([t for t, _ in answered], [r for _, r in answered]),
        unanswered=len(target) - len(answered),
    )
