"""The optimizer's audit trail as typed models: written after every step, read by resume, ``show`` and experiments."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field, model_validator

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_model, write_text_atomic
from bineval_dspy.lm.usage import Cost, total
from bineval_dspy.optimize.edits import Edit
from bineval_dspy.optimize.lessons import Failure, Lesson
from bineval_dspy.optimize.notes import Discarded
from bineval_dspy.optimize.settings import OptimizerSettings
from bineval_dspy.programs.state import ProgramState
from bineval_dspy.programs.steer import SteeringSettings
from bineval_dspy.runs.kinds import RUN_KINDS
from bineval_dspy.stats.bootstrap import Interval

AUDIT_FILE = "audit.json"


class Asked(BaseModel):
    """A checklist question an LM answered about an output (code-checked ones are regraded from the output)."""

    question_id: str
    question: str = ""
    answer: str


class ItemResult(BaseModel):
    """One item of an evaluation: an output (self-update) or a judged question (cross-model), with its group (the
    unit the bootstrap resamples: the example, or the instruction a question belongs to)."""

    id: str
    group: str
    score: float
    output: str | None = None  # self-update: the program's output (None: the program failed, ``error`` says why)
    error: str | None = None
    answer: str | None = None  # cross-model: the target's answer and the reference's
    reference: str | None = None
    p_yes: float | None = None  # cross-model: the target's P(yes), where it read one (AUROC ranks by it)
    asked: list[Asked] = Field(default_factory=list)  # self-update: the LM-answered questions' verdicts


class EvalSummary(BaseModel):
    """A program's results on one split: the score the guard compares, per dimension, and what went wrong;
    ``items`` keeps each item's score (and ``groups`` its group where that is not the item) for paired intervals."""

    score: float
    dimension_scores: dict[str, float] = Field(default_factory=dict)
    reference_dimension_scores: dict[str, float] = Field(default_factory=dict)
    dimension_gaps: dict[str, float] = Field(default_factory=dict)
    failures: int = 0
    errors: int = 0
    unanswered: int = 0
    answered: int = 0
    items: dict[str, float] = Field(default_factory=dict)
    groups: dict[str, str] = Field(default_factory=dict)


class Decision(BaseModel):
    """Whether a step's candidate was kept, and why (or why the run stopped there); ``gain`` is the held-out
    gain over the best so far with its paired bootstrap interval over held-out items."""

    accepted: bool
    reason: str
    gain: Interval | None = None


CandidateKind = str  # a proposer's kind, as ``optimize.proposers.PROPOSERS`` names it: instructions, demo, thresholds, ...


class Charged(BaseModel):
    """A record of LM work: its ``usage`` (calls, tokens, dollars), with ``lm_calls`` and ``tokens`` beside it as
    earlier audits wrote them (an audit written before ``usage`` existed is read with those two)."""

    usage: Cost = Field(default_factory=Cost)

    @model_validator(mode="before")
    @classmethod
    def _earlier_audit(cls, data: Any) -> Any:
        if isinstance(data, dict) and "usage" not in data and ("lm_calls" in data or "tokens" in data):
            data = {**data, "usage": {"lm_calls": data.get("lm_calls", 0), "tokens": data.get("tokens", 0)}}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def lm_calls(self) -> int:
        return self.usage.lm_calls

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tokens(self) -> int:
        return self.usage.tokens


class StartRecord(Charged, ProgramState):
    """The student as given: its state (instructions, demonstrations, thresholds) and held-out results."""

    prompt_chars: int
    val: EvalSummary


class BestRecord(ProgramState):
    """The best accepted program state so far (iteration 0: the start)."""

    val_score: float
    val: EvalSummary
    iteration: int = 0


class Skipped(BaseModel):
    """A lesson this iteration did not propose, and why (a few rows' own constraint, said already, rolled back)."""

    lesson_id: str
    text: str
    reason: str
    sources: list[str] = Field(default_factory=list)  # the failures it was drawn from


