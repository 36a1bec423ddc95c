"""`bineval experiment CONFIG.toml`: arms side by side on one split of one data set, in one TOML file.

The file is an optimize run description (``mode``, ``lm``, ``[data]``, ``[program]``, ``[optimizer]``: see
``optimize.config``) plus ``[[arms]]``, each a named way of getting a program to score on the test split:

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
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import describe_validation_error, load_toml
from bineval_dspy.enforce.plan import Source
from bineval_dspy.lm.specs import LMTable
from bineval_dspy.optimize.config import ProgramConfig, RunConfig, resolve_paths
from bineval_dspy.optimize.settings import OptimizerSettings


class _Arm(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.+@-]+$", description="the arm's row in the table and its folder")

    @field_validator("name")
    @classmethod
    def _own_folder(cls, name: str) -> str:
        """``.`` or ``..`` as ``arms/NAME`` would be the arms' folder or the run directory itself."""
        if set(name) == {"."}:
            raise ValueError(f"{name!r} names no folder of its own; give the arm a name")
        return name


class ArmLM(LMTable):
    """An arm's own LM: its model, its servers and where the key for them is, each arm's key its own."""

    api_key_env: str | None = Field(default=None, min_length=1, description="the environment variable holding the API key for this LM's servers; without it an arm on servers other than the command's gets no key")


class OwnLMArm(_Arm):
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


class StartArm(OwnLMArm):
    kind: Literal["start"] = "start"
    program: dict[str, Any] = Field(default_factory=dict, description="[program] settings over the config's (e.g. judge options)")
    of: str | None = Field(default=None, description="an earlier arm whose program this arm runs (e.g. a fine-tuned one), instead of the start's")
    enforce: Source | None = Field(default=None, description="decode under each prompt's code-checkable constraints (extracted or annotated)")

    @model_validator(mode="after")
    def _one_source(self) -> StartArm:
        if self.of is not None and self.program:
            raise ValueError("give `of` (an earlier arm's program) or `program` settings, not both")
        return self


class BinEvalArm(_Arm):
    kind: Literal["bineval"] = "bineval"
    optimizer: dict[str, Any] = Field(default_factory=dict, description="settings over the config's [optimizer]")
    program: dict[str, Any] = Field(default_factory=dict, description="[program] settings over the config's")


class GepaArm(_Arm):
    kind: Literal["gepa"] = "gepa"
    calls_like: str | None = Field(default=None, description="an earlier arm whose optimization LM calls GEPA may spend")
    max_metric_calls: int | None = Field(default=None, ge=1)
    minibatch: int = Field(default=3, ge=1, description="GEPA's reflection_minibatch_size")

    @model_validator(mode="after")
    def _one_budget(self) -> GepaArm:
        if (self.calls_like is None) == (self.max_metric_calls is None):
            raise ValueError("give exactly one of calls_like and max_metric_calls")
        return self


class BestOfArm(OwnLMArm):
    kind: Literal["best_of"] = "best_of"
    n: int = Field(default=8, ge=2)
    of: str | None = Field(default=None, description="an earlier arm whose program is sampled (default: the start program)")
    temperature: float = Field(default=0.7, ge=0, le=2)
    stop_at_pass: bool = Field(default=False, description="draw no sample after the first that passes every check")
    enforce: Source | None = Field(default=None, description="draw every sample under the prompt's constraints (extracted or annotated)")
    per_round: int | None = Field(
        default=None, ge=1, description="samples decoded together (default: all n, or one at a time with stop_at_pass); the response does not depend on it"
    )


class SelectionDemosArm(_Arm):
    """What the optimizer can learn from selection: Best-of-``n`` on the train prompts, and the samples that pass
    every check offered to ``BinEvalOptimizer`` as demonstrations (up to ``demos``), each kept only on val gain."""

    kind: Literal["selection_demos"] = "selection_demos"
    n: int = Field(default=8, ge=2)
    temperature: float = Field(default=0.7, ge=0, le=2)
    demos: int = Field(default=2, ge=1)
    optimizer: dict[str, Any] = Field(default_factory=dict, description="settings over the config's [optimizer]")


class FinetuneArm(_Arm):
    """``BinEvalFinetune`` on the train split plus every row of ``train_data`` (a suite, e.g. a ``bineval suite
    synth`` file; in cross mode judge examples): LoRA weights trained on the samples the checklists approve, or on
    the reference verdicts; ``finetune`` holds its settings."""

    kind: Literal["finetune"] = "finetune"
    train_data: Path | None = None
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


class ProbeArm(_Arm):
    """A probe judge (cross mode): a head on the judge LM's hidden state (``judges.probe``), trained on the train and
    val rows' reference verdicts and every row of ``train_data`` (judge examples), its layer, strength and threshold
    chosen by grouped folds over them, never the test split."""

    kind: Literal["probe"] = "probe"
    train_data: Path | None = None
    train_data_rows: int | None = Field(default=None, ge=1, description="at most this many train_data rows (the first)")
    layers: list[int] | None = Field(default=None, description="candidate layers (default: every third, and the last)")
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


ArmConfig = Annotated[
    StartArm | BinEvalArm | GepaArm | BestOfArm | SelectionDemosArm | RefineArm | FinetuneArm | ProgramArm | ProbeArm,
    Field(discriminator="kind"),
]
GENERATION_ONLY = ("gepa", "best_of", "selection_demos", "refine")  # kinds that need a generator (self mode)
# the splits an arm of a kind needs (every other kind: train and val); the fixed programs learn nothing
_LEARNS_FROM: dict[str, tuple[str, ...]] = {"start": (), "program": (), "best_of": (), "refine": (), "finetune": ("train",)}


