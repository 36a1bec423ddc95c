"""Held-out test results of an optimizer run: the start and the final program on the test split, side by side.

The test split is never seen by the loop (train makes candidates, val decides them); it is scored once at the end
(and, with ``test_every``, for the best program after every accepted step, read back from the audit). Every figure
comes with a 95% interval from the shared bootstrap over test items' groups, and the difference of two programs
is paired: the same resampled items for both. Suites graded by code also get strict and loose prompt- and
instruction-level accuracy, computed exactly as ``bineval verify`` computes them from the same responses.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import dspy
import numpy as np
from pydantic import BaseModel, Field

from bineval_dspy.core.jsonio import load_model, write_text_atomic
from bineval_dspy.lm.usage import Cost
from bineval_dspy.optimize.audit import Audit, ItemResult
from bineval_dspy.optimize.feedback import Evaluation, FeedbackSource
from bineval_dspy.programs.state import Demos, ProgramFile, set_state
from bineval_dspy.runs.kinds import RUN_KINDS
from bineval_dspy.stats.bootstrap import Bootstrap, Interval, Statistic, difference_of, mean_of, ratio_of
from bineval_dspy.stats.classification import auroc_statistic, balanced_accuracy_statistic, kappa_statistic
from bineval_dspy.suites.grading import grade
from bineval_dspy.suites.rows import SuiteRow

RESULTS_FILE = "results.json"
MEASURES = ("strict_prompt", "strict_instruction", "loose_prompt", "loose_instruction")
# what a reply's text is like beside its accuracy (suites): strict pass rate of the instructions decoding would not
# enforce from the prompt's words (``enforce = "extracted"``), the share of degenerate replies, the mean words and,
# where the scorer embeds (``TestScorer.relevance``), the MiniLM cosine between prompt and reply: whether it still
# answers the prompt
QUALITY = ("unenforced_instruction", "degenerate", "words", "relevance")


class SplitScore(BaseModel):
    """One program on the test split: its score (the optimizer's own measure) with interval, per dimension, and
    for suites the four accuracies, for judges Cohen's kappa with the reference."""

    score: float
    interval: Interval
    items: int
    unanswered: int = 0
    errors: int = 0
    dimension_scores: dict[str, float] = Field(default_factory=dict)
    accuracy: dict[str, Interval] = Field(default_factory=dict)
    kappa: Interval | None = None
    balanced_accuracy: Interval | None = None  # judges: the mean of the yes and no recalls (an always-yes judge: 0.5)
    auroc: Interval | None = None  # judges that read P(yes) on every item: how well it ranks the reference's yes over no
    quality: dict[str, Interval] = Field(default_factory=dict)  # suites: see QUALITY
    item_scores: dict[str, float] = Field(default_factory=dict)  # per item (suite key, or question), for checks by item
    followed: dict[str, bool | None] = Field(default_factory=dict)  # suites: strict, every instruction followed (None: ungraded)


class StepScore(BaseModel):
    """The best program after an accepted iteration, on test, and its paired difference from the start (the score
    and, for suites, each accuracy)."""

    iteration: int
    score: float
    difference: Interval
    accuracy_difference: dict[str, Interval] = Field(default_factory=dict)


class TestResults(BaseModel):
    """Start and final program on test; ``difference`` = final - start, paired over test items."""

    start: SplitScore
    final: SplitScore
    final_iteration: int
    difference: Interval
    accuracy_difference: dict[str, Interval] = Field(default_factory=dict)
    kappa_difference: Interval | None = None
    balanced_accuracy_difference: Interval | None = None
    auroc_difference: Interval | None = None
    steps: list[StepScore] = Field(default_factory=list)


@RUN_KINDS.writes("optimizer-test", legacy=({"splits", "test"},))
class RunResults(BaseModel):
    """``RUN_DIR/results.json``: the split sizes and the test comparison, with what scoring the test split cost."""

    splits: dict[str, int]
    test: TestResults | None = None
    usage: Cost = Field(default_factory=Cost)

    @property
    def complete(self) -> bool:
        """No unanswered verdict and no failed output in the test evaluation (none run: complete)."""
        test = self.test
        return test is None or not (test.start.unanswered or test.final.unanswered or test.final.errors)

    def save(self, run_dir: Path) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_text_atomic(run_dir / RESULTS_FILE, self.model_dump_json(indent=2))

    @classmethod
    def load(cls, run_dir: Path) -> RunResults:
        return load_model(run_dir / RESULTS_FILE, cls)


State = tuple[dict[str, str], Demos, dict[str, float]]


def states(audit: Audit) -> list[tuple[int, State]]:
    """The start and the best program after every accepted iteration, replayed from the audit."""
    current: State = (audit.start.instructions, audit.start.demos, audit.start.thresholds)
    out = [(0, current)]
    for record in audit.iterations:
        if record.decision is None or not record.decision.accepted or record.candidate is None:
            continue
        current = (record.candidate.instructions, record.candidate.demos, record.candidate.thresholds)
        out.append((record.iteration, current))
    return out


def item_accuracy(items: Sequence[ItemResult], rows: dict[str, SuiteRow]) -> dict[str, tuple[list[float], list[float]]]:
    """Per measure, (numerator, denominator) per item, as ``verify`` counts them: prompt level = all followed over
    prompts with a known outcome; instruction level = followed over graded instructions; a failed generation (no
    output) counts nowhere, as a suite row without a response."""
    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in MEASURES}
    for item in items:
        graded = {mode: grade(rows[item.id], item.output, mode) for mode in ("strict", "loose")} if item.output is not None else None
        for mode in ("strict", "loose"):
            result = graded[mode] if graded else None
            follows = result.follow_instruction_list if result else []
            prompt_num, prompt_den = out[f"{mode}_prompt"]
            outcome = result.follow_all_instructions if result is not None else None
            prompt_num.append(float(outcome is True))
            prompt_den.append(float(outcome is not None))
            instr_num, instr_den = out[f"{mode}_instruction"]
            instr_num.append(float(sum(x is True for x in follows)))
            instr_den.append(float(sum(x is not None for x in follows)))
    return out


