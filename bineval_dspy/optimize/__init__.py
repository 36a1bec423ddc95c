"""Optimizing prompts from BinEval feedback: the loop, its policies, lessons, feedback sources, metric, config, audit."""

from bineval_dspy.optimize.audit import Audit
from bineval_dspy.optimize.edits import PromptUpdater
from bineval_dspy.optimize.feedback import CrossModelFeedback, SelfUpdateFeedback
from bineval_dspy.optimize.lessons import LessonBank
from bineval_dspy.optimize.metric import BinEvalMetric, bineval_metric
from bineval_dspy.optimize.notes import NoteTaker
from bineval_dspy.optimize.optimizer import BinEvalOptimizer
from bineval_dspy.optimize.policies import (
    AcceptAll,
    BloatGuard,
    DimensionGapsBelow,
    MaxIterations,
    Patience,
    TargetScore,
)
from bineval_dspy.optimize.proposers import DemoProposer, InstructionProposer, Proposer, ThresholdProposer
from bineval_dspy.optimize.settings import OptimizerSettings

__all__ = [
    "AcceptAll", "Audit", "BinEvalMetric", "BinEvalOptimizer", "BloatGuard", "CrossModelFeedback", "DemoProposer",
    "DimensionGapsBelow", "InstructionProposer", "LessonBank", "MaxIterations", "NoteTaker", "OptimizerSettings",
    "Patience", "PromptUpdater", "Proposer", "SelfUpdateFeedback", "TargetScore", "ThresholdProposer", "bineval_metric",
]
