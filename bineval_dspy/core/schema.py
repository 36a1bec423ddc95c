"""The data model: questions, checklists, verdicts and scorecards (pydantic, JSON round-trip)."""

from __future__ import annotations

import hashlib
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_serializer, model_validator

Answer = Literal["yes", "no", "unanswered"]


def stable_id(*parts: str) -> str:
    """A short id that depends only on content, so regenerated checklists keep their ids."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return digest[:10]


MAX_WEIGHT = 1e6  # a question's weight at most: weights are relative, and sums of larger ones can overflow


class Question(BaseModel):
    """One atomic yes/no question.

    A positive ``weight`` (the usual case) is a requirement: "yes" means it is satisfied. A negative weight is a
    criterion to penalize (Qworld's negative criteria): the question asks whether the penalized thing is present,
    so "yes" means it is, and that verdict lowers the score. Code verifiers answer "is the constraint met", so a
    question a verifier answers must have a positive weight.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = ""
    text: str
    dimension: str
    weight: float = Field(default=1.0, description="importance; negative: a criterion to penalize when answered yes")
    no_example: str = Field(default="", description="a one-line example of what a 'no' looks like")
    verifier: str | None = Field(default=None, description="instruction id of a code verifier, if any")
    verifier_kwargs: dict[str, Any] | None = None
    lineage: dict[str, str] = Field(
        default_factory=dict, description="where the question came from (requirement, scenario, perspective)"
    )

    @field_validator("text", "dimension")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("weight")
    @classmethod
    def _weight_not_zero(cls, value: float) -> float:
        if value == 0 or not math.isfinite(value) or abs(value) > MAX_WEIGHT:  # a sum of 1e308s overflows to no score
            raise ValueError(
                f"must be a number from -{MAX_WEIGHT:g} to {MAX_WEIGHT:g}, not 0: greater than 0 for a requirement, less than 0 for "
                "a criterion to penalize"
            )
        return value

    @model_validator(mode="after")
    def _fill_id(self) -> Question:
        if self.verifier is not None and self.weight < 0:
            raise ValueError("weight: a code-checked question needs a positive weight (code answers 'is it met')")
        if not self.id:
            self.id = "q-" + stable_id(self.dimension, self.text)
        return self


class Checklist(BaseModel):
    """A task and the questions that judge outputs of that task, grouped by dimension. ``dimensions`` may be left out
    (then taken from the questions, in their order); when given, a question naming another dimension is an error, as
    a misspelt dimension would otherwise start a dimension of its own. Writers build theirs with ``of``."""

    model_config = ConfigDict(extra="forbid")

    task: str
    dimensions: list[str] = Field(default_factory=list)
    questions: list[Question]

    @classmethod
    def of(cls, task: str, dimensions: list[str], questions: list[Question]) -> Checklist:
        """A written checklist: ``dimensions`` first, then any other dimension its questions name, in their order."""
        return cls(task=task, dimensions=list(dict.fromkeys([*dimensions, *(q.dimension for q in questions)])), questions=questions)

    @field_validator("task")
    @classmethod
    def _task_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Checklist:
        if not self.questions:
            raise ValueError("questions: a checklist needs at least one question")
        ids = [q.id for q in self.questions]
        duplicated = sorted({i for i in ids if ids.count(i) > 1})
        if duplicated:
            raise ValueError(f"questions: duplicate ids {', '.join(duplicated)}")
        if not self.dimensions:
            self.dimensions = list(dict.fromkeys(q.dimension for q in self.questions))
        for k, q in enumerate(self.questions):
            if q.dimension not in self.dimensions:
                raise ValueError(f"questions.{k}.dimension: {q.dimension!r} is not one of the dimensions {self.dimensions}; add it or leave 'dimensions' out")
        return self

    def by_dimension(self) -> dict[str, list[Question]]:
        """Questions grouped by dimension, in dimension order; empty dimensions omitted."""
        groups = {d: [q for q in self.questions if q.dimension == d] for d in self.dimensions}
        return {d: qs for d, qs in groups.items() if qs}


class Verdict(BaseModel):
    """The answer to one question about one output, with the reason and who gave it.

    ``question`` and ``dimension`` are filled in when verdicts are scored, so a saved verdict explains itself.
    """

    question_id: str
    question: str | None = None
    dimension: str | None = None
    answer: Answer
    p_yes: float | None = Field(default=None, ge=0, le=1)
    p_yes_content_free: float | None = Field(default=None, ge=0, le=1)  # the prior P(yes) a calibrated p_yes divides out
    explanation: str = ""
    judge: str = Field(description="which judge answered: an LM model string, 'probe:<model>' (a head on its hidden state), 'code:<id>', or 'reference'")


Explanations = Literal["all", "failures", "none"]
VerdictFormat = Literal["json", "prefilled"]
Calibration = Literal["none", "content_free"]
Scoring = Literal["per_question", "batch"]


def _flag(help: str) -> dict[str, Any]:
    """A judge option's help, read by a command line that generates its options from the fields."""
    return {"help": help}


class JudgeFields(BaseModel):
    """How a ``BinaryJudge`` asks and scores: declared once, here. ``JudgeOptions`` validates them, ``JudgeSpec``
    records them with the LM, a meta-eval method and an optimizer config take them as TOML keys, and the CLI
    generates its flags from them (``cli.options.add_judge_options``)."""

    model_config = ConfigDict(extra="forbid")

    chain_of_thought: bool = Field(default=False, json_schema_extra=_flag("reason before answering"))
    samples: int = Field(default=1, ge=1, json_schema_extra=_flag("k-sample majority vote"))
    probability: bool = Field(default=False, json_schema_extra=_flag("score with P(yes) from logprobs"))
    verifier_mode: Literal["strict", "loose"] = Field(
        default="strict", json_schema_extra=_flag("code verifiers' grading: IFEval's strict, or loose (forgiving markup and case)"),
    )
    partial: bool = Field(default=False, json_schema_extra=_flag("score dimensions over answered questions only"))
    explanations: Explanations = Field(
        default="all",
        json_schema_extra=_flag("explain every verdict, only the 'no' ones, or none (fastest: the answer is decoded first)"),
    )
    calibration: Calibration = Field(
        default="none",
        json_schema_extra=_flag("content_free: divide out the LM's yes-bias per question, measured on a content-free output (reads logprobs)"),
    )
    scoring: Scoring = Field(
        default="per_question",
        json_schema_extra=_flag("one LM call per question (default), or all of an output's questions in one call (a missing verdict is unanswered)"),
    )  # fmt: skip
    verdict_format: VerdictFormat = Field(
        default="json",
        json_schema_extra=_flag("prefilled (embedded model): the verdict's JSON start is in the prompt, so the answer is the first token generated"),
    )  # fmt: skip

    def conflict(self) -> tuple[str, str] | None:
        """The first pair of options that cannot go together, as (field, why); None when they all can."""
        if self.verdict_format == "prefilled" and (self.chain_of_thought or self.scoring == "batch"):
            return "verdict_format", "the prefilled verdict format answers one question at its first token: no chain of thought, no batch scoring"
        if self.scoring == "batch" and self.chain_of_thought:
            return "scoring", "batch scoring answers without chain of thought (one reasoning for many verdicts is no per-question reasoning)"
        if self.calibration != "none" and self.samples > 1:
            return "calibration", "calibration needs samples=1: a vote share is not the P(yes) the prior is measured in"
        return None


class JudgeOptions(JudgeFields):
    """Judge options that go together: the one place they are validated (``BinaryJudge`` builds one)."""

    @model_validator(mode="after")
    def _fit_together(self) -> JudgeOptions:
        if (conflict := self.conflict()) is not None:
            raise ValueError(f"`{conflict[0]}`: {conflict[1]}")  # the option named: a command says its flag
        return self


def options_problem(exc: ValidationError) -> str:
    """A judge options error as one line naming the option (``scoring must be per_question or batch, got 'x'``)."""
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"])
    if error["type"] == "literal_error":
        return f"{field} must be {error['ctx']['expected'].replace(chr(39), '')}, got {error['input']!r}"
    if error["type"] == "greater_than_equal":
        return f"{field} must be at least {error['ctx']['ge']}"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{field}: {message}" if field else message


def checked_options(**options: Any) -> JudgeOptions:
    """Judge options from keywords, refused in one line naming the option when they cannot go together."""
    from bineval_dspy.core.errors import InputError

    try:
        return JudgeOptions(**options)
    except ValidationError as exc:
        raise InputError(f"judge options: {options_problem(exc)}") from None


_SPEC_ORDER = (
    "model", "chain_of_thought", "samples", "probability", "sample_temperature", "verifier_mode", "partial",
    "explanations", "calibration", "thresholds", "scoring", "verdict_format",
)  # the order records and fingerprints have always had: a resumed run compares them as text


class JudgeSpec(JudgeOptions):
    """Exactly which judge gave a set of verdicts: the LM's model string (a remote one names its server, an
    embedded one its file digest), the options, and the state an optimizer fits (P(yes) thresholds)."""

    model: str
    sample_temperature: float | None = None
    thresholds: dict[str, float] = Field(default_factory=dict)  # per-dimension P(yes) decision thresholds
    probe: str | None = None  # the digest of the trained head that answered the LM questions (``judges.probe``)

    @model_validator(mode="after")
    def _thresholds_are_probabilities(self) -> JudgeSpec:
        if self.thresholds and any(not 0 <= t <= 1 for t in self.thresholds.values()):
            raise ValueError(f"thresholds are probabilities in [0, 1], got {self.thresholds}")
        if self.thresholds and self.samples > 1:
            raise ValueError("thresholds need samples=1: a vote share is not the P(yes) they are measured in")
        return self

    def options(self) -> JudgeOptions:
        """The options alone, without the LM and the fitted state."""
        return JudgeOptions(**self.model_dump(include=set(JudgeFields.model_fields)))

    @model_serializer(mode="wrap")
    def _added_options_at_default_left_out(self, handler: Any) -> dict[str, Any]:
        """Options added after the first runs are left out at their defaults, so earlier fingerprints and records
        stay what they were."""
        data = handler(self)
        if data.get("verdict_format") == "json":
            del data["verdict_format"]
        if data.get("probe") is None:
            data.pop("probe", None)
        ordered = {key: data[key] for key in _SPEC_ORDER if key in data}
        return {**ordered, **{key: value for key, value in data.items() if key not in ordered}}  # a new option: after them


class Scorecard(BaseModel):
    """Per-dimension and overall scores for one output, with every verdict behind them.

    A score is the weighted fraction of met criteria over a dimension's questions (a "yes", or a "no" for a
    negative-weight question; see ``core.scoring.weighted_yes_fraction``). An unanswered question is never a
    yes: a dimension with one has no score (``None``), and neither has ``overall``, unless the card was scored
    with ``partial=True`` (then over the answered questions only, and ``partial`` says so).
    """

    dimension_scores: dict[str, float | None]
    overall: float | None
    rescaled: dict[str, float | None] = Field(default_factory=dict)
    scale: tuple[float, float] = (1.0, 5.0)
    unanswered: int = 0
    unanswered_by_dimension: dict[str, int] = Field(default_factory=dict)
    partial: bool = False
    verdicts: list[Verdict]
    judge: JudgeSpec | None = None

    @field_validator("overall")
    @classmethod
    def _a_share(cls, value: float | None) -> float | None:
        """A score is a weighted fraction: NaN, infinity or a number outside [0, 1] is an edited or corrupt card,
        refused where it is read (a NaN was read as "no difference", so it passed `compare --fail-on-regression`)."""
        if value is not None and not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ValueError(f"a score is a fraction from 0 to 1, not {value!r}")
        return value

    @field_validator("dimension_scores")
    @classmethod
    def _shares(cls, value: dict[str, float | None]) -> dict[str, float | None]:
        for score in value.values():
            cls._a_share(score)
        return value

    @property
    def complete(self) -> bool:
        """Every question answered: the only kind of card a default score rests on."""
        return self.unanswered == 0
