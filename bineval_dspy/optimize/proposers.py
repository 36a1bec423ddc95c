"""Candidate kinds behind one small protocol: each ``Proposer`` turns an iteration's train evaluation into a
candidate program state (or says why it has none).

The loop evaluates the incumbent on the trainset, asks the iteration's proposer for a candidate, scores it on the
held-out set and lets the acceptance policy decide. Kinds take turns, one per iteration:
- ``InstructionProposer``: failures -> NoteTaker lessons -> LessonBank dedup -> surgical PromptUpdater edits (a
  verifier's rule: added as a line, no LM); a rule only a few rows ask for teaches none;
- ``DemoProposer``: one more demonstration (a passing train output, or a reference answer in cross-model runs);
- ``ThresholdProposer``: per-dimension P(yes) thresholds fitted on the train disagreements (cross-model).
A proposer that does LM work records each finished step in the iteration record through ``Step.save``, so a
resumed run redoes only the step that was cut.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from bineval_dspy.core.embeddings import text_key
from bineval_dspy.core.errors import one_line
from bineval_dspy.core.registry import Registry
from bineval_dspy.lm.budget import metered_map
from bineval_dspy.lm.usage import Cost
from bineval_dspy.optimize.audit import Audit, CandidateKind, IterationRecord, Skipped
from bineval_dspy.optimize.edits import Edit, PromptUpdater, already_says, rule_edit
from bineval_dspy.optimize.feedback import Evaluation
from bineval_dspy.optimize.kinds import KINDS
from bineval_dspy.optimize.lessons import Failure, Lesson, LessonBank, lesson_id
from bineval_dspy.optimize.notes import Discarded, NoteTaker, lesson_problem, rule_lesson
from bineval_dspy.optimize.settings import OptimizerSettings
from bineval_dspy.programs.state import Demos, ProgramState

T = TypeVar("T")
logger = logging.getLogger("bineval_dspy.optimize")


class Measure(Protocol):
    """Runs one step of LM work under the run's budget and returns its result with what it cost."""

    def __call__(self, work: Callable[[], T], kind: str, step: str) -> tuple[T, Cost]: ...


@dataclass
class Step:
    """What a proposer sees of the run: the audit, this iteration's record, the train evaluation (None when a
    resumed run already recorded it), the predictor it edits, the lesson bank, and how to checkpoint and meter."""

    audit: Audit
    record: IterationRecord
    evaluation: Evaluation | None
    target: str
    bank: LessonBank
    settings: OptimizerSettings
    progress: bool
    save: Callable[[], None]
    measured: Measure

    def keep(self, **changes: object) -> ProgramState:
        """The best state (its steering too) with ``changes`` (instructions, demos or thresholds) in place: a
        candidate to score on the held-out set."""
        best = self.audit.best
        return ProgramState.model_validate({"instructions": dict(best.instructions), "demos": best.demos, "thresholds": best.thresholds, "steering": best.steering, **changes})


class Proposer(Protocol):
    """One kind of candidate: ``propose`` returns a candidate, or the reason there is none this iteration."""

    kind: CandidateKind

    def propose(self, step: Step) -> ProgramState | str: ...


