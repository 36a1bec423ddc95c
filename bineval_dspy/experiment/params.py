"""The ``[[arms]]`` of an experiment config: one settings model per arm kind, and an arm's settings over the config's.

- ``start``: the program as ``[program]`` describes it (the usual baseline);
- ``bineval``: ``BinEvalOptimizer`` with ``[optimizer]``'s settings and the arm's own ``optimizer`` table over them
  (``bloat_guard = false``, ``accept = "significant"``, ``demos = 2`` ...);
- ``gepa`` (self mode): ``dspy.GEPA`` on the same metric, reflecting with the run's LM; ``calls_like = "ARM"`` gives
  it about as many LM calls as that arm's optimization spent, else ``max_metric_calls``;
- ``best_of`` and ``refine`` (self mode): the start program with STICK at generation time, ``n`` samples chosen by
  the row's checklist (the suite's code verifiers: an exact selector), or ``iterations`` rounds of self-refinement;
- ``finetune``: ``BinEvalFinetune``, LoRA weights trained on the train prompts' samples that pass every code check
  (``sft``) or on passing/failing pairs (``dpo``); in cross mode on the reference verdicts (a distilled judge); ``best_of`` with ``of = "ARM"`` samples that
  arm's program instead of the start;
- ``selection_demos`` (self mode): what the optimizer learns from selection: Best-of-``n`` on the train prompts,
  whose passing samples the optimizer may show as demonstrations, each kept only on held-out gain.

``start``, ``program``, ``best_of`` and ``refine`` arms may run on an LM of their own (``lm = "SPEC"`` or a table of
``spec``, ``api_base``, ``replicas`` and ``api_key_env``, the variable holding the key for those servers): prompts x
LMs side by side, while the config's ``lm`` answers the checklists' LM questions. The command's own key goes only to
the command's own servers: an arm on other servers gets no key unless its table names one. When no arm learns, ``data.train`` and ``data.val`` may be 0: every row is a test row.

Each model is the ``params`` of its kind's entry in ``experiment.arms.ARMS``, which config parsing reads, and
carries its kind's own checks and settings (``check_fits``, ``resolved``, ``run_config``); what several kinds share
is a mixin (``OwnLMArm``, ``OfArm``, ``OwnProgramArm``, ``OwnOptimizerArm``, ``TrainDataArm``), so no other place
names kinds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bineval_dspy.core.jsonio import describe_validation_error
from bineval_dspy.core.settings import added, optional, unrecorded
from bineval_dspy.enforce.plan import Source
from bineval_dspy.lm.specs import LMTable
from bineval_dspy.optimize.config import ProgramConfig, RunConfig
from bineval_dspy.optimize.settings import OptimizerSettings

Config = TypeVar("Config", bound=RunConfig)


class Arm(BaseModel):
    """What every arm has: a name (its row in the table and its folder) and its ``kind`` (each kind's model declares
    it as a literal: config parsing picks the model by it)."""

    model_config = ConfigDict(extra="forbid")
    if TYPE_CHECKING:
        kind: str

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.+@-]+$", description="the arm's row in the table and its folder")

    @field_validator("name")
    @classmethod
    def _own_folder(cls, name: str) -> str:
        """``.`` or ``..`` as ``arms/NAME`` would be the arms' folder or the run directory itself."""
        if set(name) == {"."}:
            raise ValueError(f"{name!r} names no folder of its own; give the arm a name")
        return name

    def check_fits(self, before: Sequence[str], config: RunConfig) -> None:
        """Refuse (``ValueError``) what the arm cannot be beside ``config`` and the arms ``before`` it. Mixins check
        their own part after their bases' (``super()`` first), so a kind's checks run in the order of its bases,
        last first."""

    def resolved(self, folder: Path) -> Self:
        """The arm with the paths it names taken from ``folder`` (the config file's); itself when it names none."""
        return self

    def run_config(self, config: Config, run_dir: Path) -> Config:
        """The run description the arm runs: the config's, its own settings over it (``settings_over``), in its folder."""
        return config.model_copy(update={"run_dir": run_dir, **self.settings_over(config)})

    def settings_over(self, config: RunConfig) -> dict[str, Any]:
        """The run description's fields the arm's own settings replace (none here; each mixin adds its own)."""
        return {}


class ArmLM(LMTable):
    """An arm's own LM: its model, its servers and where the key for them is, each arm's key its own."""

    api_key_env: str | None = Field(default=None, min_length=1, description="the environment variable holding the API key for this LM's servers; without it an arm on servers other than the command's gets no key")


class OwnLMArm(Arm):
    """An arm whose program may run on an LM of its own (the config's ``lm`` still judges)."""

    lm: ArmLM | None = Field(default=None, description="the LM this arm's program runs on (a spec, or a table of spec, api_base, replicas, api_key_env); default the config's lm")

    @model_validator(mode="before")
    @classmethod
    def _spec_alone(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("lm"), str):
            return {**data, "lm": {"spec": data["lm"]}}
        if isinstance(data, dict) and isinstance(data.get("lm"), dict) and "spec" not in data["lm"]:
            raise ValueError("lm.spec: an arm's lm table names its model")
        return data


