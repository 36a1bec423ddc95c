"""Reading and writing JSON / JSON Lines with errors that name the file, line and field."""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bineval_dspy.core import outputs
from bineval_dspy.core.errors import InputError, one_line

Model = TypeVar("Model", bound=BaseModel)


def describe_validation_error(exc: ValidationError, model: type[BaseModel] | None = None) -> str:
    """The first pydantic error as 'field: message', short enough for one line; several missing top-level fields are
    all named (a config printed by ``--example`` leaves each required key for the user to fill). With the ``model``
    (a config), every unknown key is named at once, each with the closest known key: a config has several typos as
    often as one, and fixing them one run at a time is slow."""
    errors = exc.errors()
    unknown = [err["loc"] for err in errors if err["type"] == "extra_forbidden"]
    if model is not None and unknown:
        return "unknown key(s): " + ", ".join(_unknown_key(model, loc) for loc in unknown)
    missing = [str(err["loc"][0]) for err in errors if err["type"] == "missing" and len(err["loc"]) == 1]  # top-level keys
    if len(missing) > 1:
        return f"required fields missing: {', '.join(repr(name) for name in missing)}"
    err = errors[0]
    field = ".".join(str(p) for p in err["loc"]) or "(root)"
    return f"field '{field}': {err['msg']}"


MAX_FILE_BYTES = 256 * 2**20  # one whole file read at once (a config, a checklist, a results file)
SOURCE = "source"  # the validation context's key naming the file a model is read from (``runs.spec.RunSpec.source``)

def _unknown_key(model: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """'data.trian' (did you mean 'data.train'?): the unknown key, and the known key of its table closest to it."""
    for part in loc[:-1]:  # the table the key is in: follow nested models (a list index or a union stops the walk)
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return f"'{'.'.join(map(str, loc))}'"
        model = annotation
    prefix = "".join(f"{part}." for part in loc[:-1])
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.6)
    return f"'{prefix}{loc[-1]}'" + (f" (did you mean '{prefix}{close[0]}'?)" if close else "")


def read_text(path: Path, what: str = "") -> str:
    """A whole file as UTF-8 text; unreadable, non-UTF-8 or endless files (``/dev/zero``) are one located
    InputError, read no further than ``MAX_FILE_BYTES``."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, expected a file{what}") from None
    except FileNotFoundError:
        raise InputError(f"{path}: cannot read: no such file{what}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB, more than any file of ours; is it the right file?")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")  # a byte order mark is no part of the text
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x})") from None


# JSON leaves these raw with ensure_ascii=False, and str.splitlines() splits on them: escaped on write, and a
# reader splits on "\n" alone, so text holding them round-trips.
_LINE_SEPARATORS = str.maketrans({"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps_line(obj: Any) -> str:
    """One JSON Lines line (with its "\n"): UTF-8 text kept readable, Unicode line separators escaped, and a lone
    surrogate (which UTF-8 cannot encode) written as its JSON escape."""
    text = json.dumps(obj, ensure_ascii=False).translate(_LINE_SEPARATORS)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: str, *, allow_nan: bool = True) -> Any:
    """``json.loads`` whose nesting too deep to parse is a ValueError, not a crash; without ``allow_nan``, NaN and
    Infinity (which standard JSON readers refuse) are a ValueError too."""
    try:
        return json.loads(text) if allow_nan else json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _check_text(obj: Any, line: str) -> str | None:
    """Why a parsed line is not text, or None: a lone surrogate escape (\\ud800) decodes to no character."""
    if "\\ud" not in line.lower():
        return None
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return "a string holds a lone surrogate escape (\\ud800-\\udfff), not text"
    return None


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text: split on "\n" only (a JSON string may hold U+2028 raw)."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def read_jsonl(
    path: Path, required: Sequence[str] = (), *, torn_tail: bool = False, standard: bool = False
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; raise InputError on the first bad one.

    ``torn_tail``: a last line that lacks its "\n" and does not parse is skipped, not an error: what a run killed or
    out of disk space mid-write leaves in its own output, which a resume rewrites without it. ``standard``: data a
    run passes on (to an LM, to its output) must be standard JSON text: no NaN or Infinity, no lone surrogate.
    """
    for number, line, last in text_lines(path):
        if not line.strip():
            continue
        try:
            obj = loads(line, allow_nan=not standard)
        except ValueError as exc:
            if torn_tail and last and not line.endswith("\n"):
                return
            raise InputError(f"{path}:{number}: malformed JSON ({_reason(exc)})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
        problem = _check_text(obj, line) if standard else None
        if problem:
            raise InputError(f"{path}:{number}: {problem}")
        missing = [f for f in required if f not in obj]
        if missing:
            raise InputError(f"{path}:{number}: missing field '{missing[0]}'")
        yield number, obj


def read_jsonl_models(
    path: Path, model: type[Model], required: Sequence[str] = (), *, torn_tail: bool = False, hint: str = ""
) -> Iterator[tuple[int, Model]]:
    """``read_jsonl``, each line validated as ``model``: the first line that is not one is one located InputError
    (``hint`` appended, e.g. what to do about damaged output of a run), never a pydantic traceback."""
    for number, obj in read_jsonl(path, required, torn_tail=torn_tail):
        try:
            yield number, model.model_validate(obj)
        except ValidationError as exc:
            raise InputError(f"{path}:{number}: {describe_validation_error(exc)}{hint}") from None


MAX_LINE_BYTES = 64 * 2**20  # one JSON Lines row; a longer "line" is no row of ours


def text_lines(path: Path) -> Iterator[tuple[int, str, bool]]:
    """(number, line with its "\n", whether it is the last) for each line of a UTF-8 file, read as it goes (memory
    flat in the file's size), split on "\n" only; errors are ``read_text``'s."""
    try:
        handle = path.open("rb")
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, expected a file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    with handle:

        def next_line(number: int) -> bytes:
            line = handle.readline(MAX_LINE_BYTES + 1)
            if len(line) > MAX_LINE_BYTES:  # /dev/zero, or a file that is no JSON Lines: never read without bound
                raise InputError(f"{path}:{number}: a line longer than {MAX_LINE_BYTES // 2**20} MiB; is this a JSON Lines file?")
            return line

        raw = next_line(1)
        number = 1
        while raw:
            following = next_line(number + 1)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"{path}:{number}: not UTF-8 text (byte 0x{raw[exc.start]:02x})") from None
            yield number, line.removeprefix("\ufeff") if number == 1 else line, not following
            raw, number = following, number + 1