class InstructionProposer:
    """Lessons from failures, merged in the bank, applied as surgical edits of the target's instructions.

    A failed verifier whose rule only a few train rows ask for (under ``min_rule_share``: in a suite whose rows
    each carry their own constraints, as IFEval's) teaches no lesson for every row: it is skipped before any LM
    call. A lesson that is a verifier's rule is added as a line of its own without the LM; every lesson left out
    (a few rows' own, said already, rolled back before, over the iteration's limit) is in the audit with why.
    """

    kind: CandidateKind = "instructions"

    def __init__(self, note_taker: NoteTaker, updater: PromptUpdater) -> None:
        self.note_taker = note_taker
        self.updater = updater

    def propose(self, step: Step) -> ProgramState | str:
        record, best = step.record, step.audit.best
        if record.selected is None:
            shared, skipped = _shared_failures(record.failures or [], step.settings.min_rule_share)
            (lessons, discarded, errors), cost = step.measured(
                lambda: self._take_notes(shared, best.instructions[step.target], step.progress),
                "lessons", f"iteration {record.iteration}: lessons",
            )
            record.lessons_new = [lesson.model_copy(deep=True) for lesson in lessons]  # as drafted, before merging
            merged = [step.bank.add(lesson).id for lesson in lessons]
            record.lessons_after_dedup = sorted(set(merged))
            record.lessons_discarded = discarded
            record.rule_lessons = sum(lesson.origin == "rule" for lesson in lessons)
            record.note_errors = errors
            chosen, passed_over = self._select(step, list(dict.fromkeys(merged)), best.instructions[step.target])
            record.selected = [lesson.id for lesson in chosen]
            record.lessons_skipped = skipped + passed_over
            record.usage = record.usage + cost
            step.save()
        if not record.selected:
            return "no new lessons to apply"
        selected = record.selected
        (texts, edits), cost = step.measured(
            lambda: self._edit(step, best.instructions, selected), "edits", f"iteration {record.iteration}: edits"
        )
        record.edits = edits
        record.usage = record.usage + cost
        return step.keep(instructions=texts)

    def _take_notes(self, failures: list[Failure], instructions: str, progress: bool) -> tuple[list[Lesson], list[Discarded], int]:
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

        for failure, (drafted, error) in zip(failures, (r for r, _ in metered_map(note, failures, "  lessons", show=progress))):
            if drafted is not None:
                problem = lesson_problem(drafted.text, failure)
                if problem is None:
                    lessons.append(drafted)
                    continue
                discarded.append(Discarded(failure_id=failure.id, text=drafted.text, reason=problem))
            else:
                errors += 1
                logger.warning("note-taker failed on %s: %s", failure.id, error)
            fallback = rule_lesson(failure)
            if fallback is not None:
                lessons.append(fallback)
        return lessons, discarded, errors

    @staticmethod
    def _select(step: Step, touched: list[str], instructions: str) -> tuple[list[Lesson], list[Skipped]]:
        """The lessons this iteration produced or reinforced that are not applied, retired nor said by the
        instructions already (a rule: nor a near-duplicate of one of their sentences), by support, up to the
        iteration's limit; and each one left out, with why."""
        by_id = {lesson.id: lesson for lesson in step.bank.lessons}
        present = text_key(instructions)
        order = {lesson.id: rank for rank, lesson in enumerate(step.bank.active())}
        fresh: list[Lesson] = []
        skipped: list[Skipped] = []
        for lesson in sorted((by_id[i] for i in touched), key=lambda x: order.get(x.id, len(order))):
            if lesson.retired:
                reason = "its edit was rolled back in an earlier iteration"
            elif lesson.applied:
                reason = "an accepted edit applied it already"
            elif text_key(lesson.text) in present or (
                lesson.origin == "rule" and already_says(instructions, lesson.text, step.bank.threshold, step.bank.embed)
            ):
                reason = "the instructions say it already"
            elif len(fresh) >= step.settings.lessons_per_iteration:
                reason = f"over lessons_per_iteration ({step.settings.lessons_per_iteration}); a later iteration may take it"
            else:
                fresh.append(lesson)
                continue
            skipped.append(Skipped(lesson_id=lesson.id, text=lesson.text, reason=reason, sources=list(lesson.sources)))
        return fresh, skipped

    def _edit(self, step: Step, texts: dict[str, str], lesson_ids: list[str]) -> tuple[dict[str, str], list[Edit]]:
        """Each lesson applied in turn: a verifier's rule as a line of its own, any other by the LM updater."""
        by_id = {lesson.id: lesson for lesson in step.bank.lessons}
        current = dict(texts)
        edits = []
        for key in lesson_ids:
            lesson = by_id[key]
            edit_with = rule_edit if lesson.origin == "rule" else self.updater
            current[step.target], edit = edit_with(instructions=current[step.target], lesson=lesson)
            edits.append(edit)
        return current, edits


