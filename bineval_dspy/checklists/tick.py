"""TICK: an LM writes 2-8 instruction-specific yes/no questions, each targeting one distinct requirement."""

from __future__ import annotations

import dspy
from pydantic import BaseModel, Field, create_model

from bineval_dspy.checklists.bineval import QuestionText

DEFAULT_LLM_QUESTIONS = (2, 8)


def _question_list(low: int, high: int) -> type[BaseModel]:
    """The output model; its bounds live on a model field because DSPy drops Annotated constraints on
    top-level output fields, and a field's bounds reach the JSON schema (and a local model's grammar)."""
    return create_model(
        "TickQuestionList",
        items=(list[QuestionText], Field(min_length=low, max_length=high)),  # type: ignore[valid-type]
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