class OfArm(OwnLMArm):
    """An arm that runs the start program or an earlier arm's (``of``: on that arm's LM, so none of its own), decoding
    under its prompts' constraints when ``enforce`` says so."""

    if TYPE_CHECKING:
        of: str | None
        enforce: Source | None

    def enforced(self) -> Source | None:
        """The constraints the arm decodes under (None: none)."""
        return self.enforce

    def check_fits(self, before: Sequence[str], config: RunConfig) -> None:
        super().check_fits(before, config)
        if self.of is not None and self.of not in before:
            raise ValueError(f"arm {self.name!r}: of {self.of!r} is not an earlier arm")
        if self.of is not None and self.lm is not None:
            raise ValueError(f"arm {self.name!r}: of {self.of!r} samples that arm's program on its own LM; leave lm out")


class OwnProgramArm(Arm):
    """An arm with ``program`` settings of its own over the config's ``[program]``."""

    if TYPE_CHECKING:
        program: dict[str, Any]

    def program_config(self, config: RunConfig) -> ProgramConfig:
        """The arm's program settings: its own over the config's ``[program]`` (a judge's options merge key by key)."""
        base = config.program.model_dump()
        own = dict(self.program)
        if isinstance(own.get("judge"), dict):
            own["judge"] = {**base["judge"], **own["judge"]}
        return ProgramConfig(**{**base, **own})

    def check_fits(self, before: Sequence[str], config: RunConfig) -> None:
        super().check_fits(before, config)
        try:
            self.program_config(config)
        except ValidationError as exc:
            raise ValueError(f"arm {self.name!r}: program {describe_validation_error(exc)}") from None

    def settings_over(self, config: RunConfig) -> dict[str, Any]:
        return {**super().settings_over(config), "program": self.program_config(config)}


class OwnOptimizerArm(Arm):
    """An optimizing arm: its own ``optimizer`` settings over the config's ``[optimizer]``."""

    if TYPE_CHECKING:
        optimizer: dict[str, Any]

    def optimizer_settings(self, config: RunConfig) -> OptimizerSettings:
        """The arm's optimizer settings: its own over the config's ``[optimizer]``, and those its kind sets."""
        return OptimizerSettings(**{**config.optimizer.model_dump(exclude_unset=True), **self.optimizer, **self.optimizer_fixed()})

    def optimizer_fixed(self) -> dict[str, Any]:
        """Optimizer settings the kind decides over the arm's own (none here)."""
        return {}

    def check_fits(self, before: Sequence[str], config: RunConfig) -> None:
        super().check_fits(before, config)
        try:
            self.optimizer_settings(config)
        except ValidationError as exc:
            raise ValueError(f"arm {self.name!r}: optimizer {describe_validation_error(exc)}") from None

    def settings_over(self, config: RunConfig) -> dict[str, Any]:
        return {**super().settings_over(config), "optimizer": self.optimizer_settings(config)}


class TrainDataArm(Arm):
    """An arm trained on the rows of a ``train_data`` file besides the splits (its path: from the config's folder)."""

    if TYPE_CHECKING:
        train_data: Path | None

    def resolved(self, folder: Path) -> Self:
        base = super().resolved(folder)
        return base if self.train_data is None else base.model_copy(update={"train_data": (folder / self.train_data).resolve()})


class StartArm(OwnProgramArm, OfArm):
    kind: Literal["start"] = "start"
    program: dict[str, Any] = Field(default_factory=dict, description="[program] settings over the config's (e.g. judge options)")
    of: str | None = Field(default=None, description="an earlier arm whose program this arm runs (e.g. a fine-tuned one), instead of the start's")
    enforce: Source | None = Field(default=None, description="decode under each prompt's code-checkable constraints (extracted or annotated)")

    @model_validator(mode="after")
    def _one_source(self) -> StartArm:
        if self.of is not None and self.program:
            raise ValueError("give `of` (an earlier arm's program) or `program` settings, not both")
        return self

    def enforced(self) -> Source | None:
        return self.enforce or self.program.get("enforce")


class BinEvalArm(OwnProgramArm, OwnOptimizerArm):
    kind: Literal["bineval"] = "bineval"
    optimizer: dict[str, Any] = Field(default_factory=dict, description="settings over the config's [optimizer]")
    program: dict[str, Any] = added("0.2", default_factory=dict, description="[program] settings over the config's")


class GepaArm(Arm):
    kind: Literal["gepa"] = "gepa"
    calls_like: str | None = Field(default=None, description="an earlier arm whose optimization LM calls GEPA may spend")
    max_metric_calls: int | None = Field(default=None, ge=1)
    minibatch: int = Field(default=3, ge=1, description="GEPA's reflection_minibatch_size")

    @model_validator(mode="after")
    def _one_budget(self) -> GepaArm:
        if (self.calls_like is None) == (self.max_metric_calls is None):
            raise ValueError("give exactly one of calls_like and max_metric_calls")
        return self

    def check_fits(self, before: Sequence[str], config: RunConfig) -> None:
        super().check_fits(before, config)
        if self.calls_like is not None and self.calls_like not in before:
            raise ValueError(f"arm {self.name!r}: calls_like {self.calls_like!r} is not an earlier arm")


