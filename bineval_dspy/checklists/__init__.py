"""Checklists: the ``ChecklistWriter`` protocol, BinEval's two-step writer, TICK questions, hybrid (code + TICK)."""

from bineval_dspy.checklists.base import ChecklistWriter
from bineval_dspy.checklists.bineval import BinEvalWriter, ChecklistGenerator
from bineval_dspy.checklists.hybrid import constraint_question, hybrid_checklist
from bineval_dspy.checklists.tick import TickQuestionWriter

__all__ = ["BinEvalWriter", "ChecklistGenerator", "ChecklistWriter", "TickQuestionWriter", "constraint_question", "hybrid_checklist"]