def _shared_failures(failures: list[Failure], min_share: float) -> tuple[list[Failure], list[Skipped]]:
    """The failures that may teach a lesson for every row, and one ``Skipped`` per rule too few rows ask for."""
    kept: list[Failure] = []
    rare: dict[str, list[Failure]] = {}
    for failure in failures:
        share = failure.rule_share
        if share is not None and failure.rule is not None and share < min_share:
            rare.setdefault(failure.rule, []).append(failure)
        else:
            kept.append(failure)
    skipped = [
        Skipped(
            lesson_id=lesson_id(rule), text=rule, sources=[f.id for f in found],
            reason=f"only {found[0].rule_rows} of {found[0].rows} train rows ask for it (min_rule_share "
            f"{min_share:g}): their own constraint, not an instruction for every row",
        )
        for rule, found in rare.items()
    ]
    return kept, skipped


class DemoProposer:
    """The best demos plus the shortest demonstration of this train evaluation not shown or tried before (short:
    a demo counts against the length budget); none when none is left or the run's demo budget is spent. ``pool``
    offers more demonstrations besides the evaluation's own passing outputs (e.g. train samples that a Best-of-N
    selection found passing every check)."""

    kind: CandidateKind = "demo"

    def __init__(self, pool: Sequence[dict[str, Any]] = ()) -> None:
        self.pool = list(pool)

    def propose(self, step: Step) -> ProgramState | str:
        demos = self._pick(step)
        if demos is None:
            return "no new demonstration to try"
        return step.keep(demos=demos)

    def _pick(self, step: Step) -> Demos | None:
        audit, target = step.audit, step.target
        current = audit.best.demos.get(target, [])
        if len(current) >= step.settings.demos:
            return None
        tried = {json.dumps(d, sort_keys=True) for r in audit.iterations if r.kind == "demo" and r.candidate for d in r.candidate.demos.get(target, [])}
        offered = [*(step.evaluation.demo_pool if step.evaluation is not None else []), *self.pool]
        fresh = [d for d in offered if json.dumps(d, sort_keys=True) not in tried]
        if not fresh:
            return None
        demo = min(fresh, key=lambda d: len(json.dumps(d)))
        return {**audit.best.demos, target: [*current, demo]}


class ThresholdProposer:
    """Per-dimension P(yes) thresholds fitted on this train evaluation; none when P(yes) was never read or the
    fit was already tried."""

    kind: CandidateKind = "thresholds"

    def propose(self, step: Step) -> ProgramState | str:
        if step.evaluation is not None and step.evaluation.probabilities:
            fitted = fit_thresholds(step.evaluation.probabilities)
            tried = [r.candidate.thresholds for r in step.audit.iterations[:-1] if r.kind == "thresholds" and r.candidate is not None]
            if fitted != step.audit.best.thresholds and fitted not in tried:
                return step.keep(thresholds=fitted)
        return "no new thresholds to try"


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


ProposerFactory = Callable[[OptimizerSettings, str, NoteTaker, PromptUpdater], "Proposer | None"]
"""Builds a kind's proposer for a run (its settings, its mode, the run's note-taker and updater), or None where the
settings leave the kind out (no demo budget, thresholds outside cross-model runs)."""

PROPOSERS: Registry[ProposerFactory] = KINDS  # the registry of kinds, its entries typed
PROPOSERS.add("instructions", lambda settings, mode, note_taker, updater: InstructionProposer(note_taker, updater))
PROPOSERS.add("demo", lambda settings, mode, note_taker, updater: DemoProposer() if settings.demos else None)
PROPOSERS.add("thresholds", lambda settings, mode, note_taker, updater: ThresholdProposer() if settings.thresholds and mode == "cross" else None)


def default_proposers(settings: OptimizerSettings, mode: str, note_taker: NoteTaker, updater: PromptUpdater) -> list[Proposer]:
    """The kinds a run's settings ask for (``kinds``, else every registered kind they allow), in the order they
    take turns."""
    wanted = [kind for kind in PROPOSERS if settings.kinds is None or kind in settings.kinds]
    built = (PROPOSERS[kind](settings, mode, note_taker, updater) for kind in wanted)
    return [proposer for proposer in built if proposer is not None]
