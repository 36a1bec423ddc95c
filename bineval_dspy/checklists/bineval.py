"""BinEval checklist generation: task -> requirements (step 1) -> atomic yes/no questions (step 2).

The meta-prompt is task-agnostic: only the task description and the dimension list change.
When no dimensions are given, step 1 names them from the task.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import dspy
from pydantic import BaseModel, Field, StringConstraints, create_model

from bineval_dspy.checklists.routing import route_to_code
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import Checklist, Question

ShortText = Annotated[str, StringConstraints(min_length=15, max_length=140)]
# A question must read as one: an auxiliary verb first, a question mark last. The pattern reaches
# the JSON schema, so grammar-constrained local models cannot write statements instead.
QuestionText = Annotated[
    str, StringConstraints(pattern=r"^(Does|Do|Is|Are|Was|Were|Has|Have|Can|Did|Will) [^?\"\\]{10,140}[?]$")
]
DimensionName = Annotated[str, StringConstraints(min_length=2, max_length=30)]


class QuestionDraft(BaseModel):
    """One yes/no question and an example of an output that fails it."""

    question: QuestionText = Field(description="a yes/no question; 'yes' means the requirement is met")
    no_example: ShortText = Field(description="one line showing what an output that fails looks like")


DEFAULT_QUESTIONS_PER_REQUIREMENT = 3


class QuestionDrafts(BaseModel):
    """The yes/no questions for this requirement."""

    # shown to the LM as JSON schema: the length bounds live on the field so they reach it

    items: list[QuestionDraft] = Field(min_length=1, max_length=DEFAULT_QUESTIONS_PER_REQUIREMENT)


def _question_drafts(high: int) -> type[BaseModel]:
    """``QuestionDrafts`` with another upper bound (the docstring is kept: the LM sees it in the schema)."""
    return create_model(
        "QuestionDrafts", __doc__=QuestionDrafts.__doc__, items=(list[QuestionDraft], Field(min_length=1, max_length=high))
    )


class WriteRequirements(dspy.Signature):
    """Read the task and rewrite it as a complete list of explicit requirements that a good output must meet.

    Cover every quality the task asks for, one requirement per item, and tag each with the evaluation
    dimension it belongs to."""

    task: str = dspy.InputField(desc="the task whose outputs will be evaluated")
    dimensions: str = dspy.InputField(desc="the evaluation dimensions to use, or a request to choose them")


class WriteQuestions(dspy.Signature):
    """Turn one requirement into atomic yes/no questions that an evaluator answers about an output.

    "yes" must always mean the requirement is satisfied. Split a requirement that bundles several checks
    into separate questions. Each question checks one thing and can be answered from the output alone."""

    task: str = dspy.InputField(desc="the task whose outputs will be evaluated")
    requirement: str = dspy.InputField(desc="one requirement of the task")
    questions: QuestionDrafts = dspy.OutputField()


def _requirements_signature(dimensions: list[str]) -> type[dspy.Signature]:
    """Step 1's signature; given dimensions become an enum the LM must pick from."""
    dim_type = Literal[tuple(dimensions)] if dimensions else DimensionName

    class Requirement(BaseModel):
        requirement: ShortText
        dimension: dim_type  # type: ignore[valid-type]

    class Requirements(BaseModel):
        items: list[Requirement] = Field(min_length=1, max_length=8)

    return WriteRequirements.append(
        "requirements", dspy.OutputField(desc="explicit requirements, each tagged with a dimension"), type_=Requirements
    )


MAX_STEP_TOKENS = 600


class BinEvalWriter(dspy.Module):
    """BinEval's two-step meta-prompt as a DSPy module: ``forward(task, dimensions) -> Checklist``.

    Each question keeps the requirement it came from in ``lineage["requirement"]``. With ``code_checks`` (default)
    questions that a grounded check answers exactly are marked with its verifier, so the judge asks code, not the LM.
    ``questions_per_requirement`` bounds step 2's answer (its JSON schema, so a local model's grammar too).
    """

    def __init__(
        self, max_questions: int = 24, code_checks: bool = True, questions_per_requirement: int = DEFAULT_QUESTIONS_PER_REQUIREMENT
    ) -> None:
        super().__init__()
        if max_questions < 1 or questions_per_requirement < 1:
            raise ValueError("max_questions and questions_per_requirement must be at least 1")
        self.max_questions = max_questions
        self.code_checks = code_checks  # mark questions a grounded code check answers (``checklists.routing``)
        self.write_requirements = dspy.Predict(_requirements_signature([]))
        step2: type[dspy.Signature] = WriteQuestions
        if questions_per_requirement != DEFAULT_QUESTIONS_PER_REQUIREMENT:
            bounded = _question_drafts(questions_per_requirement)
            step2 = step2.delete("questions").append("questions", dspy.OutputField(), type_=bounded)
        self.write_questions = dspy.Predict(step2)
        self.fallbacks = 0

    def forward(self, task: str, dimensions: list[str] | None = None) -> Checklist:
        if not task or not task.strip():
            raise InputError("task: the task description is empty")
        dims = [d.strip().lower() for d in (dimensions or []) if d.strip()]
        step1 = self.write_requirements
        # Given dimensions change only this call's output type; the predictor (its LM, demos, instructions) stays.
        call: dict[str, Any] = {}
        if dims:
            call["signature"] = _requirements_signature(dims).with_instructions(step1.signature.instructions)
        asked = ", ".join(dims) if dims else "choose 2 to 5 short dimension names that fit the task"
        config = {"max_tokens": MAX_STEP_TOKENS}
        with dspy.context(adapter=dspy.JSONAdapter()):
            requirements = step1(task=task, dimensions=asked, config=config, **call).requirements.items
        questions: list[Question] = []
        seen: set[str] = set()
        for req in _unique(requirements):
            drafts = self._questions_for(task, req.requirement)
            for draft in drafts:
                key = draft.question.strip().lower()
                if key in seen:
                    continue
                seen.add(key)
                questions.append(
                    Question(
                        text=draft.question,
                        dimension=str(req.dimension).lower(),
                        no_example=draft.no_example,
                        lineage={"requirement": req.requirement},
                    )
                )
            if len(questions) >= self.max_questions:
                break
        order = dims or list(dict.fromkeys(q.dimension for q in questions))
        checklist = Checklist.of(task, order, questions[: self.max_questions])
        return route_to_code(checklist) if self.code_checks else checklist

    def _questions_for(self, task: str, requirement: str) -> list[QuestionDraft]:
        """Step 2 for one requirement; if the LM's answer cannot be parsed, the requirement itself
        becomes the question (counted in ``self.fallbacks``) rather than being lost."""
        try:
            with dspy.context(adapter=dspy.JSONAdapter()):
                return self.write_questions(task=task, requirement=requirement, config={"max_tokens": MAX_STEP_TOKENS}).questions.items
        except dspy.utils.exceptions.AdapterParseError:
            self.fallbacks += 1
            text = requirement.rstrip(".")
            return [QuestionDraft(question=f"Does the output meet this requirement: {text}?", no_example=f"An output that fails: {text}.")]


def _unique(requirements: list[Any]) -> list:
    """Drop requirements the LM repeated word for word (tiny models loop)."""
    seen: set[str] = set()
    kept = []
    for req in requirements:
        key = req.requirement.strip().lower()
        if key not in seen:
            seen.add(key)
            kept.append(req)
    return kept