class IterationRecord(Charged):
    """One iteration; fields fill in step by step, so a resumed run knows which step to redo."""

    iteration: int
    kind: CandidateKind = "instructions"  # what the candidate changes: an instruction edit, a demo, thresholds
    train: EvalSummary | None = None
    failures: list[Failure] | None = None
    lessons_new: list[Lesson] | None = None
    lessons_after_dedup: list[str] | None = None
    lessons_discarded: list[Discarded] | None = None  # drafts that named no constraint or restated the response
    rule_lessons: int | None = None  # lessons that are a verifier's rule (the LM's draft was unusable)
    lessons_skipped: list[Skipped] | None = None  # lessons not proposed, each with its reason
    note_errors: int | None = None
    selected: list[str] | None = None
    edits: list[Edit] | None = None
    candidate: ProgramState | None = None  # the program scored on held-out: the best with this kind's change
    prompt_chars: int | None = None
    val: EvalSummary | None = None
    decision: Decision | None = None

    @property
    def outcome(self) -> str:
        """'accepted', 'rolled back', 'stopped' (ended before a candidate was scored) or 'in progress'."""
        if self.decision is None:
            return "in progress"
        if self.decision.accepted:
            return "accepted"
        return "rolled back" if self.val is not None else "stopped"


class SteeringTrial(Charged):
    """One steering candidate scored on the held-out split against the program's own steering, and the acceptance
    policy's verdict (``decision``, with the paired gain); no decision yet: not scored (a resumed run scores it)."""

    settings: SteeringSettings
    val: EvalSummary | None = None
    decision: Decision | None = None


class SteeringChoice(BaseModel):
    """The steering the run chose before its first prompt edit (``[optimizer] steering``): every candidate with its
    held-out score, the chosen one (the program's own when none was kept) and why; no reason yet: in progress."""

    own: SteeringSettings
    candidates: list[SteeringTrial]
    chosen: SteeringSettings | None = None
    reason: str | None = None

    @property
    def usage(self) -> Cost:
        return total(trial.usage for trial in self.candidates)

    @property
    def chosen_val(self) -> EvalSummary | None:
        """The held-out results of the chosen steering (None: not chosen yet)."""
        return next((t.val for t in self.candidates if t.settings == self.chosen and t.val is not None), None)


@RUN_KINDS.writes("optimizer-audit", spec=OptimizerSettings, legacy=({"mode", "start", "best"},))
class Audit(BaseModel):
    """Everything one optimizer run did; ``fingerprint`` records what decided its results (resume checks it)."""

    mode: Literal["self", "cross"]
    settings: OptimizerSettings
    fingerprint: dict[str, str] = Field(default_factory=dict)
    start: StartRecord
    best: BestRecord
    steering: SteeringChoice | None = None  # with ``[optimizer] steering``: the steering chosen before the iterations
    iterations: list[IterationRecord] = Field(default_factory=list)
    bank: list[Lesson] = Field(default_factory=list)
    stale: int = 0
    stopped: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def usage(self) -> Cost:
        """The whole run's cost: the start's evaluation and every iteration, over all the runs that resumed it."""
        chosen = self.steering.usage if self.steering is not None else Cost()
        return self.start.usage + chosen + total(record.usage for record in self.iterations)

    @property
    def first_score(self) -> float:
        """The held-out score the iterations start from: the start's, or that of the steering chosen before them."""
        chosen = self.steering.chosen_val if self.steering is not None else None
        return chosen.score if chosen is not None else self.start.val.score

    def save(self, run_dir: Path) -> None:
        """Write atomically: a kill never leaves a half-written audit."""
        run_dir.mkdir(parents=True, exist_ok=True)
        write_text_atomic(run_dir / AUDIT_FILE, self.model_dump_json(indent=2, exclude_none=True))

    @classmethod
    def load(cls, run_dir: Path) -> Audit:
        """Read a run directory's audit; a missing, malformed or foreign file is one located InputError."""
        path = run_dir / AUDIT_FILE
        if not path.is_file():
            raise InputError(f"{run_dir}: no {AUDIT_FILE} (not an optimize run directory?)")
        return load_model(path, cls)
