"""BinEvalOptimizer: prompt optimization from question-level failures or cross-model disagreements.

One iteration: evaluate the incumbent on the trainset (failures or disagreements) -> a NoteTaker lesson per
failure -> LessonBank dedup -> PromptUpdater surgical edits -> score the candidate on the held-out valset ->
the bloat guard accepts it only if the held-out score rises by ``min_delta`` and the instructions stay within
the length budget; otherwise it rolls back to the best accepted prompt and retires the lessons that caused it.
Everything is written to ``run_dir/audit.json`` after each step, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dspy
from dspy.teleprompt import Teleprompter
from dspy.utils.callback import BaseCallback

from bineval_dspy.feedback import Evaluation, FeedbackSource
from bineval_dspy.judge import one_line
from bineval_dspy.lessons import Failure, Lesson, LessonBank, NoteTaker, PromptUpdater, normalize
from bineval_dspy.progress import console

AUDIT_FILE = "audit.json"
PROGRAM_FILE = "program.json"
MAX_STORED_TEXT = 2000


class CallCounter(BaseCallback):
    """Counts LM calls (cache hits included: they are what the program asked for)."""

    def __init__(self) -> None:
        self.calls = 0

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        self.calls += 1


def instructions_of(program: dspy.Module) -> dict[str, str]:
    """Instructions of every named predictor."""
    return {name: pred.signature.instructions for name, pred in program.named_predictors()}


def set_instructions(program: dspy.Module, texts: dict[str, str]) -> None:
    """Replace signatures (never mutate them: copies share Signature classes)."""
    for name, pred in program.named_predictors():
        if name in texts:
            pred.signature = pred.signature.with_instructions(texts[name])


def prompt_length(texts: dict[str, str]) -> int:
    return sum(len(t) for t in texts.values())


class BinEvalOptimizer(Teleprompter):
    """Optimizes a program's instructions from BinEval question-level feedback.

    ``feedback`` decides the mode: ``SelfUpdateFeedback`` (generator prompts: failing questions) or
    ``CrossModelFeedback`` (a judge prompt on a target LM: disagreements with a reference). With the bloat
    guard on (default) the returned program never scores below the student on the valset.
    """

    def __init__(
        self,
        feedback: FeedbackSource,
        *,
        note_taker: NoteTaker | None = None,
        updater: PromptUpdater | None = None,
        bank: LessonBank | None = None,
        max_iterations: int = 4,
        patience: int = 2,
        min_delta: float = 0.01,
        target_score: float | None = None,
        epsilon: float = 0.05,
        max_chars: int = 4000,
        max_growth: float = 4.0,
        min_allowance: int = 400,
        lessons_per_iteration: int = 3,
        max_failures: int = 16,
        bloat_guard: bool = True,
        target_predictor: str | None = None,
        run_dir: str | Path | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.feedback = feedback
        self.note_taker = note_taker or NoteTaker()
        self.updater = updater or PromptUpdater()
        self.bank = bank or LessonBank()
        self.max_iterations = max_iterations
        self.patience = patience
        self.min_delta = min_delta
        self.target_score = target_score
        self.epsilon = epsilon
        self.max_chars = max_chars
        self.max_growth = max_growth
        self.min_allowance = min_allowance
        self.lessons_per_iteration = lessons_per_iteration
        self.max_failures = max_failures
        self.bloat_guard = bloat_guard
        self.target_predictor = target_predictor
        self.run_dir = Path(run_dir) if run_dir else None
        self.seed = seed

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
        self._counter = CallCounter()
        state = self._load() or self._fresh_state(program, valset)
        self.bank = LessonBank.from_json(state["bank"], threshold=self.bank.threshold, embed=self.bank.embed) if state["bank"] else self.bank
        set_instructions(program, state["best"]["instructions"])
        while state["stopped"] is None:
            self._iterate(state, program, trainset, valset)
        set_instructions(program, state["best"]["instructions"])
        if self.run_dir:
            program.save(str(self.run_dir / PROGRAM_FILE))
        program.audit = state
        program.lesson_bank = self.bank
        program._compiled = True
        console.print(f"optimizer stopped: {state['stopped']} (held-out {state['start']['val']['score']:.3f} -> {state['best']['val_score']:.3f})")
        return program

    # -- state and audit ------------------------------------------------------------------------------
    def _fresh_state(self, program: dspy.Module, valset: Sequence[dspy.Example]) -> dict:
        texts = instructions_of(program)
        start_val = self._measured(lambda: self.feedback.evaluate(program, valset))
        state = {
            "mode": self.feedback.mode,
            "settings": self.get_params_summary(),
            "start": {"instructions": texts, "prompt_chars": prompt_length(texts), "val": start_val[0].summary(), **start_val[1]},
            "best": {"instructions": texts, "val_score": start_val[0].score, "val": start_val[0].summary(), "iteration": 0},
            "iterations": [],
            "bank": [],
            "stale": 0,
            "stopped": None,
        }
        self._save(state)
        return state

    def get_params_summary(self) -> dict:
        keys = ("max_iterations", "patience", "min_delta", "target_score", "epsilon", "max_chars", "max_growth",
                "min_allowance", "lessons_per_iteration", "max_failures", "bloat_guard", "seed")
        return {k: getattr(self, k) for k in keys} | {"dedup_threshold": self.bank.threshold}

    def _load(self) -> dict | None:
        if self.run_dir is None or not (self.run_dir / AUDIT_FILE).exists():
            return None
        state = json.loads((self.run_dir / AUDIT_FILE).read_text())
        console.print(f"resuming {self.run_dir}: {len(state['iterations'])} iteration(s) recorded")
        return state

    def _save(self, state: dict) -> None:
        state["bank"] = self.bank.to_json()
        if self.run_dir is None:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.run_dir / (AUDIT_FILE + ".tmp")
        tmp.write_text(json.dumps(state, indent=2, ensure_ascii=False))
        tmp.replace(self.run_dir / AUDIT_FILE)  # atomic: a kill never leaves a half-written audit

    def _measured(self, work):
        """Run ``work`` counting LM calls and tokens."""
        before = self._counter.calls
        with dspy.context(callbacks=[*dspy.settings.callbacks, self._counter]), dspy.track_usage() as usage:
            result = work()
        tokens = sum(
            int(u.get("prompt_tokens") or 0) + int(u.get("completion_tokens") or 0) for u in usage.get_total_tokens().values()
        )
        return result, {"lm_calls": self._counter.calls - before, "tokens": tokens}

    # -- one iteration, step by step (each step checkpoints) -------------------------------------------
    def _iterate(self, state: dict, program: dspy.Module, trainset, valset) -> None:
        if not state["iterations"] or "decision" in state["iterations"][-1]:
            state["iterations"].append({"iteration": len(state["iterations"]) + 1, "lm_calls": 0, "tokens": 0})
        record = state["iterations"][-1]
        number = record["iteration"]
        best_texts = state["best"]["instructions"]
        if "train" not in record:
            set_instructions(program, best_texts)
            evaluation, cost = self._measured(lambda: self.feedback.evaluate(program, trainset))
            failures = self._sample(evaluation.failures, number)
            record.update(train=evaluation.summary(), failures=[_stored(f) for f in failures])
            self._charge(record, cost)
            self._save(state)
            console.print(f"iteration {number}: train score {evaluation.score:.3f}, {len(evaluation.failures)} failure(s)")
        if not record["failures"]:
            return self._stop(state, record, "no failures left on the trainset")
        if "selected" not in record:
            lessons, cost = self._measured(lambda: self._take_notes(record["failures"], best_texts[self._target]))
            merged = [self.bank.add(lesson).id for lesson in lessons]
            selected = self._select(set(merged), best_texts[self._target])
            record.update(
                lessons_new=[lesson.model_dump() for lesson in lessons],
                lessons_after_dedup=sorted(set(merged)),
                note_errors=len(record["failures"]) - len(lessons),
                selected=[lesson.id for lesson in selected],
            )
            self._charge(record, cost)
            self._save(state)
        if not record["selected"]:
            return self._stop(state, record, "no new lessons to apply")
        if "edits" not in record:
            (texts, edits), cost = self._measured(lambda: self._edit(best_texts, record["selected"]))
            record.update(edits=edits, candidate_instructions=texts, prompt_chars=prompt_length(texts))
            self._charge(record, cost)
            self._save(state)
        set_instructions(program, record["candidate_instructions"])
        evaluation, cost = self._measured(lambda: self.feedback.evaluate(program, valset))
        self._charge(record, cost)
        record["val"] = evaluation.summary()
        self._decide(state, record, evaluation)
        self._save(state)

    def _charge(self, record: dict, cost: dict) -> None:
        record["lm_calls"] += cost["lm_calls"]
        record["tokens"] += cost["tokens"]

    def _sample(self, failures: list[Failure], iteration: int) -> list[Failure]:
        """At most ``max_failures``, chosen reproducibly, so one iteration's note-taking cost is bounded."""
        if len(failures) <= self.max_failures:
            return failures
        return random.Random(self.seed * 1000 + iteration).sample(failures, self.max_failures)

    def _take_notes(self, failures: list[dict], instructions: str) -> list[Lesson]:
        lessons = []
        for failure in failures:
            try:
                lessons.append(self.note_taker(failure=Failure(**failure), instructions=instructions))
            except Exception as exc:  # one unusable note must not end the run; it is counted in the audit
                console.print(f"[yellow]note-taker failed on {failure['id']}: {one_line(exc)}[/]")
        return lessons

    def _select(self, touched: set[str], instructions: str) -> list[Lesson]:
        """Lessons this iteration produced or reinforced, not yet applied nor retired nor already stated
        in the instructions, by support."""
        present = normalize(instructions)
        fresh = [
            lesson
            for lesson in self.bank.active()
            if lesson.id in touched and not lesson.applied and normalize(lesson.text) not in present
        ]
        return fresh[: self.lessons_per_iteration]

    def _edit(self, texts: dict[str, str], lesson_ids: list[str]) -> tuple[dict[str, str], list[dict]]:
        by_id = {lesson.id: lesson for lesson in self.bank.lessons}
        current = dict(texts)
        edits = []
        for lesson_id in lesson_ids:
            current[self._target], edit = self.updater(instructions=current[self._target], lesson=by_id[lesson_id])
            edits.append(edit.model_dump())
        return current, edits

    def _budget(self, state: dict) -> int:
        start = state["start"]["prompt_chars"]
        return int(min(self.max_chars, max(start * self.max_growth, start + self.min_allowance)))

    def _decide(self, state: dict, record: dict, evaluation: Evaluation) -> None:
        best = state["best"]
        length, budget = record["prompt_chars"], self._budget(state)
        gain = evaluation.score - best["val_score"]
        problems = []
        if length > budget:
            problems.append(f"prompt length {length} over budget {budget}")
        if gain < self.min_delta:
            problems.append(f"held-out gain {gain:+.3f} below min_delta {self.min_delta}")
        if not self.bloat_guard:
            accepted, reason = True, f"no bloat guard: kept (held-out {gain:+.3f}, {length} chars)"
        elif problems:
            accepted, reason = False, "; ".join(problems)
        else:
            accepted, reason = True, f"held-out gain {gain:+.3f} within budget ({length}/{budget} chars)"
        record["decision"] = {"accepted": accepted, "reason": reason}
        if accepted:
            self.bank.mark_applied(record["selected"])
            state["best"] = {"instructions": record["candidate_instructions"], "val_score": evaluation.score, "val": evaluation.summary(), "iteration": record["iteration"]}
            state["stale"] = 0
        else:
            self.bank.retire(record["selected"])
            state["stale"] += 1
        console.print(f"iteration {record['iteration']}: held-out {evaluation.score:.3f}, {'accepted' if accepted else 'rolled back'}: {reason}")
        state["stopped"] = self._stopping_reason(state, record)

    def _stopping_reason(self, state: dict, record: dict) -> str | None:
        best = state["best"]
        if self.target_score is not None and best["val_score"] >= self.target_score:
            return f"target score {self.target_score} reached"
        gaps = best["val"].get("dimension_gaps") or {}
        if self.feedback.mode == "cross" and gaps and max(gaps.values()) < self.epsilon:
            return f"every dimension gap below epsilon {self.epsilon}"
        if self.bloat_guard and state["stale"] >= self.patience:
            return f"patience {self.patience} exhausted"
        if record["iteration"] >= self.max_iterations:
            return f"max iterations {self.max_iterations}"
        return None

    def _stop(self, state: dict, record: dict, reason: str) -> None:
        record["decision"] = {"accepted": False, "reason": reason}
        state["stopped"] = reason
        self._save(state)


def _stored(failure: Failure) -> dict:
    """A failure as kept in the audit: long texts are cut so the audit stays readable."""
    data = failure.model_dump()
    for key in ("input", "output", "explanation"):
        data[key] = data[key][:MAX_STORED_TEXT]
    return data