class BestOfArm(OfArm):
    kind: Literal["best_of"] = "best_of"
    n: int = Field(default=8, ge=2)
    of: str | None = Field(default=None, description="an earlier arm whose program is sampled (default: the start program)")
    temperature: float = Field(default=0.7, ge=0, le=2)
    stop_at_pass: bool = Field(default=False, description="draw no sample after the first that passes every check")
    enforce: Source | None = Field(default=None, description="draw every sample under the prompt's constraints (extracted or annotated)")
    per_round: int | None = Field(
        default=None, ge=1, description="samples decoded together (default: all n, or one at a time with stop_at_pass); the response does not depend on it"
    )


class SelectionDemosArm(OwnOptimizerArm):
    """What the optimizer can learn from selection: Best-of-``n`` on the train prompts, and the samples that pass
    every check offered to ``BinEvalOptimizer`` as demonstrations (up to ``demos``), each kept only on val gain."""

    kind: Literal["selection_demos"] = "selection_demos"
    n: int = Field(default=8, ge=2)
    temperature: float = Field(default=0.7, ge=0, le=2)
    demos: int = Field(default=2, ge=1)
    optimizer: dict[str, Any] = Field(default_factory=dict, description="settings over the config's [optimizer]")

    def optimizer_fixed(self) -> dict[str, Any]:
        return {"demos": self.demos}  # its demo budget


class FinetuneArm(TrainDataArm):
    """``BinEvalFinetune`` on the train split plus every row of ``train_data`` (a suite, e.g. a ``bineval suite
    synth`` file; in cross mode judge examples): LoRA weights trained on the samples the checklists approve, or on
    the reference verdicts; ``finetune`` holds its settings."""

    kind: Literal["finetune"] = "finetune"
    train_data: Path | None = unrecorded(None)  # its bytes are fingerprinted, not where it lies
    train_data_rows: int | None = Field(default=None, ge=1, description="at most this many train_data rows (the first)")
    finetune: dict[str, Any] = Field(default_factory=dict, description="FinetuneSettings fields (method, samples, epochs ...)")

    @model_validator(mode="after")
    def _settings(self) -> FinetuneArm:
        from bineval_dspy.finetune.settings import FinetuneSettings

        FinetuneSettings(**self.finetune)
        return self


class ProgramArm(OwnLMArm):
    """A saved program (a ``program.json`` or its run folder, weights and all) scored on this experiment's test
    split as ``generate --program`` runs it: a transfer check on another suite, or an earlier run beside new arms."""

    kind: Literal["program"] = "program"
    path: Path

    def resolved(self, folder: Path) -> Self:
        return super().resolved(folder).model_copy(update={"path": (folder / self.path).resolve()})


class ProbeArm(TrainDataArm):
    """A probe judge (cross mode): a head on the judge LM's hidden state (``judges.probe``), trained on the train and
    val rows' reference verdicts and every row of ``train_data`` (judge examples), its layer, strength and threshold
    chosen by grouped folds over them, never the test split."""

    kind: Literal["probe"] = "probe"
    train_data: Path | None = unrecorded(None)  # its bytes are fingerprinted, not where it lies
    train_data_rows: int | None = Field(default=None, ge=1, description="at most this many train_data rows (the first)")
    layers: list[int] | None = Field(default=None, description="candidate layers (default: four over 40-75% of the depth, and the last)")
    strengths: list[float] = Field(default=[0.001, 0.003, 0.01, 0.03], min_length=1, description="candidate C (inverse L2 strength)")
    folds: int = Field(default=5, ge=2, description="grouped folds the candidates and the threshold are chosen on")

    @model_validator(mode="after")
    def _positive(self) -> ProbeArm:
        if any(not 0 < c < float("inf") for c in self.strengths):
            raise ValueError("strengths: each C is a positive number")
        return self


class RefineArm(OwnLMArm):
    kind: Literal["refine"] = "refine"
    iterations: int = Field(default=1, ge=1)


# -- what decides an optimizing arm's outcome (its fingerprint; ``experiment.arms`` keeps it beside the outcome) --
class ArmFingerprint(BaseModel):
    """What an optimizer arm adds to its optimizer's fingerprint: the experiment's shared settings (a digest) and
    the arm's own (those added later left out at their default, so older audits resume)."""

    experiment: str
    arm: BinEvalArm | SelectionDemosArm


class GepaFingerprint(BaseModel):
    """What decides a GEPA arm's program (its ``arm.json`` holds its fingerprint): the experiment, the arm, the budget."""

    experiment: str
    arm: GepaArm
    budget: int


class ProbeFingerprint(BaseModel):
    """What decides a probe arm's head: the experiment, the arm (not where its ``train_data`` lies) and the digests
    of its ``train_data``."""

    experiment: str
    arm: ProbeArm
    train_data: list[str]


class FinetuneFingerprint(BaseModel):
    """What a finetune arm adds to the run description's fingerprint: the arm (not where its ``train_data`` lies)
    and its ``train_data``'s bytes."""

    arm: FinetuneArm
    train_data: str | None = optional()
