"""A JSON adapter that builds each signature's fixed prompt parts, and the readers of its fields, once.

Why: DSPy's ``JSONAdapter`` rebuilds a signature's system message and its response schema (pydantic schema
generation, a model created per call) on every call, though both depend on the signature alone. Against a fast
server that was about a third of a verdict's client CPU. Reading a reply rebuilt a pydantic validator per field and
the signature's field map several times: about 100 us of a verdict's 500 (issue 49). Signatures are immutable
classes (new instructions make a new class), so what is built for one stays right for it; entries go with their
signature.
"""

from __future__ import annotations

import weakref
from typing import Any

import dspy
import pydantic
from pydantic import TypeAdapter


class MemoJSONAdapter(dspy.JSONAdapter):
    """``dspy.JSONAdapter`` with its system message and response format built once per signature."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._system: weakref.WeakKeyDictionary[type, str] = weakref.WeakKeyDictionary()
        self._formats: weakref.WeakKeyDictionary[type, dict[tuple[bool, bool], dict[str, Any] | None]] = weakref.WeakKeyDictionary()
        self._readers: weakref.WeakKeyDictionary[type, dict[str, TypeAdapter[Any] | None] | None] = weakref.WeakKeyDictionary()

    def read_whole(self, signature: type[dspy.Signature], obj: dict[str, Any]) -> dict[str, Any] | None:
        """The output fields of a reply that is one whole JSON object holding exactly the signature's output fields,
        each a JSON object of its pydantic model or a string of its ``str`` field: what DSPy's ``parse`` makes of it
        (the same validation, no repair needed), with each field's validator built once. None for anything else (a
        field missing or extra, another type, a value its model refuses): DSPy's ``parse`` reads that, and says why."""
        if signature not in self._readers:
            self._readers[signature] = _field_readers(signature)
        readers = self._readers[signature]
        if readers is None or obj.keys() != readers.keys():
            return None
        fields: dict[str, Any] = {}
        for name, reader in readers.items():
            value = obj[name]
            if reader is None:
                if not isinstance(value, str):
                    return None
                fields[name] = value
                continue
            if not isinstance(value, dict):
                return None
            try:
                fields[name] = reader.validate_python(value)
            except pydantic.ValidationError:
                return None
        return fields

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



def _field_readers(signature: type[dspy.Signature]) -> dict[str, TypeAdapter[Any] | None] | None:
    """A validator per output field (None: a ``str`` field), in the signature's order; None when a field is of
    another type (``read_whole`` leaves those to DSPy)."""
    readers: dict[str, TypeAdapter[Any] | None] = {}
    for name, field in signature.output_fields.items():
        annotation = field.annotation
        if annotation is str:
            readers[name] = None
        elif isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
            readers[name] = TypeAdapter(annotation)
        else:
            return None
    return readers
