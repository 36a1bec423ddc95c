"""Code verifiers for IFEval and IFBench constraints (see ``registry``; kwargs are checked in ``kwargs``).

The IFEval verifiers follow google-research's ``instruction_following_eval``. All IFBench verifiers follow one
grader release, the pip-installable ``ifbench`` package (0.2.0) of allenai/IFBench, ``ifbench/instructions.py``
at commit db69a6f05689830b0068b8f1529ebcfd2f3b164c: its sentence checks split with ``nltk.sent_tokenize``
(``text.split_sentences_punkt``), not with IFEval's rule-based splitter of earlier IFBench releases.

Each verifier also states its rule as an instruction to the writer (``describe``) and says what it found in a
response (``diagnose``), so a failed check can be turned into a lesson.
"""

from bineval_dspy.verifiers.registry import (
    Check,
    Finding,
    Mode,
    VerifierError,
    build_check,
    code_digest,
    describe,
    diagnose,
    follows,
    known_instruction_ids,
    loose_variants,
    register,
    unknown_id,
)
from bineval_dspy.verifiers.user import load_verifier_file, load_verifier_files, verifier

__all__ = [
    "Check",
    "Finding",
    "Mode",
    "VerifierError",
    "build_check",
    "code_digest",
    "describe",
    "diagnose",
    "follows",
    "known_instruction_ids",
    "load_verifier_file",
    "load_verifier_files",
    "loose_variants",
    "register",
    "unknown_id",
    "verifier",
]

# Importing the modules registers their verifiers.
from bineval_dspy.verifiers import (  # noqa: F401
    checks,
    grounded,
    ifbench_count,
    ifbench_custom,
    ifbench_format,
    ifbench_ratio,
    ifbench_repeat,
    ifbench_sentence,
    ifbench_words,
    ifeval,
    ifeval_format,
)