def _reason(exc: ValueError) -> str:
    return exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)


def read_json(path: Path) -> Any:
    """The JSON value in a file; malformed JSON is one located InputError."""
    text = read_text(path)  # a missing or unreadable file is said as such, not as malformed JSON
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: malformed JSON ({exc.msg})") from None
    except ValueError as exc:
        raise InputError(f"{path}: malformed JSON ({exc})") from None


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
    """Read a TOML file into a pydantic model (a run config gets the file as its ``source``); malformed TOML or a
    bad field is one located InputError."""
    try:
        raw = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: malformed TOML ({exc})") from None
    return _validated(path, model, raw, config=True)


def _validated(path: Path, model: type[Model], raw: Any, config: bool = False) -> Model:
    try:
        return model.model_validate(raw, context={SOURCE: str(path)})
    except ValidationError as exc:
        raise InputError(f"{path}: {describe_validation_error(exc, model if config else None)}") from None


def check_output_path(path: Path, *inputs: Path) -> None:
    """Fail before any LM work when ``path`` cannot be written (a folder, a missing or read-only folder) or is one
    of the command's ``inputs`` (writing it would destroy what the run reads)."""
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give a file path for the output")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"{path}: the folder {folder} does not exist")
    if path.exists() and not path.is_file():
        raise InputError(f"{path}: not a regular file")
    for source in inputs:
        if _same_file(path, source):
            raise InputError(f"{path}: is also an input of this command ({source}); give another output path")
    _check_writable(path, folder)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


def _check_writable(path: Path, folder: Path) -> None:
    """Create and remove a scratch file beside ``path``: a read-only folder fails here, before any work (a
    permission check alone would pass for root on a read-only mount)."""
    probe = folder / f".{path.name}.{os.getpid()}.probe"
    try:
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise InputError(f"{path}: cannot write in {folder} ({exc.strerror})") from None
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"{path}: cannot write (read-only file)")


def write_error(path: Path, exc: Exception, kept: str = "finished rows are kept") -> InputError:
    """A failed write as the one located line the CLI prints (exit 2); ``exc`` is an OS error, or a library's own
    error for one (a tensor or tokenizer file's writer), and ``kept`` says what a rerun goes on from."""
    reason = (exc.strerror or str(exc)) if isinstance(exc, OSError) else one_line(exc)
    return InputError(f"{path}: cannot write ({reason}); {kept}, rerun to go on")


def append_jsonl(path: Path, obj: dict[str, Any]) -> None:
    """Append one object as a line and flush, so an interrupted run loses nothing written. A failed write (a full
    disk) is cut back to the file's previous end, so no torn line is left, and raised as one located line."""
    data = dumps_line(obj).encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        end = os.fstat(fd).st_size
        try:
            _write_all(fd, data)
        except OSError as exc:
            _cut(fd, end)
            raise write_error(path, exc) from None
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _cut(fd: int, size: int) -> None:
    try:
        os.ftruncate(fd, size)
    except OSError:
        pass


def write_text_atomic(path: Path, text: str) -> None:
    """Write a file through a temporary file and a rename: a kill or a full disk never leaves half a file, and
    the old content stays until the new one is complete. A failed write is one located InputError."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        outputs.replace_locked(tmp, path)  # the output's lock, if held, moves to the new file
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise write_error(path, exc) from None


def rewrite_jsonl(path: Path, objs: Iterable[dict[str, Any]]) -> None:
    """Replace a JSON Lines file with ``objs``, atomically (``write_text_atomic``)."""
    write_text_atomic(path, "".join(dumps_line(obj) for obj in objs))


def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically (temporary file, then rename): a kill never leaves half a file."""
    write_text_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False))
