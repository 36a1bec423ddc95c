"""BinEvalOptimizer: prompt optimization from question-level failures or cross-model disagreements.

One iteration: evaluate the incumbent on the trainset (failures or disagreements) -> a NoteTaker lesson per
failure -> LessonBank dedup -> PromptUpdater surgical edits -> score the candidate on the held-out valset ->
the acceptance policy (the bloat guard by default) keeps it or rolls back to the best accepted prompt and
retires the lessons that caused it; stopping rules end the run. Every step is written to ``run_dir/audit.json``
(a typed ``Audit``), so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import dspy
from dspy.teleprompt import Teleprompter

from bineval_dspy.core.console import console, progress_map
from bineval_dspy.core.errors import InputError, RunError, one_line
from bineval_dspy.core.fingerprint import digest, first_difference
from bineval_dspy.lm.budget import BudgetMeter
from bineval_dspy.lm.usage import Cost
from bineval_dspy.optimize.audit import (
    AUDIT_FILE,
    Audit,
    BestRecord,
    CandidateKind,
    Decision,
    Demos,
    IterationRecord,
    StartRecord,
)
from bineval_dspy.optimize.feedback import Evaluation, FeedbackSource
from bineval_dspy.optimize.lessons import (
    Discarded,
    Failure,
    Lesson,
    LessonBank,
    NoteTaker,
    PromptUpdater,
    lesson_problem,
    normalize,
    rule_lesson,
)
from bineval_dspy.optimize.policies import AcceptancePolicy, StoppingRule, default_acceptance, default_stopping
from bineval_dspy.optimize.settings import OptimizerSettings

T = TypeVar("T")
PROGRAM_FILE = "program.json"
MAX_STORED_TEXT = 2000


def instructions_of(program: dspy.Module) -> dict[str, str]:
    """Instructions of every named predictor."""
    return {name: pred.signature.instructions for name, pred in program.named_predictors()}


def set_instructions(program: dspy.Module, texts: dict[str, str]) -> None:
    """Replace signatures (never mutate them: copies share Signature classes)."""
    for name, pred in program.named_predictors():
        if name in texts:
            pred.signature = pred.signature.with_instructions(texts[name])


def demos_of(program: dspy.Module) -> Demos:
    """Demonstrations of every named predictor that has some, as plain field dicts."""
    return {name: [dict(d) for d in pred.demos] for name, pred in program.named_predictors() if pred.demos}


def set_state(program: dspy.Module, instructions: dict[str, str], demos: Demos, thresholds: dict[str, float]) -> None:
    """Give ``program`` one recorded state: instructions, the demonstrations of each predictor named in ``demos``
    (the others keep none) and, for a judge, its per-dimension P(yes) thresholds."""
    set_instructions(program, instructions)
    for name, pred in program.named_predictors():
        pred.demos = [dspy.Example(**d) for d in demos.get(name, [])]
    if hasattr(program, "thresholds"):
        program.thresholds = dict(thresholds)


def prompt_length(texts: dict[str, str], demos: Demos | None = None) -> int:
    """What the bloat guard measures: instruction characters plus every character of the demonstrations' fields."""
    shown = sum(len(v if isinstance(v, str) else json.dumps(v)) for ds in (demos or {}).values() for d in ds for v in d.values())
    return sum(len(t) for t in texts.values()) + shown


def fit_thresholds(probabilities: Sequence[tuple[str, float, str]]) -> dict[str, float]:
    """Per dimension, the P(yes) threshold under which the target agrees most often with the reference (yes when
    P(yes) >= t); ties go to the threshold nearest 0.5, the uncalibrated decision."""
    by_dim: dict[str, list[tuple[float, str]]] = {}
    for dim, p, ref in probabilities:
        by_dim.setdefault(dim, []).append((p, ref))
    fitted = {}
    for dim, points in sorted(by_dim.items()):
        values = sorted({p for p, _ in points})
        cuts = [0.5, values[0], values[-1] + 1e-6] + [(a + b) / 2 for a, b in zip(values, values[1:])]
        agreement = {t: sum((p >= t) == (ref == "yes") for p, ref in points) for t in cuts}
        best = max(agreement.values())
        chosen: float = min((t for t, n in agreement.items() if n == best), key=lambda t: abs(t - 0.5))
        fitted[dim] = round(chosen, 6)
    return fitted


