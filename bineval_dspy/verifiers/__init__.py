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

import importlib as _importlib

# TEMPORARY while the verifier modules are written: import those that exist.
for _name in ("ifeval", "ifbench_count", "ifbench_custom", "ifbench_format", "ifbench_ratio", "ifbench_repeat", "ifbench_sentence", "ifbench_words"):
    try:
        _importlib.import_module(f"bineval_dspy.verifiers.{_name}")
    except ModuleNotFoundError as _exc:
        if _exc.name != f"bineval_dspy.verifiers.{_name}":
            raise
