"""Reading and writing JSON / JSON Lines with errors that name the file, line and field."""

from __future__ import annotations

import json
import tomllib
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


def read_text(path: Path, what: str = "") -> str:
    """A whole file as UTF-8 text; unreadable or non-UTF-8 files are one located InputError."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, expected a file{what}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x})") from None


def read_jsonl(path: Path, required: Sequence[str] = ()) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; raise InputError on the first bad one."""
    for number, line in enumerate(read_text(path).splitlines(), start=1):
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


def read_json(path: Path) -> Any:
    """The JSON value in a file; malformed JSON is one located InputError."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: malformed JSON ({exc.msg})") from None


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON file that must hold an object (a sidecar, a results file); anything else is one InputError."""
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise InputError(f"{path}: expected a JSON object, got {type(raw).__name__}")
    return raw


def load_model(path: Path, model: type[Model]) -> Model:
    """Read one pydantic model from a JSON file; malformed JSON or a bad field is one located InputError."""
    return _validated(path, model, read_json(path))


def load_toml(path: Path, model: type[Model]) -> Model:
    """Read a TOML file into a pydantic model; malformed TOML or a bad field is one located InputError."""
    try:
        raw = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: malformed TOML ({exc})") from None
    return _validated(path, model, raw)


def _validated(path: Path, model: type[Model], raw: Any) -> Model:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise InputError(f"{path}: {describe_validation_error(exc)}") from None


def check_output_path(path: Path) -> None:
    """Fail before any LM work when ``path`` cannot be written: a folder, or a missing or read-only folder."""
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give a file path for the output")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"{path}: the folder {folder} does not exist")
    if path.exists() and not path.is_file():
        raise InputError(f"{path}: not a regular file")


def append_jsonl(path: Path, obj: dict[str, Any]) -> None:
    """Append one object as a line and flush, so an interrupted run loses nothing written."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(obj, ensure_ascii=False) + "\n")


def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically (temporary file, then rename): a kill never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