def item_quality(
    items: Sequence[ItemResult], rows: dict[str, SuiteRow], cosines: dict[tuple[str, str], float] | None = None
) -> dict[str, tuple[list[float], list[float]]]:
    """Per ``QUALITY`` measure, (numerator, denominator) per item; a failed generation counts nowhere. ``cosines``
    (prompt, reply) -> their cosine: the relevance measure, left out without it."""
    from bineval_dspy.checklists.stated import enforcement_plan
    from bineval_dspy.core.degenerate import degenerate_text
    from bineval_dspy.core.text import word_runs

    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in QUALITY if name != "relevance" or cosines is not None}
    for item in items:
        row, text = rows[item.id], item.output
        shown = text is not None
        enforced = {d.instruction_id for d in enforcement_plan(row.prompt, "extracted").enforced} if shown else set()
        result = grade(row, text, "strict") if text is not None else None
        free = [f for i, f in zip(row.instruction_id_list, result.follow_instruction_list if result else []) if i not in enforced and f is not None]
        values = {
            "unenforced_instruction": (float(sum(free)), float(len(free))),
            "degenerate": (float(shown and degenerate_text(text or "") is not None), float(shown)),
            "words": (float(len(word_runs(text or ""))), float(shown)),
        }
        if cosines is not None:
            values["relevance"] = (cosines[(row.prompt, text)] if text is not None else 0.0, float(shown))
        for name, (num, den) in values.items():
            out[name][0].append(num)
            out[name][1].append(den)
    return out


def _kappa_statistic(items: Sequence[ItemResult]) -> Statistic | None:
    """Kappa over the answered items (an unanswered verdict has weight 0), or None without a reference."""
    if not items or any(item.reference is None for item in items):
        return None
    pairs = [(item.answer or "unanswered", item.reference or "") for item in items]
    answered = np.array([float(a != "unanswered") for a, _ in pairs])
    inner = kappa_statistic([(a if a != "unanswered" else "no", r) for a, r in pairs])
    return lambda weights: inner(weights * answered)


def _judge_statistics(items: Sequence[ItemResult]) -> dict[str, Statistic]:
    """Balanced accuracy (an unanswered verdict is wrong) and, when every item has a P(yes), AUROC."""
    references = [item.reference or "" for item in items]
    out = {"balanced_accuracy": balanced_accuracy_statistic([item.answer or "unanswered" for item in items], references)}
    if all(item.p_yes is not None for item in items):
        out["auroc"] = auroc_statistic([item.p_yes or 0.0 for item in items], references)
    return out


