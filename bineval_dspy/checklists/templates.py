"""Template writers: a checklist method declared as prompt templates plus an output schema, not coded.

A ``WriterTemplate`` is one or more steps; each step is a prompt with placeholders (``{task}``, ``{dimensions}``,
``{dimension}``, ``{definition}``, ``{reference}``, ``{candidates}``, ``{observations}``, ``{questions}``: the
questions so far) and an output schema: ``plain`` questions, ``weighted`` ones (importance 1-100), ``categorized``
ones (the LM names each question's dimension), or ``keep`` (the numbers of the questions so far to keep: a filter).
``TemplateWriter`` runs the steps through one ``dspy.Predict`` each, with the JSON adapter, so the LM cache, usage
accounting and a local model's JSON grammar apply as for the built-in writers, and ``bineval checklist`` screens its
checklists the same way. ``checklists.writers`` registers them: ``register_template`` adds one by name from Python,
``load_templates`` from a TOML or JSON file, and ``make_writer`` builds any registered name.
"""

from __future__ import annotations

import string
from typing import Annotated, Any, Literal

import dspy
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model, model_validator

from bineval_dspy.checklists.bineval import DimensionName, QuestionText
from bineval_dspy.checklists.routing import route_to_code
from bineval_dspy.core.errors import InputError, RunError
from bineval_dspy.core.registry import Registry
from bineval_dspy.core.schema import Checklist, Question

Schema = Literal["plain", "weighted", "categorized", "keep"]
PLACEHOLDERS = ("task", "dimensions", "dimension", "definition", "reference", "candidates", "observations", "questions")
INPUTS = ("reference", "candidates", "observations")  # what a template may need beside the task
TemplateName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,39}$")]
DEFAULT_DIMENSION = "instruction-following"
MAX_WEIGHT = 100


