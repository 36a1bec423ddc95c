"""A commented TOML example of a run config, written from its pydantic model, so ``--example`` can never drift
from the keys the loader accepts: every key with its default (required ones commented out with their type)."""

from __future__ import annotations

import json
import re
import types
import typing
from pathlib import Path
from typing import Any, Union

from pydantic import BaseModel
from pydantic.fields import FieldInfo

_MISSING = object()


def _args(annotation: Any) -> tuple[Any, ...]:
    """The members of a union or the parameters of a generic, with ``Annotated`` unwrapped."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _args(typing.get_args(annotation)[0])
    return typing.get_args(annotation)


def _unwrapped(annotation: Any) -> Any:
    return _unwrapped(typing.get_args(annotation)[0]) if typing.get_origin(annotation) is typing.Annotated else annotation


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation allows (``Model``, ``Model | None``, a union of models); empty for a plain value."""
    annotation = _unwrapped(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return [m for member in _args(annotation) for m in _models(member)]
    return []


def _type_name(annotation: Any) -> str:
    text = str(_unwrapped(annotation)) if not isinstance(annotation, type) else annotation.__name__
    for noise in ("typing.", "pathlib.", "<class '", "'>"):
        text = text.replace(noise, "")
    text = re.sub(r"Annotated\[([^,\[\]]+), [^\]]*\)\]", r"\1", text)  # constraints say nothing to a reader
    return "path" if text == "Path" else text


def _selector(annotation: Any) -> Any:
    """The one value of a ``Literal['x']`` key (a union variant's ``kind``), else ``_MISSING``."""
    annotation = _unwrapped(annotation)
    values = typing.get_args(annotation) if typing.get_origin(annotation) is typing.Literal else ()
    return values[0] if len(values) == 1 else _MISSING


def _toml_value(value: Any) -> str | None:
    """``value`` as a TOML literal, or None when it has none (None itself, objects)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value))
    if isinstance(value, list | tuple):
        items = [_toml_value(v) for v in value]
        return None if any(i is None for i in items) else "[" + ", ".join(typing.cast(list[str], items)) + "]"
    if isinstance(value, dict):
        pairs = [(k, _toml_value(v)) for k, v in value.items()]
        return None if any(v is None for _, v in pairs) else "{" + ", ".join(f"{json.dumps(str(k))} = {v}" for k, v in pairs) + "}"
    if isinstance(value, BaseModel):
        return None
    return None


def _default(field: FieldInfo) -> Any:
    return _MISSING if field.is_required() else field.get_default(call_default_factory=True)


def _key_lines(name: str, field: FieldInfo, comment: str) -> list[str]:
    """The comment saying what a key is, then the key with its default (commented out when it has none)."""
    what = f"{field.description}; " if field.description else ""
    default = _default(field)
    if default is _MISSING and _selector(field.annotation) is not _MISSING:
        return [f"{comment}# {name}: selects this kind", f"{comment}{name} = {_toml_value(_selector(field.annotation))}"]
    literal = None if default is _MISSING else _toml_value(default)
    lines = [f"{comment}# {name}: {what}{_type_name(field.annotation)}{' (required)' if default is _MISSING else ''}"]
    if literal is not None:
        lines.append(f"{comment}{name} = {literal}")
    else:
        lines.append(f"{comment}# {name} = {'...' if default is _MISSING else '(none)'}")
    return lines


def _table(model: type[BaseModel], path: str, comment: str, lines: list[str]) -> None:
    """``model``'s plain keys, then its tables (a nested model), arrays of tables and tables of tables."""
    later: list[tuple[str, FieldInfo]] = []
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        annotation = _unwrapped(field.annotation)
        origin = typing.get_origin(annotation)
        if _models(annotation) or (origin in (list, dict) and _models(_args(annotation)[-1])) or (origin is dict and _args(annotation)[-1] is Any):
            later.append((name, field))
        else:
            lines.extend(_key_lines(name, field, comment))
    for name, field in later:
        annotation = _unwrapped(field.annotation)
        origin, here = typing.get_origin(annotation), f"{path}{name}"
        lines.append("")
        if origin is list:
            for variant in _models(_args(annotation)[0]):
                lines.append(f"# [[{here}]]  ({variant.__name__}{'; ' + field.description if field.description else ''})")
                _table(variant, f"{here}.", "# ", lines)
        elif origin is dict and _args(annotation)[-1] is Any:
            lines.append(f"# [{here}]  (a table{': ' + field.description if field.description else ''})")
        elif origin is dict:
            for variant in _models(_args(annotation)[-1]):
                lines.append(f"# [{here}.NAME]  ({variant.__name__}{'; ' + field.description if field.description else ''})")
                _table(variant, f"{here}.NAME.", "# ", lines)
        else:
            optional = _default(field) is None
            for index, variant in enumerate(_models(annotation)):  # the first variant as the table, others commented
                inner = "# " if comment or optional or index else ""
                kind = f"  # {variant.__name__}" + (f": {field.description}" if field.description else "")
                lines.append(f"{inner}[{here}]{kind}")
                _table(variant, f"{here}.", inner, lines)


def commented_toml(model: type[BaseModel], title: str) -> str:
    """A TOML document naming every key of ``model``: defaults as values, required keys commented out with their
    type, tables and arrays of tables after the plain keys (each variant of a union shown commented out)."""
    lines = [f"# {title}", "# Every key with its default; a commented '# key = ...' is required (or has no default).", ""]
    _table(model, "", "", lines)
    return "\n".join(lines) + "\n"
