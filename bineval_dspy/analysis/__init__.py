"""Analysing judged outputs and checklists: are the questions redundant, what are they worth, what do they cover?

``phi_report`` computes the phi coefficient between the questions of each dimension over a judged set (from
``load_judge_output`` or ``load_meta_scores``), ``write_heatmaps`` draws it; ``prune`` drops redundant questions;
``fit_weights`` fits per-question weights to reference scores, cross-validated by source document; ``coverage``
scores a generated checklist against a gold one (Qworld's Coverage and Uniqueness). ``bineval analyze`` and
``bineval coverage`` are the same from the command line.
"""

from bineval_dspy.analysis.coverage import (
    CoverageReport,
    CoverageResult,
    LLMMatcher,
    Matches,
    SameCheck,
    coverage,
    embedding_matcher,
)
from bineval_dspy.analysis.heatmap import write_heatmap, write_heatmaps
from bineval_dspy.analysis.judged import (
    JudgedOutput,
    JudgedSet,
    References,
    file_references,
    load_judge_output,
    load_meta_scores,
    meta_references,
)
from bineval_dspy.analysis.phi import DimensionPhi, PhiPair, PhiReport, phi, phi_csv, phi_report
from bineval_dspy.analysis.pruning import Cut, PruningReport, prune
from bineval_dspy.analysis.weights import (
    CrossValidation,
    DimensionWeights,
    WeightsReport,
    fit_nonnegative,
    fit_weights,
    group_folds,
    held_out_scores,
)

__all__ = [
    "CoverageReport",
    "CoverageResult",
    "CrossValidation",
    "Cut",
    "DimensionPhi",
    "DimensionWeights",
    "JudgedOutput",
    "JudgedSet",
    "LLMMatcher",
    "Matches",
    "PhiPair",
    "PhiReport",
    "PruningReport",
    "References",
    "SameCheck",
    "WeightsReport",
    "coverage",
    "embedding_matcher",
    "file_references",
    "fit_nonnegative",
    "fit_weights",
    "group_folds",
    "held_out_scores",
    "load_judge_output",
    "load_meta_scores",
    "meta_references",
    "phi",
    "phi_csv",
    "phi_report",
    "prune",
    "write_heatmap",
    "write_heatmaps",
]