class TestScorer:
    """Scores program states on the test split with the run's feedback source; each state once."""

    def __init__(
        self, feedback: FeedbackSource, student: dspy.Module, test: Sequence[dspy.Example], *, resamples: int = 1000, seed: int = 0,
        confidence: float = 0.95, rows: dict[str, SuiteRow] | None = None,
    ) -> None:
        self.feedback = feedback
        self.student = student
        self.test = list(test)
        self.rows = rows
        self.resamples, self.seed, self.confidence = resamples, seed, confidence
        self._memo: dict[str, Evaluation] = {}
        self._boot: Bootstrap | None = None
        self.relevance = False  # suites: also the prompt-reply cosine (MiniLM, or the process's ``use_embedder``)
        self._cosines: dict[tuple[str, str], float] = {}

    def evaluation(self, state: State, label: str, student: dspy.Module | None = None) -> Evaluation:
        """The student (this scorer's, or ``student``) in ``state`` on test; each program evaluated once."""
        program = (student or self.student).deepcopy()
        set_state(program, *state)
        key = ProgramFile.of(program).model_dump_json()
        if key not in self._memo:
            self._memo[key] = self.evaluate(program, label)
        return self._memo[key]

    def evaluate(self, program: dspy.Module, label: str) -> Evaluation:
        """Any program on test, with the run's feedback."""
        return self.feedback.evaluate(program, self.test, label=f"  test: {label}")

    def bootstrap(self, evaluation: Evaluation) -> Bootstrap:
        """One set of draws over the test items' groups, shared by every state (items come in test order)."""
        if self._boot is None:
            self._boot = Bootstrap([item.group for item in evaluation.items], self.resamples, self.seed, self.confidence)
        return self._boot

    def statistics(self, evaluation: Evaluation) -> dict[str, Statistic]:
        """Every reported statistic of one evaluation, as functions of the shared item weights."""
        items = evaluation.items
        out: dict[str, Statistic] = {"score": mean_of([item.score for item in items])}
        if self.rows is not None:
            cosines = self.cosines(items) if self.relevance else None
            for name, (num, den) in {**item_accuracy(items, self.rows), **item_quality(items, self.rows, cosines)}.items():
                out[name] = ratio_of(num, den)
        kappa = _kappa_statistic(items)
        if kappa is not None:
            out["kappa"] = kappa
            out.update(_judge_statistics(items))
        return out

    def cosines(self, items: Sequence[ItemResult]) -> dict[tuple[str, str], float]:
        """The cosine of each (prompt, reply) pair of ``items`` (failed outputs left out), each pair embedded once."""
        from bineval_dspy.core.embeddings import default_embedder, unit_rows

        assert self.rows is not None
        pairs = {(self.rows[item.id].prompt, item.output) for item in items if item.output is not None}
        todo = sorted(pair for pair in pairs if pair not in self._cosines)
        if todo:
            vectors = unit_rows(default_embedder()([text for pair in todo for text in pair]))
            for k, pair in enumerate(todo):
                self._cosines[pair] = float(vectors[2 * k] @ vectors[2 * k + 1])
        return self._cosines

    def score(self, evaluation: Evaluation) -> SplitScore:
        boot, stats = self.bootstrap(evaluation), self.statistics(evaluation)
        return SplitScore(
            score=evaluation.score,
            interval=boot.interval(stats["score"]),
            items=len(evaluation.items),
            unanswered=evaluation.unanswered,
            errors=evaluation.errors,
            dimension_scores=evaluation.dimension_scores,
            accuracy={name: boot.interval(stats[name]) for name in MEASURES if name in stats},
            quality={name: boot.interval(stats[name]) for name in QUALITY if name in stats},
            kappa=boot.interval(stats["kappa"]) if "kappa" in stats else None,
            balanced_accuracy=boot.interval(stats["balanced_accuracy"]) if "balanced_accuracy" in stats else None,
            auroc=boot.interval(stats["auroc"]) if "auroc" in stats else None,
            item_scores={item.id: item.score for item in evaluation.items},
            followed=self._followed(evaluation),
        )

    def _followed(self, evaluation: Evaluation) -> dict[str, bool | None]:
        """Per test prompt, verify's strict ``follow_all_instructions`` (suites only; failed generations left out)."""
        if self.rows is None:
            return {}
        return {item.id: grade(self.rows[item.id], item.output, "strict").follow_all_instructions for item in evaluation.items if item.output is not None}

    def steps(self, audit: Audit, start: Evaluation, student: dspy.Module | None = None) -> list[StepScore]:
        """The best program after each accepted iteration of ``audit`` on test, against ``start``."""
        out = []
        for iteration, state in states(audit)[1:]:
            evaluation = self.evaluation(state, f"iteration {iteration}", student)
            out.append(StepScore(
                iteration=iteration, score=evaluation.score, difference=self.difference(evaluation, start),
                accuracy_difference={name: self.difference(evaluation, start, name) for name in self.statistics(evaluation) if name in MEASURES},
            ))
        return out

    def difference(self, after: Evaluation, before: Evaluation, name: str = "score") -> Interval:
        boot = self.bootstrap(before)
        return boot.interval(difference_of(self.statistics(after)[name], self.statistics(before)[name]))


def judge_differences(scorer: TestScorer, after: Evaluation, before: Evaluation) -> dict[str, Interval]:
    """The paired differences of the judge statistics both evaluations have (balanced accuracy, AUROC)."""
    both = set(scorer.statistics(after)) & set(scorer.statistics(before))
    return {f"{name}_difference": scorer.difference(after, before, name) for name in ("balanced_accuracy", "auroc") if name in both}


def score_test(scorer: TestScorer, audit: Audit, *, every_step: bool = False) -> TestResults:
    """Start and final (and with ``every_step`` each accepted step's best) program on test, with paired intervals."""
    replayed = states(audit)
    start = scorer.evaluation(replayed[0][1], "start")
    final_state: State = (audit.best.instructions, audit.best.demos, audit.best.thresholds)
    final = scorer.evaluation(final_state, "final")
    steps = scorer.steps(audit, start) if every_step else []
    final_score = scorer.score(final)
    return TestResults(
        start=scorer.score(start),
        final=final_score,
        final_iteration=audit.best.iteration,
        difference=scorer.difference(final, start),
        accuracy_difference={name: scorer.difference(final, start, name) for name in final_score.accuracy},
        kappa_difference=scorer.difference(final, start, "kappa") if final_score.kappa is not None else None,
        **judge_differences(scorer, final, start),
        steps=steps,
    )
