"""Checklists: the ``ChecklistWriter`` protocol and its writers (BinEval's two steps, TICK, Qworld's expansion tree,
``make_writer`` to pick one by name), TICK questions and hybrid (code + TICK) checklists."""

from bineval_dspy.checklists.base import ChecklistWriter
from bineval_dspy.checklists.bineval import BinEvalWriter
from bineval_dspy.checklists.hybrid import constraint_question, hybrid_checklist
from bineval_dspy.checklists.qworld import QworldConfig, QworldTree, QworldWriter
from bineval_dspy.checklists.tick import TickQuestionWriter, TickWriter
from bineval_dspy.checklists.writers import METHODS, make_writer

__all__ = [
    "METHODS",
    "BinEvalWriter",
    "ChecklistWriter",
    "QworldConfig",
    "QworldTree",
    "QworldWriter",
    "TickQuestionWriter",
    "TickWriter",
    "constraint_question",
    "hybrid_checklist",
    "make_writer",
]
