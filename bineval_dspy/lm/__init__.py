"""LMs: ``--lm`` specs to ``dspy.LM`` (embedded GGUF models, OpenAI-compatible servers, LiteLLM), runtime set-up,
call and token counting, prices and budgets.

LiteLLM's price map is never fetched: ``bineval_dspy/__init__.py`` sets LITELLM_LOCAL_MODEL_COST_MAP first.
"""

from bineval_dspy.lm.specs import DEFAULT_LM, is_local, make_lm

__all__ = ["DEFAULT_LM", "is_local", "make_lm"]
