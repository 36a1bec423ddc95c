"""A suite as a prompt template and a table of rows, as promptfoo's prompts x vars: each row's values fill the
template's ``{{variables}}``, and the filled prompt is the row's prompt.

A template suite is a TOML file, read wherever a suite is (``load_suite``: `generate --suite`, a config's
``[data] suite``, `verify`)::

    template = "Write a haiku about {{topic}}, all in lowercase letters."   # or a file beside this one
    rows = "topics.csv"                                                     # or .jsonl: one object per row
    checks = [{verifier = "change_case:english_lowercase"}]                 # every row's code checks

A row's other columns are its variables (kept with the row and in what is generated from it); ``key`` names the row
(default: its number among the data rows, from 1: a CSV's header is no row, and a value spanning lines is one), and a JSON Lines row may add checks of its own (``instruction_id_list``, ``kwargs``). A
variable's value is text, or a number (filled in as its JSON text: 3, 2.5); null, true/false, objects and lists are
refused, as is a CSV header naming a column twice. The
template is the generator program's instructions (``programs.generator.Generator``: the row's variables fill them,
and the filled text is the whole prompt), so it is what the optimizer edits while the rows stay.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.core.errors import BinevalError, InputError
from bineval_dspy.core.jsonio import load_toml, read_jsonl, read_text
from bineval_dspy.verifiers import known_instruction_ids, unknown_id

VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
RESERVED = ("key", "instruction_id_list", "kwargs")  # columns that are not variables


class MissingVariable(BinevalError, ValueError):
    """A template names a variable the row has no value for."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no value for {{{{{name}}}}}")
        self.name = name


def variables(template: str) -> list[str]:
    """The variables a template names, in order of first use."""
    return list(dict.fromkeys(VARIABLE.findall(template)))


def fill(template: str, values: dict[str, str]) -> str:
    """The template with each ``{{name}}`` replaced by its value (a value is never read as a template itself)."""
    for name in variables(template):
        if name not in values:
            raise MissingVariable(name)
    return VARIABLE.sub(lambda match: values[match.group(1)], template)


class TemplateCheck(BaseModel):
    """A code check every row of the template suite gets."""

    model_config = ConfigDict(extra="forbid")

    verifier: str
    kwargs: dict[str, Any] = Field(default_factory=dict)


class TemplateSuiteFile(BaseModel):
    """The template suite's TOML file."""

    model_config = ConfigDict(extra="forbid")

    template: str = Field(min_length=1, description="the prompt template with {{variables}}, or a file holding it (beside this one)")
    rows: Path = Field(description="the rows: .jsonl (one object per row) or .csv (a header of column names)")
    checks: list[TemplateCheck] = Field(default_factory=list, description="code checks every row gets")


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line, row) of a JSON Lines or CSV table."""
    if path.suffix == ".jsonl":
        return list(read_jsonl(path))
    if path.suffix != ".csv":
        raise InputError(f"{path}: template rows are read by their suffix: .jsonl or .csv")
    text = read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline=""))  # a quoted value keeps its newlines
    names = reader.fieldnames or []
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InputError(f"{path}:{reader.line_num}: column {repeated[0]!r} appears twice in the header; name each column once")
    rows = []
    for row in reader:
        if None in row:
            raise InputError(f"{path}:{reader.line_num}: more values than the header's {len(reader.fieldnames or [])} columns")
        rows.append((reader.line_num, {name: value for name, value in row.items() if value is not None}))
    return rows


def _text(value: Any, where: str) -> str:
    """A row's value as the text it fills in: text as it is, a number as its JSON text (3, 2.5); anything else
    (null, true, an object, a list) is one InputError line, never filled in as Python would spell it ("None")."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return json.dumps(value)
    kind = "an object" if isinstance(value, dict) else "a list" if isinstance(value, list) else json.dumps(value)
    raise InputError(f"{where}: a template value is text or a number, not {kind}")


def _key(row: dict[str, Any], number: int, at: str) -> Any:
    """The row's ``key`` column, else its number among the data rows (from 1); an empty key names no row."""
    if "key" not in row:
        return str(number)
    if not str(row["key"]).strip():
        raise InputError(f"{at}: field 'key' is empty; give each row a key, or leave the column out to number the rows from 1")
    return row["key"]


def load_template_suite(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The suite lines a template suite stands for (``key``, the filled ``prompt``, the checks, ``variables`` and
    ``template``), each with the ``file:line`` of its row; a row without a value for one of the template's variables
    is one InputError line naming the rows file, the row and the variable."""
    spec = load_toml(path, TemplateSuiteFile)
    beside = path.parent / spec.template
    given = "\n" not in spec.template and len(spec.template) < 256 and beside.is_file()
    template = read_text(beside).strip() if given else spec.template
    where = str(beside) if given else f"{path}: field 'template'"
    if not variables(template):
        raise InputError(f"{where}: the template names no {{{{variable}}}} (a file that is not there is read as the template's text)")
    reserved = [name for name in variables(template) if name in RESERVED]
    if reserved:
        raise InputError(f"{where}: {{{{{reserved[0]}}}}} is reserved ({', '.join(RESERVED)} are a row's key and checks, never variables); rename it")
    known = set(known_instruction_ids())
    for index, check in enumerate(spec.checks):
        if check.verifier not in known:
            raise InputError(f"{path}: field 'checks.{index}.verifier': {unknown_id(check.verifier)}")
    rows_path = path.parent / spec.rows
    lines: list[tuple[str, dict[str, Any]]] = []
    for number, (line, row) in enumerate(_rows(rows_path), start=1):
        at = f"{rows_path}:{line}"
        values = {name: _text(value, f"{at}: field {name!r}") for name, value in row.items() if name not in RESERVED}
        try:
            prompt = fill(template, values)
        except MissingVariable as exc:
            raise InputError(f"{at}: no value for {{{{{exc.name}}}}}, which the template names ({where})") from None
        own_ids, own_kwargs = row.get("instruction_id_list", []), row.get("kwargs", [])
        if not isinstance(own_ids, list) or not isinstance(own_kwargs, list):
            raise InputError(f"{at}: fields 'instruction_id_list' and 'kwargs' are lists (JSON Lines rows only)")
        if not spec.checks and not own_ids:
            raise InputError(f"{at}: no checks: give `checks` in {path} (every row's) or the row's own instruction_id_list")
        lines.append((at, {
            "key": _key(row, number, at), "prompt": prompt, "variables": values, "template": template,
            "instruction_id_list": [c.verifier for c in spec.checks] + own_ids, "kwargs": [c.kwargs for c in spec.checks] + own_kwargs,
        }))  # fmt: skip
    if not lines:
        raise InputError(f"{rows_path}: no rows")
    return lines