class TemplateStep(BaseModel):
    """One LM call of a template writer (one per dimension when ``per_dimension``, or when several dimensions are
    asked of a step that does not let the LM name them)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(default="write", min_length=1)
    prompt: str = Field(min_length=1, description="the request, with {placeholders}; {{ and }} for literal braces")
    schema_: Schema = Field(default="plain", alias="schema")
    per_dimension: bool = False
    min_questions: int = Field(default=1, ge=1)
    max_questions: int = Field(default=8, ge=1)
    observations_per_call: int | None = Field(default=None, ge=1, description="split {observations} into calls of this many")
    max_tokens: int = Field(default=600, ge=16)

    @model_validator(mode="after")
    def _checked(self) -> TemplateStep:
        if self.min_questions > self.max_questions:
            raise ValueError(f"max_questions: must be at least min_questions ({self.min_questions})")
        unknown = [name for name in placeholders(self.prompt) if name not in PLACEHOLDERS]
        if unknown:
            raise ValueError(f"prompt: unknown placeholder {{{unknown[0]}}} (use {', '.join('{' + p + '}' for p in PLACEHOLDERS)})")
        return self


class WriterTemplate(BaseModel):
    """A checklist method by name: its steps in order, and how their questions are merged."""

    model_config = ConfigDict(extra="forbid")

    name: TemplateName
    description: str = ""
    instructions: str = Field(
        default="You write evaluation checklists: yes/no questions about an output, where 'yes' always means the output is good in that respect.",
        min_length=1,
    )
    steps: list[TemplateStep] = Field(min_length=1)
    merge_threshold: float | None = Field(default=None, gt=0, le=1, description="merge questions whose embeddings' cosine reaches this")
    max_questions: int = Field(default=24, ge=1)

    @model_validator(mode="after")
    def _first_writes(self) -> WriterTemplate:
        if self.steps[0].schema_ == "keep":
            raise ValueError("steps: the first step must write questions; a 'keep' step filters the questions before it")
        return self

    def needs(self) -> list[str]:
        """The inputs beside the task its prompts use (reference, candidates, observations)."""
        used = {name for step in self.steps for name in placeholders(step.prompt)}
        return [name for name in INPUTS if name in used]


class TemplateFile(BaseModel):
    """A file of template writers: ``[[templates]]`` tables in TOML, or ``{"templates": [...]}`` in JSON."""

    model_config = ConfigDict(extra="forbid")

    templates: list[WriterTemplate] = Field(min_length=1)


def placeholders(prompt: str) -> list[str]:
    """The placeholder names of a prompt, in order. Plain names only: a format spec, a conversion, an attribute or
    an index (``{task:d}``, ``{task!r}``, ``{task.__class__}``) is refused at load, never met at the first call."""
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(prompt) if name is not None]
    except ValueError as exc:
        raise ValueError(f"prompt: {exc} (write {{{{ and }}}} for literal braces)") from None
    for name, spec, conversion in fields:
        if spec or conversion or not name.isidentifier():
            written = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise ValueError(f"prompt: {{{written}}} is not a plain placeholder; write {{name}} (or {{{{ and }}}} for literal braces)")
    return [name for name, _, _ in fields]


TEMPLATES: Registry[WriterTemplate] = Registry("checklist template")


# -- the output schemas -------------------------------------------------------------------------------------------
class WeightedItem(BaseModel):
    question: QuestionText
    weight: int = Field(ge=1, le=MAX_WEIGHT, description="importance, 1 (minor) to 100 (essential)")


def _output_model(schema: Schema, low: int, high: int, dimensions: list[str]) -> type[BaseModel]:
    """The step's output model; bounds and the dimension enum live on fields, so they reach a local model's grammar."""
    item: Any
    if schema == "plain":
        item = QuestionText
    elif schema == "weighted":
        item = WeightedItem
    elif schema == "categorized":
        category = Literal[tuple(dimensions)] if dimensions else DimensionName
        item = create_model("CategorizedItem", question=(QuestionText, ...), category=(category, ...))  # type: ignore[arg-type]
    else:
        return create_model("KeptQuestions", __doc__="Numbers of the listed questions to keep.", items=(list[int], Field(min_length=1)))
    return create_model("WrittenQuestions", items=(list[item], Field(min_length=low, max_length=high)))


def _signature(template: WriterTemplate, step: TemplateStep, dimensions: list[str]) -> type[dspy.Signature]:
    model = _output_model(step.schema_, step.min_questions, step.max_questions, dimensions)
    fields = {
        "request": (str, dspy.InputField(desc="what to write, and from what")),
        "questions": (model, dspy.OutputField()),
    }
    return dspy.Signature(fields, template.instructions)


def _numbered(texts: list[str]) -> str:
    return "\n".join(f"{k}. {t}" for k, t in enumerate(texts, start=1)) or "(none)"


class TemplateWriter(dspy.Module):
    """A ``WriterTemplate`` as a ``ChecklistWriter``: ``forward(task, dimensions, reference=, candidates=,
    observations=) -> Checklist``. Inputs given to the constructor are used when ``forward`` gets none.

    Questions repeated word for word are dropped; with ``merge_threshold`` near-duplicates merge into the first
    (``core.embeddings.NearDuplicateIndex``), and a question's ``lineage["support"]`` counts what merged into it.
    A step answer that does not parse gives no questions (a filter's keeps them all), counted in ``fallbacks``; a
    checklist left with none raises ``RunError``. With ``code_checks`` grounded questions are marked for code.
    """

    def __init__(
        self,
        template: WriterTemplate,
        *,
        code_checks: bool = True,
        max_questions: int | None = None,
        dimension: str = DEFAULT_DIMENSION,
        definitions: dict[str, str] | None = None,
        reference: str | None = None,
        candidates: list[str] | None = None,
        observations: list[str] | None = None,
        embed: Any = None,
    ) -> None:
        super().__init__()
        self.template = template
        self.code_checks = code_checks
        self.max_questions = max_questions or template.max_questions
        self.dimension = dimension.strip().lower()
        self.definitions = {k.strip().lower(): v for k, v in (definitions or {}).items()}
        self.given: dict[str, Any] = {"reference": reference, "candidates": candidates, "observations": observations}
        self.embed = embed
        self.fallbacks = 0
        # one predictor per step, so an optimizer or a demo can target each; a call swaps in its dimension enum
        self.steps = [dspy.Predict(_signature(template, step, [])) for step in template.steps]

    def forward(
        self,
        task: str,
        dimensions: list[str] | None = None,
        *,
        reference: str | None = None,
        candidates: list[str] | None = None,
        observations: list[str] | None = None,
    ) -> Checklist:
        if not task or not task.strip():
            raise InputError("task: the task description is empty")
        dims = list(dict.fromkeys(d.strip().lower() for d in (dimensions or []) if d.strip())) or [self.dimension]
        inputs = self._inputs({"reference": reference, "candidates": candidates, "observations": observations})
        questions: list[Question] = []
        for step, predictor in zip(self.template.steps, self.steps):
            groups: list[str | None] = list(dims) if step.per_dimension or (len(dims) > 1 and step.schema_ != "categorized") else [None]
            for dim in groups:
                for chunk in _chunks(inputs.get("observations"), step.observations_per_call):
                    questions = self._step(step, predictor, task, dims, dim, {**inputs, "observations": chunk}, questions)
        order = {d: k for k, d in enumerate(dims)}  # grouped by dimension, each in the order written
        questions = sorted(self._merged(questions), key=lambda q: order.get(q.dimension, len(order)))[: self.max_questions]
        if not questions:
            raise RunError(f"{self.template.name}: the LM gave no usable questions ({self.fallbacks} unparseable answer(s))")
        checklist = Checklist.of(task, dims, questions)
        return route_to_code(checklist) if self.code_checks else checklist

    def _inputs(self, given: dict[str, Any]) -> dict[str, Any]:
        """Each input the template needs, from ``forward`` or else the constructor; a missing one is an InputError."""
        values = {name: given[name] if given[name] is not None else self.given[name] for name in INPUTS}
        for name in self.template.needs():
            if not values[name]:
                raise InputError(f"{self.template.name} writer: field {name!r}: this method's prompt needs it (--{name})")
        return values

    def _step(
        self, step: TemplateStep, predictor: dspy.Predict, task: str, dims: list[str], dim: str | None,
        inputs: dict[str, Any], questions: list[Question],
    ) -> list[Question]:
        """The questions after one call of ``step`` (for one dimension, or all when ``dim`` is None)."""
        mine = [q for q in questions if dim is None or q.dimension == dim]
        values = {
            "task": task,
            "dimensions": ", ".join(dims),
            "dimension": dim or dims[0],
            "definition": self.definitions.get(dim or dims[0], dim or dims[0]),
            "reference": inputs.get("reference") or "",
            "candidates": "\n\n".join(f"Response {k}:\n{c}" for k, c in enumerate(inputs.get("candidates") or [], start=1)),
            "observations": _numbered(list(inputs.get("observations") or [])),
            "questions": _numbered([q.text for q in mine]),
        }
        request = step.prompt.format(**values)
        if dim is not None and not step.per_dimension and "dimension" not in placeholders(step.prompt):
            request += f"\n\nWrite questions about this aspect only: {dim}."
        call: dict[str, Any] = {}
        if step.schema_ == "categorized" and dims:
            call["signature"] = _signature(self.template, step, dims).with_instructions(predictor.signature.instructions)
        try:
            with dspy.context(adapter=dspy.JSONAdapter()):
                items = predictor(request=request, config={"max_tokens": step.max_tokens}, **call).questions.items
        except dspy.utils.exceptions.AdapterParseError:
            self.fallbacks += 1
            return questions
        if step.schema_ == "keep":
            keep = {mine[n - 1].id for n in items if 1 <= n <= len(mine)}
            return [q for q in questions if q not in mine or q.id in keep] if keep else questions
        known = {q.text.strip().lower() for q in questions}
        added = list(questions)
        for item in items:
            text, weight, category = _item_fields(item)
            if text.strip().lower() in known:
                continue
            known.add(text.strip().lower())
            dimension = str(category).lower() if category else (dim or dims[0])
            lineage = {"method": self.template.name, "step": step.name}
            added.append(Question(text=text, dimension=dimension, weight=weight, lineage=lineage))
        return added

    def _merged(self, questions: list[Question]) -> list[Question]:
        """Near-duplicates merged into the first of them (within a dimension), each kept one's support counted."""
        if self.template.merge_threshold is None or len(questions) < 2:
            return questions
        from bineval_dspy.core.embeddings import NearDuplicateIndex

        kept: list[Question] = []
        support: list[int] = []
        indexes: dict[str, tuple[NearDuplicateIndex, list[int]]] = {}
        for question in questions:
            index, positions = indexes.setdefault(question.dimension, (NearDuplicateIndex(self.template.merge_threshold, embed=self.embed), []))
            found = index.duplicate_of(question.text)
            if found is not None:
                support[positions[found]] += 1
                continue
            index.keep(question.text)
            positions.append(len(kept))
            kept.append(question)
            support.append(1)
        return [q.model_copy(update={"lineage": {**q.lineage, "support": str(n)}}) for q, n in zip(kept, support)]


def _item_fields(item: Any) -> tuple[str, float, str | None]:
    """(question text, weight, category) of one written item of any schema."""
    if isinstance(item, str):
        return item.strip(), 1.0, None
    return item.question.strip(), float(getattr(item, "weight", 1)), getattr(item, "category", None)


def _chunks(observations: list[str] | None, size: int | None) -> list[list[str] | None]:
    """The observations in calls of ``size`` (all in one without a size; one call with none)."""
    if not observations or size is None:
        return [observations]
    return [observations[k : k + size] for k in range(0, len(observations), size)]
