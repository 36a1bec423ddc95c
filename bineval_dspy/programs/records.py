"""What ``bineval generate`` writes per suite row, typed: read back by resume, ``show``, ``report`` and ``verify``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from bineval_dspy.enforce.plan import Decision, Source
from bineval_dspy.enforce.summary import EnforcementSummary as EnforcementSummary  # where it lived before
from bineval_dspy.lm.usage import Cost


class CheckRecord(BaseModel):
    """One STICK check of the response: its question, verdict and the judge that gave it."""

    question: str
    dimension: str
    answer: Literal["yes", "no", "unanswered"]
    judge: str = ""
    explanation: str = ""


class Selection(BaseModel):
    """Best-of-N: every sample asked for (its rollout, response, score and whether it passed every check, or the
    error of its failed call) and the index of the chosen one; with ``stop_at_pass`` none after the first that passed."""

    n: int = Field(ge=2)
    candidates: list[dict[str, Any]]
    chosen: int = Field(ge=0)
    stop_at_pass: bool = False

    @property
    def drawn(self) -> list[dict[str, Any]]:
        """The samples drawn: a sample whose call failed was never drawn, and is asked for again on a rerun."""
        return [c for c in self.candidates if "error" not in c]

    @property
    def failed(self) -> int:
        """Samples whose call failed: the row is not finished while any is."""
        return len(self.candidates) - len(self.drawn)


class SelectionStats(BaseModel):
    """What Best-of-N bought over a set of prompts: samples drawn, pass@k and how often the pick was a pass.

    ``pass_at[k - 1]`` is the share of prompts with a passing sample among the first k drawn (one draw per prompt,
    not the combinatorial estimate: stop-at-pass leaves nothing after the first pass to count). ``efficiency`` is
    the share whose chosen sample passed over pass@N: below 1 when the checklist picked a failing sample though a
    passing one was drawn. A sample whose call failed was not drawn: it counts in ``failed_samples`` only."""

    n: int
    prompts: int
    stop_at_pass: bool
    mean_samples: float
    pass_at: list[float]
    efficiency: float | None
    failed_samples: int = 0

    @classmethod
    def of(cls, selections: list[Selection]) -> SelectionStats | None:
        if not selections:
            return None
        n = max(s.n for s in selections)
        first_pass = [next((i for i, c in enumerate(s.drawn) if c.get("passed")), None) for s in selections]
        pass_at = [sum(i is not None and i < k for i in first_pass) / len(selections) for k in range(1, n + 1)]
        chosen = sum(bool(s.candidates[s.chosen].get("passed")) for s in selections) / len(selections)
        return cls(
            n=n, prompts=len(selections), stop_at_pass=all(s.stop_at_pass for s in selections),
            mean_samples=sum(len(s.drawn) for s in selections) / len(selections), pass_at=pass_at,
            efficiency=chosen / pass_at[-1] if pass_at[-1] else None, failed_samples=sum(s.failed for s in selections),
        )

    def text(self) -> str:
        """One line: samples per prompt, pass@1, pass@N and the efficiency (and the failed samples, when any)."""
        stop = ", stopping at the first pass" if self.stop_at_pass else ""
        efficiency = "n/a" if self.efficiency is None else f"{self.efficiency:.2f}"
        failed = f"; {self.failed_samples} failed sample(s) not counted" if self.failed_samples else ""
        return (
            f"{self.mean_samples:.2f} of {self.n} samples per prompt{stop}; pass@1 {self.pass_at[0]:.3f}, "
            f"pass@{self.n} {self.pass_at[-1]:.3f}; selection efficiency {efficiency} ({self.prompts} prompts){failed}"
        )


class Refinement(BaseModel):
    """Self-refinement: the score before and after, and one record per revision round."""

    max_iterations: int = Field(ge=1)
    initial_score: float | None
    final_score: float | None
    iterations: list[dict[str, Any]]


class Enforced(BaseModel):
    """What decoding was asked to guarantee for one response, and whether it held: every constraint with its
    decision (enforced and how, or why not) and, for the enforced ones, the verifier's verdict on the response
    (enforcement is never taken on trust)."""

    source: Source
    decisions: list[Decision]
    held: dict[str, bool] = Field(default_factory=dict)  # enforced instruction id -> its check passed

    @property
    def broken(self) -> list[str]:
        """Enforced ids whose check failed on the response."""
        return [i for i, ok in self.held.items() if not ok]


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
    enforcement: Enforced | None = None
    usage: Cost | None = None
    variables: dict[str, str] | None = None  # a template suite's row: the values that filled the prompt

    @model_serializer(mode="wrap")
    def _unset_left_out(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in ("checks", "selection", "refinement", "enforcement", "usage", "variables"):
                if data.get(name) is None:
                    data.pop(name, None)
            if self.checks is None and data.get("score") is None:
                data.pop("score", None)  # a plain generation has no score; a STICK one keeps a None score
        return data
