"""What ``bineval generate`` writes per suite row, typed: read back by resume, ``show``, ``report`` and ``verify``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from bineval_dspy.lm.usage import Cost


class CheckRecord(BaseModel):
    """One STICK check of the response: its question, verdict and the judge that gave it."""

    question: str
    dimension: str
    answer: Literal["yes", "no", "unanswered"]
    judge: str = ""
    explanation: str = ""


class Selection(BaseModel):
    """Best-of-N: every sample (its rollout, response and score, or its error) and the index of the chosen one."""

    n: int = Field(ge=2)
    candidates: list[dict[str, Any]]
    chosen: int = Field(ge=0)


class Refinement(BaseModel):
    """Self-refinement: the score before and after, and one record per revision round."""

    max_iterations: int = Field(ge=1)
    initial_score: float | None
    final_score: float | None
    iterations: list[dict[str, Any]]


class GenerationRecord(BaseModel):
    """One output line: ``key`` as the suite wrote it, ``prompt``, ``response``; with STICK the ``score`` and
    ``checks``, and ``selection`` and/or ``refinement``; ``usage`` once written. Unset parts are left out."""

    model_config = ConfigDict(extra="allow")  # fields of another version survive a resume's rewrite of the file

    key: int | str
    prompt: str
    response: str
    score: float | None = None
    checks: list[CheckRecord] | None = None
    selection: Selection | None = None
    refinement: Refinement | None = None
    usage: Cost | None = None

    @model_serializer(mode="wrap")
    def _unset_left_out(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in ("checks", "selection", "refinement", "usage"):
                if data.get(name) is None:
                    data.pop(name, None)
            if self.checks is None and data.get("score") is None:
                data.pop("score", None)  # a plain generation has no score; a STICK one keeps a None score
        return data
