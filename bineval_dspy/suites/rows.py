"""IFBench/IFEval-style suites and response files: rows, loading with located errors, and the row <-> example join."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import dspy
from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import describe_validation_error, read_jsonl
from bineval_dspy.verifiers import Check, VerifierError, build_check, known_instruction_ids, unknown_id


def _key_as_text(value: Any) -> Any:
    """IFEval files use integer keys, IFBench string keys: both become strings (booleans are not keys)."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


Key = Annotated[str, BeforeValidator(_key_as_text)]


class SuiteRow(BaseModel):
    """One prompt with its instructions; ``kwargs[i]`` holds the arguments of ``instruction_id_list[i]``."""

    key: Key
    prompt: str
    extracted: bool = Field(default=False, exclude=True, repr=False)  # the ids are what the extractor found in the prompt
    instruction_id_list: list[str]  # empty only where the extractor found nothing in a bare row (``load_suite``'s ``bare``)
    kwargs: list[dict[str, Any]]
    written_key: int | str | None = Field(default=None, exclude=True, repr=False)  # the key as the file spells it
    variables: dict[str, str] | None = None  # a template suite's row: the values its template was filled with
    template: str | None = None  # ... and that template, the generator's instructions (``suites.templates``)

    @field_validator("instruction_id_list")
    @classmethod
    def _some_instruction(cls, ids: list[str], info: ValidationInfo) -> list[str]:
        """A suite's row names at least one instruction; only a bare row the extractor read may have none."""
        if not ids and not info.data.get("extracted"):
            raise PydanticCustomError("too_short", "List should have at least 1 item")
        return ids

    @model_serializer(mode="wrap")
    def _plain_rows_plain(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A row of a plain suite is written as before: no template fields."""
        data = handler(self)
        if isinstance(data, dict) and self.variables is None:
            data.pop("variables", None)
            data.pop("template", None)
        return data

    @model_validator(mode="before")
    @classmethod
    def _keep_written_key(cls, data: Any) -> Any:
        """Remember the key's JSON type (IFEval's integers) before it becomes text, so outputs write it back as given."""
        if isinstance(data, dict) and "written_key" not in data and isinstance(data.get("key"), int | str) and not isinstance(data.get("key"), bool):
            data = {**data, "written_key": data["key"]}
        return data

    @property
    def json_key(self) -> int | str:
        """The key for an output file: as the suite wrote it (an integer stays an integer)."""
        return self.written_key if self.written_key is not None else self.key

    def to_example(self) -> dspy.Example:
        """The row as a ``dspy.Example`` whose input is ``prompt`` (what a generator program sees) and, for a template
        row, its ``variables`` (which fill the program's template); a row whose checks the extractor found says so."""
        example = dspy.Example(**self.model_dump(), **({"extracted": True} if self.extracted else {}))
        return example.with_inputs("prompt", *(("variables",) if self.variables is not None else ()))

    @classmethod
    def from_example(cls, example: dspy.Example) -> SuiteRow:
        """The suite row an example was made from (``to_example``'s inverse)."""
        fields = {name: example[name] for name in (*SUITE_FIELDS, "variables", "template") if name in example}
        return cls(**fields, extracted=bool(example.get("extracted", False)))

    def with_template(self, template: str) -> SuiteRow:
        """A template row with another template (an optimized program's): its prompt filled again from its variables."""
        from bineval_dspy.suites.templates import fill

        if self.variables is None:
            return self
        return self.model_copy(update={"template": template, "prompt": fill(template, self.variables)})

    def checks(self) -> list[Check | str]:
        """One check per instruction or, where its verifier rejects the kwargs, the reason it is ungraded.

        Bad kwargs spoil one instruction, not the row; an unknown instruction id still raises VerifierError.
        """
        known = set(known_instruction_ids())
        checks: list[Check | str] = []
        for index, (instruction_id, kwargs) in enumerate(zip(self.instruction_id_list, self.kwargs, strict=True)):
            if instruction_id not in known:
                raise VerifierError(f"unknown instruction id {instruction_id!r}")
            try:
                checks.append(build_check(instruction_id, kwargs, self.prompt))
            except VerifierError as exc:
                checks.append(f"kwargs.{index}: {exc}")
        return checks


SUITE_FIELDS = ("key", "prompt", "instruction_id_list", "kwargs")  # what a suite line must hold


class ResponseRow(BaseModel):
    """One response, found by suite ``key`` when given, else by ``prompt``; ``where`` is its file:line."""

    where: str
    key: Key | None = None
    prompt: str | None = None
    response: str


def _validated(model: type[BaseModel], obj: dict[str, Any], where: str) -> Any:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise InputError(f"{where}: {describe_validation_error(exc)}") from None


Extract = Callable[[str], list[tuple[str, dict[str, Any]]]]  # a prompt -> the constraints its words state


def _suite_row(obj: dict[str, Any], where: str, extract: Extract | None = None, bare: bool = False) -> SuiteRow:
    """Validate one suite line: fields, matching kwargs, known instruction ids. With ``extract``, a line holding only
    a key and a prompt (a plain task) gets the constraints ``extract`` finds in its prompt; with none found it is
    refused, since nothing could grade it, unless ``bare`` (a run that needs no ids: generating replies), where it is
    kept with none.

    Kwargs a verifier rejects do not reject the row: that instruction is reported ungraded when graded.
    """
    if extract is not None and "instruction_id_list" not in obj and "kwargs" not in obj:
        prompt = obj.get("prompt")  # a bare row is its prompt: a number or blanks was a wrong field's line or a run
        if not isinstance(prompt, str) or not prompt.strip():
            what = "missing" if prompt is None else "blank" if isinstance(prompt, str) else f"{type(prompt).__name__}, not text"
            raise InputError(f"{where}: field 'prompt': {what}; a row of a key and a prompt needs the task's words")
        found = extract(obj["prompt"])
        if not found and not bare:
            raise InputError(f"{where}: field 'instruction_id_list': missing, and no constraint code can check is stated in the prompt")
        obj = {**obj, "instruction_id_list": [i for i, _ in found], "kwargs": [k for _, k in found], "extracted": True}
    for field in SUITE_FIELDS:
        if field not in obj:
            raise InputError(f"{where}: missing field '{field}'")
    row: SuiteRow = _validated(SuiteRow, obj, where)
    if len(row.kwargs) != len(row.instruction_id_list):
        raise InputError(
            f"{where}: mismatched kwargs: {len(row.kwargs)} kwargs for {len(row.instruction_id_list)} instruction ids"
        )
    known = set(known_instruction_ids())
    for index, instruction_id in enumerate(row.instruction_id_list):
        if instruction_id not in known:
            raise InputError(f"{where}: field 'instruction_id_list.{index}': {unknown_id(instruction_id)}")
    return row


def load_suite(
    path: Path | str, skipped: list[InputError] | None = None, extract: Extract | None = None, bare: bool = False
) -> list[SuiteRow]:
    """Read an IFBench-style suite (JSON Lines), or a template suite (``.toml``: ``suites.templates``). Invalid rows
    raise InputError, or go to ``skipped`` when given. ``extract``: rows of only a key and a prompt are accepted,
    graded by the constraints it finds; ``bare``: kept too where it finds none (``_suite_row``).

    Malformed JSON always raises: the rest of such a file cannot be trusted.
    """
    from bineval_dspy.suites.templates import load_template_suite

    path = Path(path)
    rows: list[SuiteRow] = []
    first_line: dict[str, str] = {}
    lines = load_template_suite(path) if path.suffix == ".toml" else ((f"{path}:{number}", obj) for number, obj in read_jsonl(path))
    for where, obj in lines:
        try:
            row = _suite_row(obj, where, extract, bare)
            if row.key in first_line:
                first = first_line[row.key]
                raise InputError(f"{where}: field 'key': duplicate key {row.key!r} (first at line {first.rsplit(':', 1)[1]})")
        except InputError as exc:
            if skipped is None:
                raise
            skipped.append(exc)
            continue
        first_line[row.key] = where
        rows.append(row)
    return rows


def _response_row(obj: dict[str, Any], where: str) -> ResponseRow:
    if "response" not in obj:
        raise InputError(f"{where}: missing field 'response'")
    if "key" not in obj and "prompt" not in obj:
        raise InputError(f"{where}: missing field 'key' or 'prompt'")
    fields: dict[str, Any] = {name: obj[name] for name in ("key", "prompt", "response") if name in obj}
    return _validated(ResponseRow, {"where": where, **fields}, where)


def load_responses(path: Path, skipped: list[InputError] | None = None) -> list[ResponseRow]:
    """Read responses (JSON Lines with ``response`` and ``key`` or ``prompt``; other fields are ignored).

    Invalid rows raise InputError, or go to ``skipped`` when given; malformed JSON always raises.
    """
    rows: list[ResponseRow] = []
    for number, obj in read_jsonl(path):
        try:
            rows.append(_response_row(obj, f"{path}:{number}"))
        except InputError as exc:
            if skipped is None:
                raise
            skipped.append(exc)
    return rows
