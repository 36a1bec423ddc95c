"""bineval_dspy: evaluate LLM outputs with independent binary questions, and improve prompts from the answers."""

from bineval_dspy.checklist import ChecklistGenerator
from bineval_dspy.judge import BinaryJudge
from bineval_dspy.models import make_lm
from bineval_dspy.schema import Checklist, Question, Scorecard, Verdict
from bineval_dspy.scoring import rescale, score

__all__ = ["BinaryJudge", "Checklist", "ChecklistGenerator", "Question", "Scorecard", "Verdict", "make_lm", "rescale", "score"]
