"""TICK: an LM writes 2-8 instruction-specific yes/no questions, each targeting one distinct requirement.

``TickQuestionWriter`` writes the questions (hybrid checklists use it beside code checks); ``TickWriter`` makes a
checklist of them alone, as a ``ChecklistWriter``.
"""

from __future__ import annotations

import dspy
from pydantic import BaseModel, Field, create_model

from bineval_dspy.checklists.bineval import QuestionText
from bineval_dspy.checklists.routing import route_to_code
from bineval_dspy.core.errors import InputError, RunError
from bineval_dspy.core.schema import Checklist, Question

DEFAULT_LLM_QUESTIONS = (2, 8)


def _question_list(low: int, high: int) -> type[BaseModel]:
    """The output model; its bounds live on a model field because DSPy drops Annotated constraints on
    top-level output fields, and a field's bounds reach the JSON schema (and a local model's grammar)."""
    return create_model(
        "TickQuestionList",
        items=(list[QuestionText], Field(min_length=low, max_length=high)),
    )


TickQuestionList = _question_list(*DEFAULT_LLM_QUESTIONS)


class TickQuestions(dspy.Signature):
    """Write an evaluation checklist for responses to the instruction: yes/no questions, each targeting one
    distinct requirement of the instruction, explicit or implicit, that a good response must meet (its content,
    relevance, accuracy, completeness, tone). "Yes" must always mean the requirement is met. Do not ask about
    the constraints listed as code-checked: code verifies those exactly."""

    instruction: str = dspy.InputField(desc="the instruction a response must follow")
    code_checked: str = dspy.InputField(desc="constraints already verified by code, one per line")
    questions: TickQuestionList = dspy.OutputField()  # type: ignore[valid-type]


class TickQuestionWriter(dspy.Module):
    """TICK checklist writer: ``forward(instruction, code_checked) -> list[str]`` of yes/no questions.

    Repeated questions are dropped. An answer that cannot be parsed (or breaks the count bounds) gives no
    questions, counted in ``self.fallbacks``: the code checks still judge the response, and a made-up
    question would be worse than none.
    """

    def __init__(self, n_questions: tuple[int, int] = DEFAULT_LLM_QUESTIONS, max_tokens: int = 600) -> None:
        super().__init__()
        low, high = n_questions
        if not 1 <= low <= high:
            raise ValueError(f"n_questions must satisfy 1 <= low <= high, got {n_questions}")
        self.n_questions = (low, high)  # what the checklist screen holds the writer to
        signature = TickQuestions
        if (low, high) != DEFAULT_LLM_QUESTIONS:
            bounded = _question_list(low, high)
            signature = signature.delete("questions").append("questions", dspy.OutputField(), type_=bounded)
        self.write = dspy.Predict(signature)
        self.max_tokens = max_tokens
        self.fallbacks = 0

    def forward(self, instruction: str, code_checked: list[str]) -> list[str]:
        listed = "\n".join(code_checked) or "(none)"
        try:
            with dspy.context(adapter=dspy.JSONAdapter()):
                pred = self.write(instruction=instruction, code_checked=listed, config={"max_tokens": self.max_tokens})
        except dspy.utils.exceptions.AdapterParseError:
            self.fallbacks += 1
            return []
        return list(dict.fromkeys(q.strip() for q in pred.questions.items))


DEFAULT_DIMENSION = "instruction-following"


class TickWriter(dspy.Module):
    """TICK as a standalone ``ChecklistWriter``: ``forward(task, dimensions) -> Checklist`` of 2-8 (``n_questions``)
    instruction-specific questions, each targeting one distinct explicit or implicit requirement of the task.

    The questions come from one ``TickQuestionWriter`` call, all in the one given dimension or ``dimension``. With
    several dimensions there is one call per dimension, the instruction followed by a line naming the dimension, so
    each question belongs to the dimension it was asked for. An unparseable answer gives no questions (counted in
    ``self.fallbacks``); a task left with none raises ``RunError``: a made-up question would be worse. With
    ``code_checks`` questions a grounded code check answers exactly are marked with its verifier, as in BinEval.
    """

    def __init__(
        self,
        n_questions: tuple[int, int] = DEFAULT_LLM_QUESTIONS,
        dimension: str = DEFAULT_DIMENSION,
        code_checks: bool = True,
        max_tokens: int = 600,
    ) -> None:
        super().__init__()
        if not dimension.strip():
            raise ValueError("dimension must not be empty")
        self.write = TickQuestionWriter(n_questions, max_tokens=max_tokens)
        self.dimension = dimension.strip().lower()
        self.code_checks = code_checks

    @property
    def fallbacks(self) -> int:
        """Answers that could not be parsed (each gave no questions)."""
        return self.write.fallbacks

    def forward(self, task: str, dimensions: list[str] | None = None) -> Checklist:
        if not task or not task.strip():
            raise InputError("task: the task description is empty")
        dims = list(dict.fromkeys(d.strip().lower() for d in (dimensions or []) if d.strip())) or [self.dimension]
        questions: list[Question] = []
        seen: set[str] = set()
        for dim in dims:
            instruction = task if len(dims) == 1 else f"{task}\n\nWrite questions about this aspect only: {dim}."
            for text in self.write(instruction=instruction, code_checked=[]):
                if text.lower() not in seen:
                    seen.add(text.lower())
                    questions.append(Question(text=text, dimension=dim))
        if not questions:
            raise RunError(f"tick: the LM gave no usable questions ({self.fallbacks} unparseable answer(s))")
        checklist = Checklist.of(task, dims, questions)
        return route_to_code(checklist) if self.code_checks else checklist
