"""Reading and writing JSON / JSON Lines with errors that name the file, line and field."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bineval_dspy.core.errors import InputError

Model = TypeVar("Model", bound=BaseModel)


def describe_validation_error(exc: ValidationError) -> str:
    """The first pydantic error as 'field: message', short enough for one line."""
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"]) or "(root)"
    return f"field '{field}': {err['msg']}"


def read_jsonl(path: Path, required: Sequence[str] = ()) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; raise InputError on the first bad one."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{number}: malformed JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise InputError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
            missing = [f for f in required if f not in obj]
            if missing:
                raise InputError(f"{path}:{number}: missing field '{missing[0]}'")
            yield number, obj


def load_model(path: Path, model: type[Model]) -> Model:
    """Read one pydantic model from a JSON file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        if exc.errors()[0]["type"] == "json_invalid":
            raise InputError(f"{path}: malformed JSON ({exc.errors()[0]['msg']})") from None
        raise InputError(f"{path}: {describe_validation_error(exc)}") from None


def append_jsonl(path: Path, obj: dict[str, Any]) -> None:
    """Append one object as a line and flush, so an interrupted run loses nothing written."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(obj, ensure_ascii=False) + "\n")
