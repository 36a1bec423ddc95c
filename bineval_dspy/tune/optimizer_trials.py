"""Kind ``optimizer``: each trial is a ``bineval optimize`` run whose ``[optimizer]`` settings are the trial's parameters.

The run goes to the trial's ``run_dir`` (named by the parameters' digest), so a repeated parameter set resumes
the same fingerprinted run: a finished one costs no LM call, a killed one goes on from its last step. Pruning
needs no hook in the optimizer: a ``StoppingRule`` added last reports the best held-out score after every
iteration the other rules let go on, and stops the run when the pruner says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dspy
import optuna
from pydantic import BaseModel, ConfigDict, ValidationError

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import Fingerprint, file_digest
from bineval_dspy.core.jsonio import describe_validation_error
from bineval_dspy.lm import runtime
from bineval_dspy.lm.runtime import lm_identity
from bineval_dspy.lm.usage import Measurement, measuring
from bineval_dspy.optimize.audit import AUDIT_FILE, Audit
from bineval_dspy.optimize.config import RunConfig, build, load_config, run_fingerprint
from bineval_dspy.optimize.settings import OptimizerSettings
from bineval_dspy.programs.steer import PLAIN, SteeringSettings
from bineval_dspy.tune.config import Param
from bineval_dspy.tune.runners import Objective, TrialContext, TrialEnv, run_settings, trial_fingerprint

OBJECTIVES: Mapping[str, Objective] = {
    "val_score": Objective("held-out score of the best prompt (audit.best.val_score)", steps=True),
    "lm_calls": Objective("LM calls of the whole run, cache hits included"),
    "tokens": Objective("tokens of the whole run"),
    "prompt_chars": Objective("length of the best prompt: instructions and demonstrations"),
}
PRUNED = "pruned by bineval tune: held-out score behind the study's other trials"


STEERING_PARAMS = {
    "steering_enforce": "where the constraints come from: none, extracted or annotated",
    "steering_only": "enforce only these ids, families or hows (separated by spaces or commas; empty: every one)",
    "steering_exclude": "never enforce these ids, families, hows or rule kinds (as steering_only)",
    "steering_floor_tokens": "the most tokens a lower bound may add to max_tokens (negative: what it needs)",
}
"""Search-space names that set the generator's steering (``[program]``'s ``programs.steer.SteeringSettings``)
rather than an ``[optimizer]`` setting: a study chooses them by the held-out score as it chooses any other."""


def trial_steering(base: SteeringSettings, params: Mapping[str, Any]) -> SteeringSettings:
    """``base`` (the run config's steering) with a trial's steering parameters in place; ValidationError when they
    make no valid settings (limits without a source)."""
    values = base.model_dump()
    for name, value in params.items():
        field = name.removeprefix("steering_")
        if name not in STEERING_PARAMS:
            continue
        if field == "enforce":
            values["enforce"] = None if value == PLAIN else value
        elif field in ("only", "exclude"):
            values[field] = tuple(part for part in str(value).replace(",", " ").split() if part)
        else:
            values[field] = None if isinstance(value, int | float) and value < 0 else value
    if values["enforce"] is None:  # decoding plainly: nothing left to narrow
        values.update(only=(), exclude=(), floor_tokens=None)
    return SteeringSettings.model_validate(values)


class OptimizerRunSettings(BaseModel):
    """The ``[run]`` table of kind ``optimizer``: the ``bineval optimize`` config every trial starts from."""

    model_config = ConfigDict(extra="forbid")

    config: Path


class OptimizerTrialFingerprint(BaseModel):
    """What decides an optimizer trial besides its parameters: the run config's and the data's bytes and the LM
    (behind its API base)."""

    config: str
    data: str
    lm: str


class ReportToPruner:
    """A ``StoppingRule`` that reports the best held-out score per iteration; its stop leaves the run resumable."""

    def __init__(self, context: TrialContext) -> None:
        self.context = context
        self.pruned = False

    def reason(self, audit: Audit) -> str | None:
        step = audit.iterations[-1].iteration if audit.iterations else 0
        if self.context.report(step, audit.best.val_score):
            self.pruned = True
            return PRUNED
        return None


def held_out_curve(audit: Audit) -> list[tuple[int, float]]:
    """The best held-out score after each decided iteration: what the run reports, replayed from its audit."""
    best = audit.first_score
    curve = []
    for record in audit.iterations:
        if record.decision is None:
            continue
        if record.decision.accepted and record.val is not None:
            best = record.val.score
        curve.append((record.iteration, best))
    return curve


def run_values(audit: Audit) -> dict[str, float]:
    """Every objective of kind ``optimizer``, read from a finished run's audit."""
    return {
        "val_score": audit.best.val_score,
        "lm_calls": float(audit.usage.lm_calls),
        "tokens": float(audit.usage.tokens),
        "prompt_chars": float(audit.best.size()),
    }


class OptimizerRunner:
    """Trials of kind ``optimizer``; the LM (the run config's, or ``--lm``) is configured at the first trial."""

    objectives = OBJECTIVES

    def __init__(self, settings: OptimizerRunSettings, env: TrialEnv) -> None:
        self.path = (env.base / settings.config).resolve()
        if not self.path.is_file():
            raise InputError(f"{env.source}: field 'run.config': {self.path} is not a file")
        self.config: RunConfig = load_config(self.path)
        self.env = env
        self.lm_spec = env.lm_spec or self.config.lm
        source = "`lm`" if env.lm_spec else f"{self.path}: field 'lm' ="
        self.lm_options = env.lm_options.model_copy(update={"spec": self.lm_spec, "source": source})
        if self.lm_options.api_base is None and self.config.servers:  # the run config's [lm] servers, where --api-base names none
            self.lm_options = self.lm_options.model_copy(update={"api_base": self.config.servers[0], "replicas": self.config.servers[1:]})
        self._lm: dspy.LM | None = None

    def settings(self, params: Mapping[str, Any]) -> OptimizerSettings:
        """The run config's ``[optimizer]`` settings with ``params`` in place (unset ones keep their defaults)."""
        given = self.config.optimizer.model_dump(exclude_unset=True)
        return OptimizerSettings.model_validate({**given, **{k: v for k, v in params.items() if k not in STEERING_PARAMS}})

    def check(self, space: Mapping[str, Param]) -> None:
        self.env.check_priced(self.lm_spec, self.config.lesson_lm, self.config.reference.lm)
        fields = OptimizerSettings.model_fields
        steered = self.config.program.steered  # names are checked under a source, whichever the trial draws
        probe = steered if steered.enforce is not None else SteeringSettings(enforce="extracted")
        for name, param in space.items():
            if name not in fields and name not in STEERING_PARAMS:
                known = ", ".join([*fields, *STEERING_PARAMS])
                raise InputError(f"{self.env.source}: field 'space.{name}': not an [optimizer] setting nor a steering one; one of {known}")
            if name in STEERING_PARAMS and self.config.mode != "self":
                raise InputError(f"{self.env.source}: field 'space.{name}': steering is a generator's (mode = \"self\"), not {self.config.mode!r}")
            for value in param.examples():
                try:
                    self.settings({name: value})
                    steering = trial_steering(probe, {name: value})
                except ValidationError as exc:
                    raise InputError(f"{self.env.source}: field 'space.{name}': {value!r} is not a valid setting ({describe_validation_error(exc)})") from None
                if unknown := steering.unknown_name():
                    raise InputError(f"{self.env.source}: field 'space.{name}': {unknown!r} names no instruction id, family, how or rule kind")

    def fingerprint(self) -> Fingerprint:
        data = self.config.data.suite if self.config.mode == "self" else self.config.data.examples
        assert data is not None  # load_config requires it
        api_base = self.lm_options.api_base
        return trial_fingerprint(OptimizerTrialFingerprint(
            config=file_digest(self.path), data=file_digest(data), lm=f"{self.lm_spec} @ {api_base}" if api_base else self.lm_spec
        ))

    def __call__(self, params: dict[str, Any], context: TrialContext) -> dict[str, float]:
        program = self.config.program
        if STEERING_PARAMS.keys() & params.keys():  # else the config as written (its fingerprint unchanged)
            program = program.model_copy(update={"steering": trial_steering(program.steered, params)})
            program.enforce = program.steered.enforce
        config = self.config.model_copy(update={"optimizer": self.settings(params), "program": program, "run_dir": context.run_dir})
        student, optimizer, (train, val, _) = build(config, fingerprint=run_fingerprint(config, lm_identity(self._configure())))
        rule = ReportToPruner(context)
        optimizer.stopping = [*optimizer.stopping, rule]
        if self._reopen(context):
            raise optuna.TrialPruned("the recorded iterations of this parameter set are behind the other trials")
        measurement = Measurement()
        try:
            with measuring() as measurement:
                optimizer.compile(student, trainset=train, valset=val)
                audit = optimizer.audit
                assert audit is not None
        finally:
            context.charge(measurement.cost)
        for step, value in held_out_curve(audit):  # a natural stop consults no later rule: report its last steps
            context.report(step, value)
        if rule.pruned:
            raise optuna.TrialPruned(f"held-out score {audit.best.val_score:.3f} after iteration {len(audit.iterations)}")
        return run_values(audit)

    def _configure(self) -> dspy.LM:
        if self._lm is None:
            self._lm = runtime.configure(self.lm_options, self.env.lm_cache)
        return self._lm

    @staticmethod
    def _reopen(context: TrialContext) -> bool:
        """Report what an earlier run of these parameters recorded; True when that already makes the trial hopeless.

        A run an earlier trial pruned is reopened (its stop cleared), so this trial continues it under its own
        pruning decisions; a run that stopped by its own rules is a cached result and is left alone.
        """
        if not (context.run_dir / AUDIT_FILE).is_file():
            return False
        audit = Audit.load(context.run_dir)
        if audit.stopped not in (None, PRUNED):
            return False
        verdicts = [context.report(step, value) for step, value in held_out_curve(audit)]
        if verdicts and verdicts[-1]:
            return True
        if audit.stopped == PRUNED:
            audit.stopped = None
            audit.save(context.run_dir)
        return False


def optimizer_runner(table: dict[str, Any], env: TrialEnv) -> OptimizerRunner:
    """The ``RunnerFactory`` of kind ``optimizer``."""
    return OptimizerRunner(run_settings(OptimizerRunSettings, table, env.source), env)
