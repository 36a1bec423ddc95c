"""Qworld's writer: six predictors, one per operator and level, and the tree they grew last."""

from __future__ import annotations

import dspy
from pydantic import BaseModel

from bineval_dspy.checklists.qworld.growth import Growth
from bineval_dspy.checklists.qworld.signatures import (
    CriterionDraft,
    DecomposePerspective,
    DecomposeScenario,
    DecomposeTask,
    ExpandCriteria,
    ExpandPerspectives,
    ExpandScenarios,
    PerspectiveDraft,
    ScenarioDraft,
    items_of,
)
from bineval_dspy.checklists.qworld.tree import DEFAULT_DIMENSION, QworldConfig, QworldTree
from bineval_dspy.core.embeddings import Embedder
from bineval_dspy.core.errors import InputError, RunError
from bineval_dspy.core.schema import Checklist
from bineval_dspy.lm.usage import measured


def _predict(signature: type[dspy.Signature], output: str, item: type[BaseModel], low: int, high: int) -> dspy.Predict:
    """An operator's predictor: the signature with its output, a list of ``low`` to ``high`` items."""
    return dspy.Predict(signature.append(output, dspy.OutputField(), type_=items_of(item, low, high)))


class QworldWriter(dspy.Module):
    """Qworld's recursive expansion tree as a ``ChecklistWriter``: ``forward(task, dimensions) -> Checklist``.

    Six predictors, one per operator and level (R_h and R_w for scenarios, perspectives, criteria), so an optimizer
    can tune each. Given dimensions are a choice the LM makes for each perspective (one given: all of them); else
    every criterion is in ``DEFAULT_DIMENSION``. After a call, ``self.tree`` holds the tree, its operator counts,
    unparseable answers, merged duplicates and LM cost. ``embed`` (texts -> vectors) defaults to offline MiniLM.
    A tree with no criterion raises ``RunError``.
    """

    def __init__(self, config: QworldConfig | None = None, *, embed: Embedder | None = None) -> None:
        super().__init__()
        self.config = config or QworldConfig()
        self.embed = embed
        c = self.config
        self.decompose_task = _predict(DecomposeTask, "scenarios", ScenarioDraft, 1, c.scenarios_per_call)
        self.expand_scenarios = _predict(ExpandScenarios, "missing", ScenarioDraft, 0, c.new_per_round)
        self.decompose_scenario = _predict(DecomposeScenario, "perspectives", PerspectiveDraft, 1, c.perspectives_per_call)
        self.expand_perspectives = _predict(ExpandPerspectives, "missing", PerspectiveDraft, 0, c.new_per_round)
        self.decompose_perspective = _predict(DecomposePerspective, "criteria", CriterionDraft, 1, c.criteria_per_call)
        self.expand_criteria = _predict(ExpandCriteria, "missing", CriterionDraft, 0, c.new_per_round)
        self.tree: QworldTree | None = None

    def forward(self, task: str, dimensions: list[str] | None = None) -> Checklist:
        if not task or not task.strip():
            raise InputError("task: the task description is empty")
        dims = list(dict.fromkeys(d.strip().lower() for d in (dimensions or []) if d.strip())) or [DEFAULT_DIMENSION]
        tree, cost = measured(lambda: Growth(self, task, dims).grow())
        tree.stats.cost = cost
        self.tree = tree
        if not tree.criteria:
            failed = sum(tree.stats.unparseable.values())
            raise RunError(f"qworld: the LM gave no usable criteria ({failed} unparseable answer(s))")
        return tree.checklist(self.config.code_checks)
