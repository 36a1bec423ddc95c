"""Programs that produce outputs: the generator, STICK self-refinement and Best-of-N."""

from bineval_dspy.programs.generation import run_generation
from bineval_dspy.programs.generator import Generator, PlainChatAdapter, generate_row
from bineval_dspy.programs.refine import ChecklistBestOfN, SelfRefine

__all__ = ["ChecklistBestOfN", "Generator", "PlainChatAdapter", "SelfRefine", "generate_row", "run_generation"]
