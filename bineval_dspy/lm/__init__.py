"""LMs: ``--lm`` specs to ``dspy.LM`` (embedded GGUF models, OpenAI-compatible servers, LiteLLM), runtime set-up,
call and token counting, prices and budgets.

LiteLLM's price map is never fetched: ``bineval_dspy/__init__.py`` sets LITELLM_LOCAL_MODEL_COST_MAP first.
Names are imported on first use, so importing a light submodule (``lm.retry``) loads no DSPy: the command line
starts in a fraction of a second.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["DEFAULT_LM", "is_local", "make_lm"]

if TYPE_CHECKING:
    from bineval_dspy.lm.specs import DEFAULT_LM, is_local, make_lm


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'bineval_dspy.lm' has no attribute {name!r}")
    value = getattr(importlib.import_module("bineval_dspy.lm.specs"), name)
    globals()[name] = value
    return value