class ExperimentConfig(RunConfig):
    """A run config with arms; ``baseline`` names the arm every other is compared with (default: the first)."""

    name: str = Field(default="experiment", description="the table's title (default: the config file's name)")
    baseline: str | None = None
    resamples: int = Field(default=1000, ge=0, description="bootstrap resamples over test items")
    arms: list[ArmConfig] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _not_an_eval_matrix(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("prompts" in data or "lms" in data):
            raise ValueError(
                "[[prompts]] and [[lms]] are the retired `eval` format: write each prompt on each LM as an arm, "
                '[[arms]] name = "plain@smol", kind = "start", lm = "smollm2", program = {instructions = "..."}; '
                "suite goes in [data] with train = 0 and val = 0"
            )
        return data

    @model_validator(mode="after")
    def _arms_fit(self) -> ExperimentConfig:
        names = [arm.name for arm in self.arms]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"arm name {repeated[0]!r} is used twice")
        if self.baseline is not None and self.baseline not in names:
            raise ValueError(f"baseline {self.baseline!r} is not an arm")
        for index, arm in enumerate(self.arms):
            if arm.kind in GENERATION_ONLY and self.mode != "self":
                raise ValueError(f"arm {arm.name!r}: kind {arm.kind!r} needs a generator (mode = \"self\")")
            if arm.kind == "probe" and self.mode != "cross":
                raise ValueError(f"arm {arm.name!r}: kind \"probe\" trains a judge on reference verdicts (mode = \"cross\")")
            if isinstance(arm, BestOfArm | StartArm) and arm.of is not None and arm.of not in names[:index]:
                raise ValueError(f"arm {arm.name!r}: of {arm.of!r} is not an earlier arm")
            if isinstance(arm, BestOfArm | StartArm) and arm.of is not None and arm.lm is not None:
                raise ValueError(f"arm {arm.name!r}: of {arm.of!r} samples that arm's program on its own LM; leave lm out")
            if isinstance(arm, GepaArm) and arm.calls_like is not None and arm.calls_like not in names[:index]:
                raise ValueError(f"arm {arm.name!r}: calls_like {arm.calls_like!r} is not an earlier arm")
            if isinstance(arm, BinEvalArm | SelectionDemosArm):
                try:
                    arm_settings(self, arm)
                except ValidationError as exc:
                    raise ValueError(f"arm {arm.name!r}: optimizer {describe_validation_error(exc)}") from None
            if isinstance(arm, StartArm | BinEvalArm):
                try:
                    arm_program(self, arm)
                except ValidationError as exc:
                    raise ValueError(f"arm {arm.name!r}: program {describe_validation_error(exc)}") from None
        return self

    @property
    def baseline_arm(self) -> str:
        return self.baseline or self.arms[0].name

    @property
    def learns_from(self) -> tuple[str, ...]:
        return tuple(name for name in ("train", "val") if any(name in _LEARNS_FROM.get(arm.kind, ("train", "val")) for arm in self.arms))


def arm_settings(config: ExperimentConfig, arm: BinEvalArm | SelectionDemosArm) -> OptimizerSettings:
    """An optimizer arm's settings: its own over the config's ``[optimizer]`` (a selection arm: its demo budget)."""
    extra = {"demos": arm.demos} if isinstance(arm, SelectionDemosArm) else {}
    return OptimizerSettings(**{**config.optimizer.model_dump(exclude_unset=True), **arm.optimizer, **extra})


def arm_program(config: ExperimentConfig, arm: StartArm | BinEvalArm) -> ProgramConfig:
    """An arm's program settings: its own over the config's ``[program]`` (a judge's options merge key by key)."""
    base = config.program.model_dump()
    own = dict(arm.program)
    if isinstance(own.get("judge"), dict):
        own["judge"] = {**base["judge"], **own["judge"]}
    return ProgramConfig(**{**base, **own})


def arm_config(config: ExperimentConfig, arm: StartArm | BinEvalArm | SelectionDemosArm, run_dir: Path) -> ExperimentConfig:
    """The run description one arm runs: its program and optimizer settings over the config's, in its folder."""
    update: dict[str, Any] = {"run_dir": run_dir}
    if isinstance(arm, StartArm | BinEvalArm):
        update["program"] = arm_program(config, arm)
    if isinstance(arm, BinEvalArm | SelectionDemosArm):
        update["optimizer"] = arm_settings(config, arm)
    return config.model_copy(update=update)


def load_experiment(path: Path) -> ExperimentConfig:
    """Parse and validate an experiment config; relative paths are taken from its folder."""
    config = load_toml(path, ExperimentConfig)
    if "name" not in config.model_fields_set:
        config.name = path.stem
    if not config.data.split_files and config.data.test == 0:
        raise InputError(f"{path}: field 'data.test': an experiment scores its arms on a test split; give test > 0 or a file")
    for arm in config.arms:
        if isinstance(arm, FinetuneArm | ProbeArm) and arm.train_data is not None:
            arm.train_data = (path.parent / arm.train_data).resolve()
        if isinstance(arm, ProgramArm):
            arm.path = (path.parent / arm.path).resolve()
    return resolve_paths(config, path)
