"""The optimizer's settings as one typed model: the constructor, the TOML ``[optimizer]`` table and the audit share it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bineval_dspy.core.settings import added
from bineval_dspy.optimize.kinds import KINDS
from bineval_dspy.optimize.lessons import DEFAULT_THRESHOLD
from bineval_dspy.programs.steer import SteeringSettings


class OptimizerSettings(BaseModel):
    """Loop bounds, the bloat guard's thresholds and the stopping rules' parameters."""

    model_config = ConfigDict(extra="forbid")

    max_iterations: int = Field(default=4, ge=1, description="stop after this many iterations")
    patience: int = Field(default=2, ge=1, description="stop after this many rolled-back candidates in a row")
    min_delta: float = Field(default=0.01, ge=0, description="held-out gain a candidate needs to be kept")
    target_score: float | None = Field(default=None, description="stop once the held-out score reaches this")
    epsilon: float = Field(default=0.05, gt=0, description="cross-model: stop when every dimension gap is below")
    max_chars: int = Field(default=4000, ge=1, description="absolute prompt length budget")
    max_growth: float = Field(default=4.0, ge=1, description="length budget relative to the start prompt")
    min_allowance: int = Field(default=400, ge=0, description="the relative budget allows at least this growth")
    lessons_per_iteration: int = Field(default=3, ge=1)
    max_failures: int = Field(default=16, ge=1, description="failures sampled for note-taking per iteration")
    min_rule_share: float = added(
        "0.2", 0.5, ge=0, le=1,
        description="a failed verifier's rule becomes a lesson for every row only when at least this share of the train rows ask for it (rarer: those rows' own constraint)",
    )
    demos: int = Field(default=0, ge=0, description="demonstrations the optimizer may add (0: instruction edits only)")
    thresholds: bool = Field(default=False, description="cross-model: may fit the judge's per-dimension P(yes) thresholds")
    bloat_guard: bool = Field(default=True, description="off: keep every candidate (the paper's loop)")
    accept: Literal["min_delta", "significant"] = Field(
        default="min_delta",
        description="significant: also require the paired held-out gain's lower confidence bound above zero",
    )
    kinds: list[str] | None = added(
        "0.2", None, min_length=1, description="only these candidate kinds: instructions, demo, thresholds or a registered one (default: every kind the settings allow)"
    )
    steering: list[SteeringSettings] | None = added(
        "0.2", None, min_length=1,
        description='a generator\'s steering candidates ("none", "extracted", "annotated" or a table of enforce, only, exclude, floor_tokens), '
        "each scored on the held-out split before any prompt edit; the best the acceptance policy keeps over the program's own is used (default: the program's own)",
    )
    resamples: int = Field(default=1000, ge=0, description="bootstrap resamples for the gain's interval")
    confidence: float = Field(default=0.95, gt=0, lt=1, description="the interval's confidence level")
    dedup_threshold: float = Field(default=DEFAULT_THRESHOLD, gt=0, le=1, description="lesson merge cosine")
    max_unanswered: float = Field(
        default=0.2, ge=0, le=1, description="an evaluation with a larger share of unanswered verdicts stops the run"
    )
    seed: int = 0

    @field_validator("kinds")
    @classmethod
    def _registered_kinds(cls, value: list[str] | None) -> list[str] | None:
        unknown = [kind for kind in value or [] if kind not in KINDS]
        if unknown:
            raise ValueError(f"unknown candidate kind {unknown[0]!r} (choose from {', '.join(KINDS)})")
        return value

    @field_validator("steering")
    @classmethod
    def _distinct_steering(cls, value: list[SteeringSettings] | None) -> list[SteeringSettings] | None:
        labels = [candidate.label for candidate in value or []]
        repeated = next((label for label in labels if labels.count(label) > 1), None)
        if repeated is not None:
            raise ValueError(f"the candidate {repeated!r} is listed twice")
        return value
