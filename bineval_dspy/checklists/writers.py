"""The checklist-writer registry: ``make_writer(method, **params)`` for the CLI and for code that tunes writers.

Each method's params are checked by a pydantic model before the writer is built, so a bad name or value is one
``InputError`` line naming the field. A method's defaults live with its writer: params left out (or None) keep them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bineval_dspy.checklists.base import ChecklistWriter
from bineval_dspy.checklists.bineval import BinEvalWriter
from bineval_dspy.checklists.published import PUBLISHED
from bineval_dspy.checklists.qworld import QworldConfig, QworldWriter
from bineval_dspy.checklists.templates import TEMPLATES, TemplateFile, TemplateWriter, WriterTemplate
from bineval_dspy.checklists.tick import DEFAULT_LLM_QUESTIONS, TickWriter
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_model, load_toml, write_json
from bineval_dspy.core.registry import Registry
from bineval_dspy.lm.usage import Cost


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BinEvalParams(_Params):
    max_questions: int | None = Field(default=None, ge=1)
    questions_per_requirement: int | None = Field(default=None, ge=1, le=10)
    code_checks: bool | None = None


class TickParams(_Params):
    min_questions: int = Field(default=DEFAULT_LLM_QUESTIONS[0], ge=1)
    max_questions: int = Field(default=DEFAULT_LLM_QUESTIONS[1], ge=1)
    dimension: str | None = Field(default=None, min_length=1)
    code_checks: bool | None = None
    max_tokens: int | None = Field(default=None, ge=16)

    @model_validator(mode="after")
    def _ordered(self) -> TickParams:
        if self.min_questions > self.max_questions:
            raise ValueError(f"field 'max_questions': must be at least min_questions ({self.min_questions}), got {self.max_questions}")
        return self


class TemplateParams(_Params):
    """What every template writer takes: its inputs beside the task, and the usual caps."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    code_checks: bool | None = None
    max_questions: int | None = Field(default=None, ge=1)
    dimension: str | None = Field(default=None, min_length=1)
    definitions: dict[str, str] | None = None
    reference: str | None = None
    candidates: list[str] | None = None
    observations: list[str] | None = None


def _bineval(params: dict[str, Any]) -> ChecklistWriter:
    return BinEvalWriter(**_set(BinEvalParams.model_validate(params)))


def _tick(params: dict[str, Any]) -> ChecklistWriter:
    checked = _set(TickParams.model_validate(params))
    bounds = (checked.pop("min_questions", DEFAULT_LLM_QUESTIONS[0]), checked.pop("max_questions", DEFAULT_LLM_QUESTIONS[1]))
    return TickWriter(n_questions=bounds, **checked)


def _qworld(params: dict[str, Any]) -> ChecklistWriter:
    embed = params.pop("embed", None)
    if embed is not None and not callable(embed):
        raise InputError("qworld writer: field 'embed': must be a callable (texts -> vectors)")
    return QworldWriter(QworldConfig.model_validate({k: v for k, v in params.items() if v is not None}), embed=embed)


WRITERS: Registry[tuple[Callable[[dict[str, Any]], ChecklistWriter], tuple[str, ...]]] = Registry("checklist writer")
WRITERS.add("bineval", (_bineval, tuple(BinEvalParams.model_fields)))
WRITERS.add("tick", (_tick, tuple(TickParams.model_fields)))
WRITERS.add("qworld", (_qworld, (*QworldConfig.model_fields, "embed")))
for _published in PUBLISHED:
    TEMPLATES.add(_published.name, _published)
METHODS = (*WRITERS, *(template.name for template in PUBLISHED))  # the built-in writers and published templates


def methods() -> tuple[str, ...]:
    """Every method ``make_writer`` builds now: the built-in ones and every registered template."""
    return (*WRITERS, *TEMPLATES)


def register_template(template: WriterTemplate, *, replace: bool = False) -> WriterTemplate:
    """Make ``template`` a checklist method under its name; a name taken by another template needs ``replace``."""
    if template.name in WRITERS:
        raise InputError(f"template {template.name!r}: the name of a built-in writer; choose another")
    return TEMPLATES.add(template.name, template, replace=replace)


def load_templates(path: Path) -> list[str]:
    """Register every template of a TOML or JSON file (a bad field is one line naming file and field); their names."""
    loaded = load_model(path, TemplateFile) if path.suffix.lower() == ".json" else load_toml(path, TemplateFile)
    for template in loaded.templates:
        try:
            register_template(template)
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None
    return [t.name for t in loaded.templates]


def _template(name: str) -> Callable[[dict[str, Any]], ChecklistWriter]:
    def build(params: dict[str, Any]) -> ChecklistWriter:
        embed = params.pop("embed", None)
        if embed is not None and not callable(embed):
            raise InputError(f"{name} writer: field 'embed': must be a callable (texts -> vectors)")
        return TemplateWriter(TEMPLATES[name], embed=embed, **_set(TemplateParams.model_validate(params)))

    return build


def make_writer(method: str, **params: Any) -> ChecklistWriter:
    """A checklist writer for ``method`` (bineval, tick, qworld, or a registered template such as checkeval) with
    ``params`` (see each params model; qworld takes ``QworldConfig``'s fields and ``embed``, templates
    ``TemplateParams``' and ``embed``)."""
    if method in WRITERS:
        build, names = WRITERS[method]
    elif method in TEMPLATES:
        build, names = _template(method), (*TemplateParams.model_fields, "embed")
    else:
        raise InputError(f"method: unknown checklist method {method!r} (choose from {', '.join(methods())})")
    unknown = [name for name in params if name not in names]
    if unknown:
        raise InputError(f"{method} writer: field {unknown[0]!r}: not a parameter of this method (it takes {', '.join(names)})")
    try:
        return build(dict(params))
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        raise InputError(f"{method} writer: " + (f"field {field!r}: {message}" if field else message)) from None


def _set(params: BaseModel) -> dict[str, Any]:
    """The params given, None meaning the writer's default."""
    return {k: v for k, v in params.model_dump(exclude_unset=True).items() if v is not None}


class ChecklistUsage(BaseModel):
    """``CHECKLIST.usage.json``, beside a written checklist: what writing it cost (the checklist file itself stays a
    plain ``Checklist``, so every command reads it and its digest depends on the questions only)."""

    checklist: str = Field(description="the checklist file's name")
    method: str
    lm: str
    usage: Cost
    attempts: int = Field(default=1, ge=1, description="writer attempts, retries the checklist screen asked for included (all in usage)")


def usage_sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".usage.json")


def save_checklist_usage(path: Path, method: str, lm: str, usage: Cost, attempts: int = 1) -> Path:
    """Write the usage sidecar of the checklist at ``path``; returns the sidecar's path."""
    sidecar = usage_sidecar(path)
    write_json(sidecar, ChecklistUsage(checklist=path.name, method=method, lm=lm, usage=usage, attempts=attempts).model_dump(mode="json"))
    return sidecar
