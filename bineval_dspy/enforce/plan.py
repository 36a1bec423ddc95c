"""One prompt's constraints as the decoder will treat them: each enforced (and how), or named with the reason it
is not (no enforcement exists, it conflicts with an earlier one, its kwargs are refused), and the merged spec."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.enforce.rules import HOW
from bineval_dspy.enforce.steering import Steering

Source = Literal["annotated", "extracted"]  # the suite's instruction ids, or what the extractor finds in the prompt


class Decision(BaseModel):
    """One constraint of a prompt and what the decoder does with it."""

    model_config = ConfigDict(extra="forbid")

    instruction_id: str
    kwargs: dict[str, Any] = Field(default_factory=dict)
    status: Literal["enforced", "unenforceable", "conflict", "invalid"]
    how: HOW | None = None
    reason: str = ""


class Plan(BaseModel):
    """Every constraint of one prompt, decided, and the Steering that enforces the enforced ones."""

    model_config = ConfigDict(extra="forbid")

    source: Source
    decisions: list[Decision] = Field(default_factory=list)
    steering: Steering = Field(default_factory=Steering)

    @property
    def enforced(self) -> list[Decision]:
        return [d for d in self.decisions if d.status == "enforced"]

    @property
    def steers(self) -> bool:
        """Whether decoding changes at all."""
        return self.steering != Steering()