class BinEvalOptimizer(Teleprompter):
    """Optimizes a program's instructions from BinEval question-level feedback.

    ``feedback`` decides the mode: ``SelfUpdateFeedback`` (generator prompts: failing questions) or
    ``CrossModelFeedback`` (a judge prompt on a target LM: disagreements with a reference). Settings come as an
    ``OptimizerSettings`` or as its fields in keyword arguments; ``acceptance`` and ``stopping`` replace the
    policies the settings imply. With the bloat guard (default) the returned program never scores below the
    student on the valset. A ``run_dir`` is resumed only by a run with the same fingerprint: the settings, the
    student's instructions and whatever the caller passes as ``fingerprint`` (data digest, LM). With a ``meter``,
    each step (an evaluation, the lessons, the edits) starts only when its budget lets it; otherwise the run stops
    with ``BudgetExhausted`` after the last finished step, saved in the audit, where a rerun goes on.
    """

    def __init__(
        self,
        feedback: FeedbackSource,
        *,
        settings: OptimizerSettings | None = None,
        note_taker: NoteTaker | None = None,
        updater: PromptUpdater | None = None,
        bank: LessonBank | None = None,
        acceptance: AcceptancePolicy | None = None,
        stopping: Sequence[StoppingRule] | None = None,
        target_predictor: str | None = None,
        run_dir: str | Path | None = None,
        fingerprint: dict[str, str] | None = None,
        meter: BudgetMeter | None = None,
        **overrides: Any,
    ) -> None:
        super().__init__()
        base = settings or OptimizerSettings()
        if bank is not None and "dedup_threshold" not in overrides:
            overrides["dedup_threshold"] = bank.threshold
        self.settings = OptimizerSettings(**{**base.model_dump(), **overrides})
        self.feedback = feedback
        self.note_taker = note_taker or NoteTaker()
        self.updater = updater or PromptUpdater()
        self._bank_template = bank
        self.acceptance = acceptance or default_acceptance(self.settings)
        self.stopping = list(stopping) if stopping is not None else default_stopping(self.settings)
        self.target_predictor = target_predictor
        self.run_dir = Path(run_dir) if run_dir else None
        self.fingerprint = dict(fingerprint or {})  # what decided the data and LM (the CLI: config, data digest, LM)
        self.meter = meter or BudgetMeter()  # a budget is no part of the fingerprint: a rerun with another goes on

    # -- public ---------------------------------------------------------------------------------------
    def compile(
        self,
        student: dspy.Module,
        *,
        trainset: Sequence[dspy.Example],
        valset: Sequence[dspy.Example] | None = None,
        teacher: dspy.Module | None = None,
        **kwargs: Any,
    ) -> dspy.Module:
        """Return an optimized copy of ``student`` (never mutated), with ``audit`` and ``lesson_bank`` attached."""
        if not trainset:
            raise ValueError("trainset is empty")
        valset = list(valset) if valset else list(trainset)
        program = student.deepcopy()
        names = [name for name, _ in program.named_predictors()]
        target = self.target_predictor or names[0]
        if target not in names:
            raise ValueError(f"target_predictor {target!r} is not one of {names}")
        self._target = target
        self.bank = self._new_bank()  # each compile() starts from its own audit's lessons, never another run's
        self._fingerprint = {
            **self.fingerprint,
            "mode": self.feedback.mode,
            "settings": self.settings.model_dump_json(),
            "student_instructions": digest(json.dumps(instructions_of(program), sort_keys=True)),
            "examples": f"{len(trainset)} train, {len(valset)} held-out",
        }
        audit = self._load() or self._fresh_audit(program, valset)
        if audit.bank:
            self.bank = LessonBank.from_json([x.model_dump() for x in audit.bank], threshold=self.bank.threshold, embed=self.bank.embed)
        self._set_best(program, audit)
        while audit.stopped is None:
            self._iterate(audit, program, trainset, valset)
        self._set_best(program, audit)
        if self.run_dir:
            program.save(str(self.run_dir / PROGRAM_FILE))
        program.audit = audit
        program.lesson_bank = self.bank
        program._compiled = True
        console.print(f"optimizer stopped: {audit.stopped} (held-out {audit.start.val.score:.3f} -> {audit.best.val_score:.3f})")
        return program

    def get_params_summary(self) -> dict:
        return self.settings.model_dump()

    # -- state and audit ------------------------------------------------------------------------------
    def _new_bank(self) -> LessonBank:
        template = self._bank_template
        return LessonBank(threshold=self.settings.dedup_threshold, embed=template.embed if template else None)

    def _fresh_audit(self, program: dspy.Module, valset: Sequence[dspy.Example]) -> Audit:
        texts, demos, thresholds = instructions_of(program), demos_of(program), dict(getattr(program, "thresholds", {}))
        evaluation, cost = self._evaluate(program, valset, "start: held-out", "held-out evaluation")
        summary = evaluation.summary()
        audit = Audit(
            mode=self.feedback.mode,
            settings=self.settings,
            fingerprint=self._fingerprint,
            start=StartRecord(
                instructions=texts, demos=demos, thresholds=thresholds, prompt_chars=prompt_length(texts, demos), val=summary, usage=cost,
            ),
            best=BestRecord(instructions=texts, demos=demos, thresholds=thresholds, val_score=evaluation.score, val=summary),
        )
        self._save(audit)
        return audit

    def _load(self) -> Audit | None:
        if self.run_dir is None or not (self.run_dir / AUDIT_FILE).exists():
            return None
        audit = Audit.load(self.run_dir)
        difference = first_difference(audit.fingerprint, self._fingerprint)
        if difference:
            raise InputError(f"{self.run_dir}: made with other settings ({difference}); use a new run_dir or remove it")
        console.print(f"resuming {self.run_dir}: {len(audit.iterations)} iteration(s) recorded")
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
    def _kinds(self) -> list[CandidateKind]:
        """The kinds of candidate this run proposes, taken in turn one per iteration."""
        kinds: list[CandidateKind] = ["instructions"]
        if self.settings.demos:
            kinds.append("demo")
        if self.settings.thresholds and self.feedback.mode == "cross":
            kinds.append("thresholds")
        return kinds

    def _set_best(self, program: dspy.Module, audit: Audit) -> None:
        set_state(program, audit.best.instructions, audit.best.demos, audit.best.thresholds)

    def _iterate(self, audit: Audit, program: dspy.Module, trainset, valset) -> None:
        if not audit.iterations or audit.iterations[-1].decision is not None:
            kinds = self._kinds()
            audit.iterations.append(IterationRecord(iteration=len(audit.iterations) + 1, kind=kinds[len(audit.iterations) % len(kinds)]))
        record = audit.iterations[-1]
        number = record.iteration
        best = audit.best
        if record.train is None:
            self._set_best(program, audit)
            evaluation, cost = self._evaluate(program, trainset, f"iteration {number}: train", "train evaluation")
            failures = self._sample(evaluation.failures, number)
            record.train = evaluation.summary()
            record.failures = [_stored(f) for f in failures]
            if record.kind == "demo":
                record.candidate_demos = self._demo_candidate(audit, evaluation)
            elif record.kind == "thresholds":
                record.candidate_thresholds = self._thresholds_candidate(audit, evaluation)
            self._charge(record, cost)
            self._save(audit)
            console.print(f"iteration {number} ({record.kind}): train score {evaluation.score:.3f}, {len(evaluation.failures)} failure(s)")
        if not record.failures:
            return self._stop(audit, record, "no failures left on the trainset")
        if record.kind == "instructions" and record.selected is None:
            failures_seen = record.failures
            (lessons, discarded, errors), cost = self._measured(
                lambda: self._take_notes(failures_seen, best.instructions[self._target]), "lessons", f"iteration {number}: lessons"
            )
            record.lessons_new = [lesson.model_copy(deep=True) for lesson in lessons]  # as drafted, before merging
            merged = [self.bank.add(lesson).id for lesson in lessons]
            record.lessons_after_dedup = sorted(set(merged))
            record.lessons_discarded = discarded
            record.rule_lessons = sum(lesson.origin == "rule" for lesson in lessons)
            record.note_errors = errors
            record.selected = [lesson.id for lesson in self._select(set(merged), best.instructions[self._target])]
            self._charge(record, cost)
            self._save(audit)
        if record.kind != "instructions":
            record.selected = []
        nothing = {
            "instructions": "no new lessons to apply" if not record.selected else None,
            "demo": "no new demonstration to try" if record.candidate_demos is None else None,
            "thresholds": "no new thresholds to try" if record.candidate_thresholds is None else None,
        }[record.kind]
        if nothing:
            if len(self._kinds()) == 1:
                return self._stop(audit, record, nothing)
            record.decision = Decision(accepted=False, reason=nothing)  # another kind gets the next iteration
            audit.stopped = next((r for r in (rule.reason(audit) for rule in self.stopping) if r), None)
            return self._save(audit)
        if record.candidate_instructions is None:
            if record.kind == "instructions":
                selected = record.selected or []
                (texts, edits), cost = self._measured(lambda: self._edit(best.instructions, selected), "edits", f"iteration {number}: edits")
                record.edits = edits
                self._charge(record, cost)
            else:
                texts = dict(best.instructions)
            record.candidate_instructions = texts
            record.prompt_chars = prompt_length(texts, self._candidate_demos(audit, record))
            self._save(audit)
        set_state(program, record.candidate_instructions, self._candidate_demos(audit, record), self._candidate_thresholds(audit, record))
        evaluation, cost = self._evaluate(program, valset, f"iteration {number}: held-out", "held-out evaluation")
        self._charge(record, cost)
        record.val = evaluation.summary()
        self._decide(audit, record, evaluation)
        self._save(audit)

    @staticmethod
    def _candidate_demos(audit: Audit, record: IterationRecord) -> Demos:
        return record.candidate_demos if record.candidate_demos is not None else audit.best.demos

    @staticmethod
    def _candidate_thresholds(audit: Audit, record: IterationRecord) -> dict[str, float]:
        return record.candidate_thresholds if record.candidate_thresholds is not None else audit.best.thresholds

    def _demo_candidate(self, audit: Audit, evaluation: Evaluation) -> Demos | None:
        """The best demos plus the shortest demonstration from this evaluation not shown or tried before (short: a
        demo counts against the length budget); None when none is left or the run's demo budget is spent."""
        current = audit.best.demos.get(self._target, [])
        if len(current) >= self.settings.demos:
            return None
        tried = {json.dumps(d, sort_keys=True) for r in audit.iterations if r.candidate_demos for d in r.candidate_demos.get(self._target, [])}
        fresh = [d for d in evaluation.demo_pool if json.dumps(d, sort_keys=True) not in tried]
        if not fresh:
            return None
        demo = min(fresh, key=lambda d: len(json.dumps(d)))
        return {**audit.best.demos, self._target: [*current, demo]}

    def _thresholds_candidate(self, audit: Audit, evaluation: Evaluation) -> dict[str, float] | None:
        """Thresholds fitted on this evaluation; None when P(yes) was never read or the fit was already tried."""
        if not evaluation.probabilities:
            return None
        fitted = fit_thresholds(evaluation.probabilities)
        tried = [r.candidate_thresholds for r in audit.iterations[:-1] if r.candidate_thresholds is not None]
        return None if fitted == audit.best.thresholds or fitted in tried else fitted

    @staticmethod
    def _charge(record: IterationRecord, cost: Cost) -> None:
        record.usage = record.usage + cost

    def _sample(self, failures: list[Failure], iteration: int) -> list[Failure]:
        """At most ``max_failures``, chosen reproducibly, so one iteration's note-taking cost is bounded."""
        limit = self.settings.max_failures
        if len(failures) <= limit:
            return failures
        return random.Random(self.settings.seed * 1000 + iteration).sample(failures, limit)

    def _take_notes(self, failures: list[Failure], instructions: str) -> tuple[list[Lesson], list[Discarded], int]:
        """A lesson per failure: the note-taker's when it names the failed constraint, else the verifier's rule
        (code-checked failures only); refused drafts and note-taker errors are returned for the audit."""
        lessons: list[Lesson] = []
        discarded: list[Discarded] = []
        errors = 0

        def note(failure: Failure) -> tuple[Lesson | None, str | None]:
            try:
                drafted = self.note_taker(failure=failure, instructions=instructions)
            except Exception as exc:  # one unusable note must not end the run; it is counted in the audit
                return None, one_line(exc)
            return drafted, None

        for failure, (drafted, error) in zip(failures, progress_map(note, failures, "  lessons")):
            if drafted is not None:
                problem = lesson_problem(drafted.text, failure)
                if problem is None:
                    lessons.append(drafted)
                    continue
                discarded.append(Discarded(failure_id=failure.id, text=drafted.text, reason=problem))
            else:
                errors += 1
                console.print(f"[yellow]note-taker failed on {failure.id}: {error}[/]")
            fallback = rule_lesson(failure)
            if fallback is not None:
                lessons.append(fallback)
        return lessons, discarded, errors

    def _select(self, touched: set[str], instructions: str) -> list[Lesson]:
        """Lessons this iteration produced or reinforced, not yet applied nor retired nor already stated
        in the instructions, by support."""
        present = normalize(instructions)
        fresh = [
            lesson
            for lesson in self.bank.active()
            if lesson.id in touched and not lesson.applied and normalize(lesson.text) not in present
        ]
        return fresh[: self.settings.lessons_per_iteration]

    def _edit(self, texts: dict[str, str], lesson_ids: list[str]):
        by_id = {lesson.id: lesson for lesson in self.bank.lessons}
        current = dict(texts)
        edits = []
        for lesson_id in lesson_ids:
            current[self._target], edit = self.updater(instructions=current[self._target], lesson=by_id[lesson_id])
            edits.append(edit)
        return current, edits

    def _decide(self, audit: Audit, record: IterationRecord, evaluation: Evaluation) -> None:
        assert record.prompt_chars is not None and record.selected is not None and record.candidate_instructions is not None
        gain = evaluation.score - audit.best.val_score
        record.decision = self.acceptance.decide(gain=gain, prompt_chars=record.prompt_chars, start_chars=audit.start.prompt_chars)
        if record.decision.accepted:
            self.bank.mark_applied(record.selected)
            audit.best = BestRecord(
                instructions=record.candidate_instructions,
                demos=self._candidate_demos(audit, record),
                thresholds=self._candidate_thresholds(audit, record),
                val_score=evaluation.score,
                val=evaluation.summary(),
                iteration=record.iteration,
            )
            audit.stale = 0
        else:
            self.bank.retire(record.selected)
            audit.stale += 1
        verdict = "accepted" if record.decision.accepted else "rolled back"
        console.print(f"iteration {record.iteration}: held-out {evaluation.score:.3f}, {verdict}: {record.decision.reason}")
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
