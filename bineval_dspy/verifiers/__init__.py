"""Code verifiers for IFEval and IFBench constraints (see ``registry``)."""

from bineval_dspy.verifiers.registry import (
    Check,
    Mode,
    VerifierError,
    build_check,
    follows,
    known_instruction_ids,
    loose_variants,
    register,
)

__all__ = [
    "Check",
    "Mode",
    "VerifierError",
    "build_check",
    "follows",
    "known_instruction_ids",
    "loose_variants",
    "register",
]

# Importing the modules registers their verifiers.
from bineval_dspy.verifiers import (  # noqa: E402,F401
    ifbench_count,
    ifbench_custom,
    ifbench_format,
    ifbench_ratio,
    ifbench_repeat,
    ifbench_sentence,
    ifbench_words,
    ifeval,
)
