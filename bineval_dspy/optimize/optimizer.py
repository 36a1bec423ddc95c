"""BinEvalOptimizer: prompt optimization from question-level failures or cross-model disagreements.

One iteration: evaluate the incumbent on the trainset (failures or disagreements) -> the iteration's ``Proposer``
makes a candidate (instruction edits from NoteTaker lessons merged in the LessonBank, a demonstration, or judge
thresholds) -> score the candidate on the held-out valset -> the acceptance policy (the bloat guard by default)
keeps it or rolls back to the best accepted state and retires the lessons that caused it; stopping rules end the
run. Every step is written to ``run_dir/audit.json`` (a typed ``Audit``), so an interrupted run resumes where it
stopped. Nothing is printed: progress bars only with ``progress=True``, messages on the ``bineval_dspy.optimize``
logger.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import dspy
from dspy.teleprompt import Teleprompter
from pydantic import BaseModel

from bineval_dspy.core.errors import RunError
from bineval_dspy.core.fingerprint import combined, digest, resume_check
from bineval_dspy.core.settings import fingerprint_of
from bineval_dspy.lm.budget import BudgetMeter
from bineval_dspy.lm.usage import Cost
from bineval_dspy.optimize.audit import (
    AUDIT_FILE,
    Audit,
    BestRecord,
    Decision,
    IterationRecord,
    StartRecord,
    SteeringChoice,
    SteeringTrial,
)
from bineval_dspy.optimize.edits import PromptUpdater
from bineval_dspy.optimize.feedback import Evaluation, FeedbackSource, SelfUpdateFeedback
from bineval_dspy.optimize.lessons import Failure, LessonBank
from bineval_dspy.optimize.notes import NoteTaker
from bineval_dspy.optimize.policies import AcceptancePolicy, StoppingRule, default_acceptance, default_stopping
from bineval_dspy.optimize.proposers import Proposer, Step, default_proposers
from bineval_dspy.optimize.settings import OptimizerSettings
from bineval_dspy.programs.generator import Generator, check_steerable
from bineval_dspy.programs.state import (
    PROGRAM_FILE,
    ProgramFile,
    ProgramState,
    instructions_of,
)
from bineval_dspy.programs.steer import SteeringSettings
from bineval_dspy.stats.bootstrap import Bootstrap, Interval

T = TypeVar("T")
MAX_STORED_TEXT = 2000
logger = logging.getLogger("bineval_dspy.optimize")


class CompileFingerprint(BaseModel):
    """What a compile adds to the caller's fingerprint: the mode, the settings (those added later left out at their
    default, so older audits resume), the student's instructions (a digest) and the examples' counts."""

    mode: str
    settings: OptimizerSettings
    student_instructions: str
    examples: str


class BinEvalOptimizer(Teleprompter):
    """Optimizes a program's instructions (and demonstrations, and a judge's thresholds) from BinEval feedback.

    ``metric`` decides the mode: a DSPy metric for generator prompts, best ``bineval_metric(judge, checklist_for)``
    (self-update: each failing question becomes a lesson; any metric returning a score, or a
    ``Prediction(score, feedback)``, works, its feedback then being the failure), or a ``FeedbackSource``
    such as ``CrossModelFeedback`` (a judge prompt on a target LM: disagreements with a reference). Settings come as
    an ``OptimizerSettings`` or as its fields in keyword arguments; ``acceptance``, ``stopping`` and ``proposers``
    replace what the settings imply. With the bloat guard (default) the returned program never scores below the
    student on the valset. A ``run_dir`` is resumed only by a run with the same fingerprint: the settings, the
    student's instructions and whatever the caller passes as ``fingerprint`` (data digest, LM). With a ``meter``,
    each step (an evaluation, the lessons, the edits) starts only when its budget lets it; otherwise the run stops
    with ``BudgetExhausted`` after the last finished step, saved in the audit, where a rerun goes on. After
    ``compile`` the typed ``audit`` and the ``lesson_bank`` are attributes of the optimizer.
    """

    def __init__(
        self,
        metric: Callable[..., Any] | FeedbackSource,
        *,
        settings: OptimizerSettings | None = None,
        note_taker: NoteTaker | None = None,
        updater: PromptUpdater | None = None,
        bank: LessonBank | None = None,
        acceptance: AcceptancePolicy | None = None,
        stopping: Sequence[StoppingRule] | None = None,
        proposers: Sequence[Proposer] | None = None,
        target_predictor: str | None = None,
        run_dir: str | Path | None = None,
        fingerprint: dict[str, str] | None = None,
        meter: BudgetMeter | None = None,
        threads: int = 1,
        progress: bool = False,
        **overrides: Any,
    ) -> None:
        super().__init__()
        base = settings or OptimizerSettings()
        if bank is not None and "dedup_threshold" not in overrides:
            overrides["dedup_threshold"] = bank.threshold
        unknown = sorted(set(overrides) - set(OptimizerSettings.model_fields))
        if unknown:
            raise TypeError(f"BinEvalOptimizer got unknown setting(s) {', '.join(unknown)}; see OptimizerSettings")
        self.settings = OptimizerSettings(**{**base.model_dump(), **overrides})
        if hasattr(metric, "evaluate"):
            self.feedback: FeedbackSource = metric  # type: ignore[assignment]
        elif callable(metric):
            self.feedback = SelfUpdateFeedback(metric, threads=threads)
        else:
            raise TypeError(f"metric must be a DSPy metric or a FeedbackSource, got {type(metric).__name__}")
        self.feedback.progress = progress
        self.progress = progress
        self.note_taker = note_taker or NoteTaker()
        self.updater = updater or PromptUpdater()
        self._bank_template = bank
        self.acceptance = acceptance or default_acceptance(self.settings)
        self.stopping = list(stopping) if stopping is not None else default_stopping(self.settings)
        self.proposers = list(proposers) if proposers is not None else default_proposers(self.settings, self.feedback.mode, self.note_taker, self.updater)
        if not self.proposers:
            raise ValueError(f"no candidate kind left: kinds {self.settings.kinds} with demos = {self.settings.demos}, thresholds = {self.settings.thresholds}")
        self.target_predictor = target_predictor
        self.run_dir = Path(run_dir) if run_dir else None
        self.fingerprint = dict(fingerprint or {})  # what decided the data and LM (the CLI: config, data digest, LM)
        self.meter = meter or BudgetMeter()  # a budget is no part of the fingerprint: a rerun with another goes on
        self.audit: Audit | None = None
        self.lesson_bank: LessonBank | None = None

    # -- public ---------------------------------------------------------------------------------------
    def compile(
        self,
        student: dspy.Module,
        *,
        trainset: Sequence[dspy.Example],
        valset: Sequence[dspy.Example] | None = None,
        teacher: dspy.Module | None = None,
    ) -> dspy.Module:
        """Return an optimized copy of ``student`` (never mutated); ``self.audit`` says what happened."""
        if teacher is not None:
            raise ValueError(
                "BinEvalOptimizer takes no teacher: its demonstrations are the student's own outputs that pass every "
                "check (or, cross-model, the reference's answers); run the teacher's outputs through your metric instead"
            )
        if not trainset:
            raise ValueError("trainset is empty")
        valset = list(valset) if valset else list(trainset)
        program = student.deepcopy()
        names = [name for name, _ in program.named_predictors()]
        target = self.target_predictor or names[0]
        if target not in names:
            raise ValueError(f"target_predictor {target!r} is not one of {names}")
        if self.settings.steering:
            self._own_steering(program)  # refuses a program that does not decode, or an LM that cannot steer
        self.feedback.check(program, trainset, "train")
        self.feedback.check(program, valset, "validation")
        self._target = target
        self.bank = self._new_bank()  # each compile() starts from its own audit's lessons, never another run's
        compiled = CompileFingerprint(
            mode=self.feedback.mode, settings=self.settings, student_instructions=digest(json.dumps(instructions_of(program), sort_keys=True)),
            examples=f"{len(trainset)} train, {len(valset)} held-out",
        )
        self._fingerprint = combined(self.fingerprint, fingerprint_of(compiled))
        audit = self._load() or self._fresh_audit(program, valset)
        if audit.bank:
            self.bank = LessonBank.from_json([x.model_dump() for x in audit.bank], threshold=self.bank.threshold, embed=self.bank.embed)
        self._choose_steering(audit, program, valset)
        self._set_best(program, audit)
        while audit.stopped is None:
            self._iterate(audit, program, trainset, valset)
        self._set_best(program, audit)
        if self.run_dir:
            ProgramFile.of(program).save(self.run_dir / PROGRAM_FILE)
        self.audit, self.lesson_bank = audit, self.bank
        logger.info("optimizer stopped: %s (held-out %.3f -> %.3f)", audit.stopped, audit.start.val.score, audit.best.val_score)
        return program

    def get_params_summary(self) -> dict[str, Any]:
        return self.settings.model_dump()

    # -- state and audit ------------------------------------------------------------------------------
    def _new_bank(self) -> LessonBank:
        template = self._bank_template
        return LessonBank(threshold=self.settings.dedup_threshold, embed=template.embed if template else None)

    def _fresh_audit(self, program: dspy.Module, valset: Sequence[dspy.Example]) -> Audit:
        state = ProgramState.of(program)
        if self.settings.steering:  # recorded, so rolling back to the start restores it after a candidate's
            state.steering = self._own_steering(program)
        evaluation, cost = self._evaluate(program, valset, "start: held-out", "held-out evaluation")
        summary = evaluation.summary()
        audit = Audit(
            mode=self.feedback.mode,
            settings=self.settings,
            fingerprint=self._fingerprint,
            start=StartRecord(**state.model_dump(), prompt_chars=state.size(), val=summary, usage=cost),
            best=BestRecord(**state.model_dump(), val_score=evaluation.score, val=summary),
        )
        self._save(audit)
        return audit

    def _load(self) -> Audit | None:
        if self.run_dir is None or not (self.run_dir / AUDIT_FILE).exists():
            return None
        audit = Audit.load(self.run_dir)
        resume_check(audit.fingerprint, self._fingerprint, str(self.run_dir), "; use a new run_dir or remove it")
        logger.info("resuming %s: %d iteration(s) recorded", self.run_dir, len(audit.iterations))
        return audit

    def _save(self, audit: Audit) -> None:
        audit.bank = [lesson.model_copy() for lesson in self.bank.lessons]
        if self.run_dir is not None:
            audit.save(self.run_dir)

    def _measured(self, work: Callable[[], T], kind: str, step: str) -> tuple[T, Cost]:
        """One step of ``kind`` under the budget (``step`` names it, should the budget stop the run before it)."""
        with self.meter.unit(kind, f"{step} not started") as measurement:
            result = work()
        return result, measurement.cost

    def _evaluate(self, program: dspy.Module, examples: Sequence[dspy.Example], split: str, kind: str) -> tuple[Evaluation, Cost]:
        """Evaluate with cost accounting; too many unanswered verdicts stop the run instead of steering it."""
        evaluation, cost = self._measured(lambda: self.feedback.evaluate(program, examples, label=f"  {split}"), kind, f"{split} evaluation")
        share, limit = evaluation.unanswered_share, self.settings.max_unanswered
        if share > limit:
            raise RunError(
                f"{split} evaluation: {evaluation.unanswered} of {evaluation.answered + evaluation.unanswered} verdicts "
                f"unanswered ({share:.0%} > max_unanswered {limit:.0%}); first: {evaluation.first_problem}"
            )
        return evaluation, cost

    # -- one iteration, step by step (each step checkpoints) -------------------------------------------
    def _set_best(self, program: dspy.Module, audit: Audit) -> None:
        audit.best.apply_to(program)

    def _iterate(self, audit: Audit, program: dspy.Module, trainset, valset) -> None:
        if not audit.iterations or audit.iterations[-1].decision is not None:
            kind = self.proposers[len(audit.iterations) % len(self.proposers)].kind
            audit.iterations.append(IterationRecord(iteration=len(audit.iterations) + 1, kind=kind))
        record = audit.iterations[-1]
        number = record.iteration
        proposer = next(p for p in self.proposers if p.kind == record.kind)
        evaluation: Evaluation | None = None
        if record.train is None:
            self._set_best(program, audit)
            evaluation, cost = self._evaluate(program, trainset, f"iteration {number}: train", "train evaluation")
            record.train = evaluation.summary()
            record.failures = [_stored(f) for f in self._sample(evaluation.failures, number)]
            record.usage = record.usage + cost
            logger.info("iteration %d (%s): train score %.3f, %d failure(s)", number, record.kind, evaluation.score, len(evaluation.failures))
        if not record.failures:
            return self._stop(audit, record, "no failures left on the trainset")
        step = Step(
            audit=audit, record=record, evaluation=evaluation, target=self._target, bank=self.bank, settings=self.settings,
            progress=self.progress, save=lambda: self._save(audit), measured=self._measured,
        )
        proposal = record.candidate if record.candidate is not None else proposer.propose(step)  # resumed: the one recorded
        if record.selected is None:
            record.selected = []  # only instruction edits apply lessons
        if isinstance(proposal, str):
            if len(self.proposers) == 1:
                return self._stop(audit, record, proposal)
            record.decision = Decision(accepted=False, reason=proposal)  # another kind gets the next iteration
            audit.stopped = next((r for r in (rule.reason(audit) for rule in self.stopping) if r), None)
            return self._save(audit)
        if record.candidate is None:
            record.candidate = proposal
            record.prompt_chars = proposal.size()
            self._save(audit)
        proposal.apply_to(program)
        scored, cost = self._evaluate(program, valset, f"iteration {number}: held-out", "held-out evaluation")
        record.usage = record.usage + cost
        record.val = scored.summary()
        self._decide(audit, record, scored, proposal)
        self._save(audit)

    # -- steering, chosen once before the iterations (``settings.steering``) -----------------------------
    def _own_steering(self, program: dspy.Module) -> SteeringSettings:
        if not isinstance(program, Generator):
            raise ValueError(f"steering: only a generator decodes under constraints, not a {type(program).__name__}")
        candidates = self.settings.steering or []
        if any(c.enforce == "annotated" for c in candidates) and not program.annotations:
            raise ValueError("steering: an 'annotated' candidate enforces the suite's instruction ids: give the generator its rows first (Generator.annotate)")
        enforcing = next((c for c in candidates if c.enforce is not None), None)
        if enforcing is not None:  # refused before the first call, not after the first candidates ran
            check_steerable(Generator(steering=enforcing), program.generate.lm or dspy.settings.lm)
        return program.steering

    def _choose_steering(self, audit: Audit, program: dspy.Module, valset: Sequence[dspy.Example]) -> None:
        """Score each steering candidate on the held-out split against the program's own steering, as a prompt
        candidate is scored, and keep the best the acceptance policy accepts (the first listed on a tie); the
        audit records each one's score and verdict and why the choice fell where it did."""
        if not self.settings.steering or (audit.steering is not None and audit.steering.reason is not None):
            return
        start = audit.start
        own = start.steering or self._own_steering(program)
        if audit.steering is None:
            audit.steering = SteeringChoice(own=own, candidates=[SteeringTrial(settings=c) for c in self.settings.steering])
        choice = audit.steering
        for trial in choice.candidates:
            if trial.decision is not None:
                continue
            if trial.settings == own:
                trial.val = start.val
                trial.decision = Decision(accepted=False, reason="the program's own steering: the start's held-out score")
                continue
            ProgramState.model_validate({**start.model_dump(include=set(ProgramState.model_fields)), "steering": trial.settings}).apply_to(program)
            scored, cost = self._evaluate(program, valset, f"steering {trial.settings.label}: held-out", "held-out evaluation")
            gain = self._gain(audit, scored)  # over the start: no candidate was chosen yet
            decision = self.acceptance.decide(gain=gain, prompt_chars=start.prompt_chars, start_chars=start.prompt_chars)
            trial.usage, trial.val, trial.decision = trial.usage + cost, scored.summary(), decision.model_copy(update={"gain": gain})
            logger.info("steering %s: held-out %.3f, %s", trial.settings.label, scored.score, decision.reason)
            self._save(audit)
        kept = [t for t in choice.candidates if t.decision is not None and t.decision.accepted and t.val is not None]
        if not kept:
            choice.chosen = own
            choice.reason = f"no candidate was kept over the program's own steering ({own.label}, held-out {start.val.score:.3f}): it stays"
        else:
            best = max(kept, key=lambda t: t.val.score if t.val is not None else 0.0)  # max keeps the first of equals
            assert best.val is not None and best.decision is not None and best.decision.gain is not None
            choice.chosen = best.settings
            others = [f"{t.settings.label} {t.val.score:.3f}" for t in kept if t is not best and t.val is not None]
            choice.reason = (
                f"{best.settings.label}: held-out {best.val.score:.3f}, {best.decision.gain.text(signed=True)} over the program's own "
                f"({own.label}, {start.val.score:.3f}); the highest of {len(kept)} candidate(s) kept" + (f" ({', '.join(others)})" if others else "")
            )
            audit.best = BestRecord(**start.model_dump(include=set(ProgramState.model_fields)), val_score=best.val.score, val=best.val)
            audit.best.steering = best.settings
        logger.info("steering chosen: %s", choice.reason)
        self._save(audit)

    def _sample(self, failures: list[Failure], iteration: int) -> list[Failure]:
        """At most ``max_failures``, chosen reproducibly, so one iteration's note-taking cost is bounded."""
        limit = self.settings.max_failures
        if len(failures) <= limit:
            return failures
        return random.Random(self.settings.seed * 1000 + iteration).sample(failures, limit)

    def _gain(self, audit: Audit, evaluation: Evaluation) -> Interval:
        """The candidate's held-out gain over the best so far, with its paired interval over held-out items."""
        before = audit.best.val.items
        ids = [item.id for item in evaluation.items if item.id in before]
        if not ids:
            return Interval(estimate=evaluation.score - audit.best.val_score)
        after = {item.id: item for item in evaluation.items}
        groups = [after[i].group for i in ids]
        settings = self.settings
        boot = Bootstrap(groups, resamples=settings.resamples, seed=settings.seed, confidence=settings.confidence)
        interval = boot.difference([after[i].score for i in ids], [before[i] for i in ids])
        return interval.model_copy(update={"estimate": evaluation.score - audit.best.val_score})

    def _decide(self, audit: Audit, record: IterationRecord, evaluation: Evaluation, candidate: ProgramState) -> None:
        assert record.prompt_chars is not None and record.selected is not None and record.candidate is not None
        gain = self._gain(audit, evaluation)
        decision = self.acceptance.decide(gain=gain, prompt_chars=record.prompt_chars, start_chars=audit.start.prompt_chars)
        record.decision = decision.model_copy(update={"gain": gain})
        if decision.accepted:
            self.bank.mark_applied(record.selected)
            audit.best = BestRecord(
                instructions=candidate.instructions,
                demos=candidate.demos,
                thresholds=candidate.thresholds,
                steering=candidate.steering,
                val_score=evaluation.score,
                val=evaluation.summary(),
                iteration=record.iteration,
            )
            audit.stale = 0
        else:
            self.bank.retire(record.selected)
            audit.stale += 1
        verdict = "accepted" if decision.accepted else "rolled back"
        logger.info("iteration %d: held-out %.3f, %s: %s", record.iteration, evaluation.score, verdict, decision.reason)
        audit.stopped = next((r for r in (rule.reason(audit) for rule in self.stopping) if r), None)

    def _stop(self, audit: Audit, record: IterationRecord, reason: str) -> None:
        record.decision = Decision(accepted=False, reason=reason)
        audit.stopped = reason
        self._save(audit)


def _stored(failure: Failure) -> Failure:
    """A failure as kept in the audit: long texts are cut so the audit stays readable."""
    return failure.model_copy(
        update={key: getattr(failure, key)[:MAX_STORED_TEXT] for key in ("input", "output", "explanation")}
    )
