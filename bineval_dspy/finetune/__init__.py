"""Fine-tuning from the library's own feedback: samples scored by checklists become LoRA training data.

Importing this package loads no PyTorch: training imports it when it runs.
"""

from bineval_dspy.finetune.optimizer import BinEvalFinetune
from bineval_dspy.finetune.settings import FinetuneSettings
from bineval_dspy.programs.weights import Weights

__all__ = ["BinEvalFinetune", "FinetuneSettings", "Weights"]
