"""LMs: ``--lm`` specs to ``dspy.LM`` (embedded GGUF models, OpenAI-compatible servers, LiteLLM), runtime set-up.

Every LM path imports this package first, so the setting below precedes any import of LiteLLM or any read of
DSPy's model metadata: both would otherwise fetch LiteLLM's cost map from GitHub on first use (about 7 s and
warnings when offline). The bundled copy is used instead; export LITELLM_LOCAL_MODEL_COST_MAP=False to fetch.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from bineval_dspy.lm.specs import DEFAULT_LM, is_local, make_lm

__all__ = ["DEFAULT_LM", "is_local", "make_lm"]
