"""Library defaults the parser shows in its help, copied here so that building the parser imports no DSPy, LiteLLM,
NumPy or SciPy (``bineval --help`` and ``--version`` start in a fraction of a second). Each name is the value of the
library constant named beside it; ``tests/cli/test_startup.py`` checks that they agree."""

from __future__ import annotations

DEFAULT_LM = "smollm2"  # bineval_dspy.lm.specs.DEFAULT_LM
DEFAULT_TIMEOUT = 120.0  # bineval_dspy.lm.remote.DEFAULT_TIMEOUT
DEFAULT_THREADS = 4  # bineval_dspy.lm.runtime.DEFAULT_THREADS
CHECKLIST_METHODS = ("bineval", "tick", "qworld", "checkeval", "rocketeval", "rlcf", "rlcf-contrastive", "feedback")  # bineval_dspy.checklists.writers.METHODS
GENERATE_MAX_TOKENS = 256  # bineval_dspy.programs.refine.DEFAULT_MAX_TOKENS
PHI_THRESHOLD = 0.8  # bineval_dspy.analysis.pruning.DEFAULT_THRESHOLD
MIN_PAIRS = 10  # bineval_dspy.analysis.pruning.DEFAULT_MIN_PAIRS
FOLDS = 5  # bineval_dspy.analysis.weights.DEFAULT_FOLDS
ALPHA = 1.0  # bineval_dspy.analysis.weights.DEFAULT_ALPHA
COVERAGE_THRESHOLD = 0.7  # bineval_dspy.analysis.coverage.DEFAULT_THRESHOLD

# Where each copy comes from, for the test: name here -> (module, name there).
SOURCES = {
    "DEFAULT_LM": ("bineval_dspy.lm.specs", "DEFAULT_LM"),
    "DEFAULT_TIMEOUT": ("bineval_dspy.lm.remote", "DEFAULT_TIMEOUT"),
    "DEFAULT_THREADS": ("bineval_dspy.lm.runtime", "DEFAULT_THREADS"),
    "CHECKLIST_METHODS": ("bineval_dspy.checklists.writers", "METHODS"),
    "GENERATE_MAX_TOKENS": ("bineval_dspy.programs.refine", "DEFAULT_MAX_TOKENS"),
    "PHI_THRESHOLD": ("bineval_dspy.analysis.pruning", "DEFAULT_THRESHOLD"),
    "MIN_PAIRS": ("bineval_dspy.analysis.pruning", "DEFAULT_MIN_PAIRS"),
    "FOLDS": ("bineval_dspy.analysis.weights", "DEFAULT_FOLDS"),
    "ALPHA": ("bineval_dspy.analysis.weights", "DEFAULT_ALPHA"),
    "COVERAGE_THRESHOLD": ("bineval_dspy.analysis.coverage", "DEFAULT_THRESHOLD"),
}
