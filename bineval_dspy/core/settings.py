"""Settings that say which release added them, so a fingerprint is derived from a model instead of built by hand.

A run's output is resumed only under the settings that made it (``core.fingerprint``). When a release adds a
setting, output made before it has no trace of that setting; a field declared with ``added("0.2")`` is left out of
the fingerprint while it holds its default, so that output still resumes, and is recorded as soon as it differs.
Fields declared without ``added`` date from the first release and are always recorded. This replaces the lists of
"settings added later" each runner kept beside its own fingerprint.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field
from pydantic_core import PydanticUndefined

from bineval_dspy.core.fingerprint import Fingerprint, digest

ADDED = "added"  # the json_schema_extra key that names a field's release
DECIDES = "decides"  # False: the field does not decide results (an output path, ``overwrite``): never fingerprinted


def added(release: str, default: Any = PydanticUndefined, **kwargs: Any) -> Any:
    """A field added in ``release``: left out of fingerprints while it holds its default."""
    extra = dict(kwargs.pop("json_schema_extra", None) or {})
    return Field(default, json_schema_extra={**extra, ADDED: release}, **kwargs)


def unrecorded(default: Any = PydanticUndefined, **kwargs: Any) -> Any:
    """A field that does not decide results (where output goes, whether to overwrite it): never fingerprinted."""
    return Field(default, json_schema_extra={DECIDES: False}, **kwargs)


def optional() -> Any:
    """A fact some runs do not have (a file they were not given): None, and then no entry of their fingerprint."""
    return Field(default=None, exclude_if=lambda value: value is None)


def _extra(model: type[BaseModel], name: str) -> dict[str, Any]:
    extra = model.model_fields[name].json_schema_extra
    return extra if isinstance(extra, dict) else {}


def _default(model: type[BaseModel], name: str) -> Any:
    info = model.model_fields[name]
    return info.get_default(call_default_factory=True)


def _dumped(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def left_out(model: BaseModel) -> dict[str, Any]:
    """The pydantic ``exclude`` spec of what a fingerprint leaves out of ``model``, nested models included: fields
    that do not decide results, and fields added after the first release that hold their default."""
    cls = type(model)
    out: dict[str, Any] = {}
    for name in cls.model_fields:
        extra, value = _extra(cls, name), getattr(model, name)
        if extra.get(DECIDES) is False or (ADDED in extra and _dumped(value) == _dumped(_default(cls, name))):
            out[name] = True
        elif isinstance(value, BaseModel) and (inner := left_out(value)):
            out[name] = inner
    return out


def settled_json(model: BaseModel) -> str:
    """``model`` as JSON, less what ``left_out`` names: the same text output made before a later field recorded."""
    return model.model_dump_json(exclude=left_out(model))


def fingerprint_of(model: BaseModel) -> Fingerprint:
    """A fingerprint with one entry per recorded field of ``model`` (strings as they are, models as their settled
    JSON, the rest as JSON), so a refused resume names the field that differs. A model that allows extra fields
    (one entry per method, say) records each of them too."""
    dumped = json.loads(settled_json(model))
    return {
        name: settled_json(value) if isinstance(value := getattr(model, name, None), BaseModel)
        else dumped[name] if isinstance(dumped[name], str) else json.dumps(dumped[name], sort_keys=True)
        for name in dumped
    }  # fmt: skip


def listed_digest(model: BaseModel, *, sort_keys: bool = True) -> str:
    """The digest of ``model``'s recorded fields, in order, as one JSON list: the one string some saved work is keyed
    by (an experiment arm's ``arm.json``, a fine-tuning run's training key), kept in the form those files hold."""
    return digest(json.dumps(list(json.loads(settled_json(model)).values()), sort_keys=sort_keys))
