"""A JSON adapter that builds each signature's fixed prompt parts once.

Why: DSPy's ``JSONAdapter`` rebuilds a signature's system message and its response schema (pydantic schema
generation, a model created per call) on every call, though both depend on the signature alone. Against a fast
server that was about a third of a verdict's client CPU. Signatures are immutable classes (new instructions make a
new class), so what is built for one stays right for it; entries go with their signature.
"""

from __future__ import annotations

import weakref
from typing import Any

import dspy


class MemoJSONAdapter(dspy.JSONAdapter):
    """``dspy.JSONAdapter`` with its system message and response format built once per signature."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._system: weakref.WeakKeyDictionary[type, str] = weakref.WeakKeyDictionary()
        self._formats: weakref.WeakKeyDictionary[type, dict[tuple[bool, bool], dict[str, Any] | None]] = weakref.WeakKeyDictionary()

    def format_system_message(self, signature: type[dspy.Signature]) -> str:
        message = self._system.get(signature)
        if message is None:
            message = self._system[signature] = super().format_system_message(signature)
        return message

    def _prepare_response_format(self, lm: Any, lm_kwargs: dict[str, Any], signature: type[dspy.Signature]) -> None:
        """DSPy's choice of response format for this LM's declared support (a pydantic model whose JSON schema is
        fixed, or JSON mode), made once per signature and support."""
        support = ("response_format" in lm.supported_params, bool(getattr(lm, "supports_response_schema", False)))
        by_support = self._formats.setdefault(signature, {})
        if support not in by_support:
            chosen: dict[str, Any] = {}
            super()._prepare_response_format(lm, chosen, signature)
            by_support[support] = chosen.get("response_format")
        if by_support[support] is not None:
            lm_kwargs["response_format"] = by_support[support]

