"""Redundancy pruning: drop a question that (nearly) repeats another of its dimension, and count the LM calls saved.

The rule, per dimension: visit the questions from the most to the least worth keeping, and keep each one unless
its |phi| with a question already kept is above the threshold, measured on at least ``min_pairs`` outputs where
both were answered (a phi over a handful of outputs is noise). Worth keeping, in order: answered by code (exact,
and it costs no LM call), then more information (the variance of its answers, p(1-p), or of its P(yes) with
``values="p_yes"``: a question that splits the outputs evenly tells more than one that nearly always says yes),
then earlier in the checklist. A question with
an undefined phi (constant over the set, or too rarely answered) is never pruned: nothing shows it redundant.

A dropped question that agrees with the one it repeats on when its criterion is met hands its weight to it
(merge): where the two agree, the dimension's score is unchanged. Two requirements agree when their phi is
positive; a requirement and a criterion to penalize (negative weight: met when answered "no") when it is
negative. A near-opposite is dropped without moving weight, since the kept question would count it inverted.
Savings: one LM call per output for every dropped question the LM answered (code-verified ones cost none).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, computed_field

from bineval_dspy.analysis.judged import Values
from bineval_dspy.analysis.phi import DimensionPhi, PhiReport, QuestionStats
from bineval_dspy.core.schema import Checklist
from bineval_dspy.runs.kinds import RUN_KINDS

DEFAULT_THRESHOLD = 0.8
DEFAULT_MIN_PAIRS = 10


class Cut(BaseModel):
    """One dropped question, the kept question it repeats, and how strongly."""

    id: str
    text: str
    dimension: str
    duplicate_of: str
    phi: float
    pairs: int
    lm_question: bool  # the LM answered it: dropping it saves one call per output
    weight_moved: float  # the weight (size) the kept question took over: 0 for a near-opposite


@RUN_KINDS.writes("pruning", legacy=({"dropped", "questions_before"},))
class PruningReport(BaseModel):
    """``pruning.json``: what was cut and why, and the LM calls per output before and after."""

    values: Values
    statistic: str
    threshold: float
    min_pairs: int
    questions_before: int
    questions_after: int
    dropped: list[Cut]
    undefined: list[str]  # question ids with no defined phi (constant over the set): never pruned
    lm_calls_per_output_before: int
    lm_calls_per_output_after: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def lm_calls_saved_per_output(self) -> int:
        """One call per output for each dropped question the LM answered."""
        return self.lm_calls_per_output_before - self.lm_calls_per_output_after


def _priority(stats: QuestionStats, position: int) -> tuple[bool, float, int]:
    """Sort key, smallest first: code before LM, then more variance, then checklist order."""
    return (not stats.code, -(stats.variance or 0.0), position)


def _dimension_cuts(dim: DimensionPhi, threshold: float, min_pairs: int) -> list[tuple[int, int, float, int]]:
    """(dropped index, kept index, phi, pairs) for one dimension, by the rule of the module docstring."""
    order = sorted(range(len(dim.questions)), key=lambda k: _priority(dim.questions[k], k))
    pair_count = {(p.a, p.b): p.pairs for p in dim.pairs} | {(p.b, p.a): p.pairs for p in dim.pairs}
    kept: list[int] = []
    cuts = []
    for k in order:
        repeats: tuple[int, float, int] | None = None  # the kept question it repeats most (the first kept on ties)
        for m in kept:
            value, pairs = dim.matrix[k][m], pair_count[dim.questions[k].id, dim.questions[m].id]
            if value is not None and abs(value) > threshold and pairs >= min_pairs and (repeats is None or abs(value) > abs(repeats[1])):
                repeats = (m, value, pairs)
        if repeats is None:
            kept.append(k)
        else:
            cuts.append((k, *repeats))
    return cuts


def prune(checklist: Checklist, report: PhiReport, threshold: float = DEFAULT_THRESHOLD, min_pairs: int = DEFAULT_MIN_PAIRS) -> tuple[Checklist, PruningReport]:
    """The checklist without its redundant questions (weights merged), and the report of what was cut."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    by_id = {q.id: q for q in checklist.questions}
    weights = {q.id: q.weight for q in checklist.questions}
    dropped: list[Cut] = []
    for dim in report.dimensions:
        for k, m, value, pairs in _dimension_cuts(dim, threshold, min_pairs):
            gone, keeper = dim.questions[k].id, dim.questions[m].id
            agree = value * weights[gone] * weights[keeper] > 0
            moved = abs(weights[gone]) if agree else 0.0
            weights[keeper] = math.copysign(abs(weights[keeper]) + moved, weights[keeper])
            question = by_id[gone]
            dropped.append(
                Cut(id=gone, text=question.text, dimension=dim.dimension, duplicate_of=keeper, phi=value, pairs=pairs, lm_question=question.verifier is None, weight_moved=moved)
            )
    gone_ids = {c.id for c in dropped}
    questions = [q.model_copy(update={"weight": weights[q.id]}) for q in checklist.questions if q.id not in gone_ids]
    pruned = checklist.model_copy(update={"questions": questions, "dimensions": list(checklist.dimensions)})
    lm_before = sum(q.verifier is None for q in checklist.questions)
    return pruned, PruningReport(
        values=report.values,
        statistic=report.statistic,
        threshold=threshold,
        min_pairs=min_pairs,
        questions_before=len(checklist.questions),
        questions_after=len(questions),
        dropped=dropped,
        undefined=[q.id for dim in report.dimensions for q in dim.questions if q.constant],
        lm_calls_per_output_before=lm_before,
        lm_calls_per_output_after=lm_before - sum(c.lm_question for c in dropped),
    )
