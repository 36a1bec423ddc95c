"""LMs: ``--lm`` specs to ``dspy.LM`` (embedded GGUF models or LiteLLM), the in-process llama.cpp engine, runtime set-up."""

from bineval_dspy.lm.specs import DEFAULT_LM, is_local, make_lm

__all__ = ["DEFAULT_LM", "is_local", "make_lm"]
