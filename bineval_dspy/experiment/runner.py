"""Run an experiment's arms one after another on one split and compare each with the baseline on test.

Every arm's program is scored on the same test items with the run's own feedback (the optimizer's measure) and,
for suites, verify's four accuracies; every interval comes from one set of bootstrap draws over test groups, so
each arm's difference from the baseline is paired. LM calls are counted apart for optimization and for the test
evaluation (where Best-of-N and STICK spend theirs). ``RUN_DIR/results.json`` and ``results.md`` hold the table,
``grid.jsonl`` every test output of every arm side by side, ``matrix.md`` their verdicts row by row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import dspy
from pydantic import BaseModel, Field

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_model, write_text_atomic
from bineval_dspy.experiment.arms import ARMS, ArmContext, LMFactory, Stick, check_inputs, table_lm
from bineval_dspy.experiment.config import ExperimentConfig
from bineval_dspy.experiment.grid import MATRIX_FILE, GridRow, experiment_grid, matrix_markdown, write_grid
from bineval_dspy.experiment.steered import enforcement_lines, enforcement_on_test, nothing_enforced
from bineval_dspy.lm.usage import Cost, measuring, total
from bineval_dspy.optimize.audit import AUDIT_FILE, Audit
from bineval_dspy.optimize.config import build, splits_of, test_scorer
from bineval_dspy.optimize.feedback import Evaluation, FeedbackSource, SelfUpdateFeedback
from bineval_dspy.optimize.results import MEASURES, SplitScore, StepScore, TestScorer, judge_differences
from bineval_dspy.optimize.unchanged import unchanged_note
from bineval_dspy.programs.records import EnforcementSummary, SelectionStats
from bineval_dspy.programs.state import ProgramFile, ProgramState
from bineval_dspy.runs.kinds import RUN_KINDS
from bineval_dspy.stats.bootstrap import Interval

RESULTS_FILE = "results.json"
TABLE_FILE = "results.md"


class Comparison(BaseModel):
    """An arm minus the baseline on the same test items: the score, each accuracy and kappa, paired."""

    score: Interval
    accuracy: dict[str, Interval] = Field(default_factory=dict)
    quality: dict[str, Interval] = Field(default_factory=dict)
    kappa: Interval | None = None
    balanced_accuracy: Interval | None = None
    auroc: Interval | None = None


class ArmResult(BaseModel):
    """One arm: what its optimization and its test evaluation cost, its test scores and its difference from the
    baseline (None for the baseline itself)."""

    name: str
    kind: str
    optimization: Cost
    test_usage: Cost
    test_seconds: float | None = None  # wall time of the test evaluation (LM calls replayed from the cache take none)
    test: SplitScore
    vs_baseline: Comparison | None = None
    prompt_chars: int | None = None
    program: ProgramFile | None = None
    steps: list[StepScore] = Field(default_factory=list)  # with test_every: the best program after each accepted step
    selection: SelectionStats | None = None  # Best-of-N arms: samples drawn, pass@k, selection efficiency on test
    enforcement: EnforcementSummary | None = None  # enforce arms: what steered decoding did on test, as generate says
    note: str | None = None  # optimizer arms that kept their start program: why (``optimize.unchanged``)

    @property
    def lm_calls(self) -> int:
        return self.optimization.lm_calls + self.test_usage.lm_calls


@RUN_KINDS.writes("experiment", spec=ExperimentConfig, legacy=({"arms", "baseline"},))
class ExperimentResults(BaseModel):
    name: str
    mode: str
    splits: dict[str, int]
    baseline: str
    arms: list[ArmResult]

    @property
    def usage(self) -> Cost:
        return total([arm.optimization + arm.test_usage for arm in self.arms])

    @property
    def measure(self) -> str:
        """The figure an arm is read by: strict prompt-level accuracy on a suite, kappa with the reference for a judge."""
        return "strict_prompt" if self.mode == "self" else "kappa"

    def figures(self, arm: ArmResult) -> tuple[Interval | None, Interval | None]:
        """The arm's ``measure`` on test and its paired difference from the baseline (None for the baseline)."""
        comparison = arm.vs_baseline
        if self.measure == "strict_prompt":
            return arm.test.accuracy.get(self.measure), comparison.accuracy.get(self.measure) if comparison else None
        return arm.test.kappa, comparison.kappa if comparison else None

    @property
    def incomplete(self) -> list[str]:
        """Arms whose test evaluation has unanswered verdicts or failed outputs: a rerun retries them."""
        return [arm.name for arm in self.arms if arm.test.unanswered or arm.test.errors]


def recorded_test(program: Path, measure: str) -> tuple[Interval, Path] | None:
    """The test figure ``measure`` (e.g. ``strict_prompt``) the run that wrote ``program`` recorded for it, and the
    file it is in: an optimize run's final program, or the experiment arm (a fine-tuning run's fine-tuned one) whose
    program it is; None where the run recorded none."""
    from bineval_dspy.optimize.results import RunResults
    from bineval_dspy.programs.state import load_program, program_path, run_folder
    from bineval_dspy.runs.files import run_kind

    folder = run_folder(program)
    path = folder / RESULTS_FILE
    if not path.is_file():
        return None
    kind = run_kind(path)  # results written before they carried their kind: by their keys
    if kind == "optimizer-test":
        test = RunResults.load(folder).test
        figure = test.final.accuracy.get(measure) if test is not None else None
    elif kind == "experiment":
        mine = load_program(program_path(program))
        same = [arm for arm in load_model(path, ExperimentResults).arms if arm.program is not None and _same_program(arm.program, mine)]
        figure = same[-1].test.accuracy.get(measure) if same else None
    else:
        figure = None
    return (figure, path) if figure is not None and figure.estimate is not None else None


def _same_program(a: ProgramFile, b: ProgramFile) -> bool:
    """One program: the same state and the same weights (by their digest)."""
    weights = [w.adapter_sha256 if w is not None else None for w in (a.weights, b.weights)]
    return ProgramState.model_validate(a.model_dump(include=set(ProgramState.model_fields))) == ProgramState.model_validate(
        b.model_dump(include=set(ProgramState.model_fields))
    ) and weights[0] == weights[1]


def _prepared(config: ExperimentConfig, lm: dspy.LM, lm_for: LMFactory = table_lm) -> tuple[ArmContext, TestScorer]:
    """The arms' shared context (program, splits, feedback, LM) and the test scorer, the splits saved."""
    student, optimizer, (train, val, test) = build(config, progress=True)
    if not test:
        raise InputError(f"{config.source}: field 'data.test': no group is left for the test split after train ({len(train)}) and val ({len(val)}); give fewer or more data")
    splits_of(config, (train, val, test)).save(config.run_dir)
    scorer = test_scorer(config, student, optimizer, test)
    scorer.resamples = config.resamples
    scorer.relevance = config.mode == "self"  # whether each reply still answers its prompt: the quality table's cosine
    context = ArmContext(config, student, train, val, test, optimizer.feedback, lm, optimization_calls={}, lm_for=lm_for)
    check_inputs(context, config.arms)
    return context, scorer


def optimize_arms(config: ExperimentConfig, lm: dspy.LM, names: Sequence[str], say: Callable[[str], None] = lambda text: None) -> dict[str, Cost]:
    """Only the named arms' optimization, each in its own folder (as ``run_experiment`` resumes it): one job of a
    sweep, beside others on the same run directory; a final ``run_experiment`` scores every arm on test. What each
    arm's optimization spent, by name (an arm whose work is at test time, such as Best-of-N, spends nothing here)."""
    unknown = sorted(set(names) - {arm.name for arm in config.arms})
    if unknown:
        raise InputError(f"{config.source}: no arm named {unknown[0]!r} (arms: {', '.join(arm.name for arm in config.arms)})")
    context, _ = _prepared(config, lm)
    spent = {}
    for arm in (arm for arm in config.arms if arm.name in names):
        say(f"arm {arm.name} ({arm.kind}): optimization only")
        _, spent[arm.name] = ARMS[arm.kind].run(arm, context)
    return spent


def run_experiment(
    config: ExperimentConfig, lm: dspy.LM, say: Callable[[str], None] = lambda text: None, lm_for: LMFactory = table_lm
) -> ExperimentResults:
    """Every arm in order (each resumes from its folder); the table is saved after each arm, so an interrupted
    run shows what finished; ``say`` gets progress lines; ``lm_for`` makes the arms' own LMs (``lm`` judges)."""
    context, scorer = _prepared(config, lm, lm_for)
    test = context.test
    evaluations: dict[str, Evaluation] = {}
    inputs = _inputs(context.feedback, test)
    experiment = ExperimentResults(
        name=config.name, mode=config.mode, splits={"train": len(context.train), "val": len(context.val), "test": len(test)},
        baseline=config.baseline_arm, arms=[],
    )
    for arm in config.arms:
        say(f"arm {arm.name} ({arm.kind})")
        program, cost = ARMS[arm.kind].run(arm, context)
        context.optimization_calls[arm.name] = cost.lm_calls
        context.programs[arm.name] = program
        audit = _audit(context.folder(arm.name))
        started = time.perf_counter()
        with measuring() as measurement:
            if audit is None:
                evaluations[arm.name] = scorer.evaluate(program, arm.name)
            else:  # by state, so the final program and its last accepted step are scored once
                best = (audit.best.instructions, audit.best.demos, audit.best.thresholds)
                evaluations[arm.name] = scorer.evaluation(best, arm.name, student=program)
        state = None if isinstance(program, Stick) else ProgramFile.of(program)  # STICK is no saved program: it runs one
        if state is not None and state.weights is not None:  # written from the run folder, so the results can move
            state.weights = state.weights.relative_to(config.run_dir)
        experiment.arms.append(ArmResult(
            name=arm.name, kind=arm.kind, optimization=cost, test_usage=measurement.cost, test_seconds=round(time.perf_counter() - started, 2),
            test=scorer.score(evaluations[arm.name]), program=state,
            prompt_chars=state.size() if state is not None else None,
            selection=program.selection_stats([str(ex.prompt) for ex in test]) if isinstance(program, Stick) else None,
            enforcement=enforcement_on_test(program, evaluations[arm.name], scorer.rows),
            note=unchanged_note(audit) if audit is not None else None,
        ))
        enforced, note = experiment.arms[-1].enforcement, experiment.arms[-1].note
        if enforced is not None and enforced.nothing:
            say(nothing_enforced(arm.name, enforced))
        if note is not None:
            say(f"arm {arm.name}: {note}")
        if audit is not None and config.test_every and config.baseline_arm in evaluations:
            experiment.arms[-1].steps = scorer.steps(audit, evaluations[config.baseline_arm], student=program)
        _compare(experiment, evaluations, scorer)
        save(experiment, config.run_dir, experiment_grid(evaluations, inputs, scorer.rows))
        say(f"arm {arm.name}: test score {evaluations[arm.name].score:.2f}")
    return experiment


def _inputs(feedback: FeedbackSource, test: Sequence[dspy.Example]) -> dict[str, str]:
    """What each test item's grid row shows as its input: the program's input (self-update) or the judged
    example's input (cross-model)."""
    if isinstance(feedback, SelfUpdateFeedback):
        return {feedback.example_id(ex): str(ex.get(feedback.input_field, "")) for ex in test}
    return {str(ex.get("example_id", "")): str(ex.get("input", "")) for ex in test}


def _audit(folder: Path) -> Audit | None:
    """The optimizer audit an arm left in its folder, if it ran one."""
    return Audit.load(folder) if (folder / AUDIT_FILE).is_file() else None


def _compare(experiment: ExperimentResults, evaluations: dict[str, Evaluation], scorer: TestScorer) -> None:
    """Each finished arm's paired difference from the baseline, once the baseline is done."""
    base = evaluations.get(experiment.baseline)
    for result in experiment.arms:
        if base is None or result.name == experiment.baseline or result.vs_baseline is not None:
            continue
        after = evaluations[result.name]
        result.vs_baseline = Comparison(
            score=scorer.difference(after, base),
            accuracy={name: scorer.difference(after, base, name) for name in result.test.accuracy},
            quality={name: scorer.difference(after, base, name) for name in result.test.quality},
            kappa=scorer.difference(after, base, "kappa") if result.test.kappa is not None else None,
            **{name.removesuffix("_difference"): value for name, value in judge_differences(scorer, after, base).items()},
        )


def save(results: ExperimentResults, run_dir: Path, grid: Sequence[GridRow] = ()) -> None:
    """The results, their table, and with ``grid`` the outputs side by side and the verdicts' matrix."""
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(run_dir / RESULTS_FILE, results.model_dump_json(indent=2))
    write_text_atomic(run_dir / TABLE_FILE, markdown(results) + "\n")
    if grid:
        write_grid(run_dir, grid)
        write_text_atomic(run_dir / MATRIX_FILE, matrix_markdown(grid, summaries(results)))


def summaries(results: ExperimentResults) -> dict[str, str]:
    """Each arm's measure and its paired difference from the baseline, in one cell."""
    cells = {}
    for arm in results.arms:
        value, diff = results.figures(arm)
        cells[arm.name] = (value.text() if value else "n/a") + ("" if diff is None else f"; vs {results.baseline} {diff.text(signed=True)}")
    return cells


def markdown(results: ExperimentResults) -> str:
    """One table: every arm's test figures with intervals and its paired difference from the baseline."""
    self_mode = results.mode == "self"
    main = results.measure
    header = ["arm", "kind", "LM calls (optimize + test)", "score [95% CI]", f"{main} [95% CI]", f"{main} minus {results.baseline} [paired 95% CI]"]
    if self_mode:
        header += ["strict instruction", "loose prompt", "loose instruction", "prompt chars"]
    else:
        header += ["balanced accuracy [95% CI]", "minus baseline [paired]", "AUROC [95% CI]", "minus baseline [paired]"]
    learned = f" ({results.splits['train']} train, {results.splits['val']} val)" if results.splits["train"] or results.splits["val"] else ""
    lines = [
        f"{results.name}: {results.splits['test']} test items{learned}; baseline {results.baseline}",
        "",
        "| " + " | ".join(header) + " |",
        "|" + " --- |" * len(header),
    ]
    for arm in results.arms:
        value, diff = results.figures(arm)
        kind = arm.kind + (" (enforced nothing)" if arm.enforcement is not None and arm.enforcement.nothing else "")
        kind += " (kept its start program)" if arm.note is not None else ""
        cells = [
            arm.name, kind, f"{arm.optimization.lm_calls} + {arm.test_usage.lm_calls}", arm.test.interval.text(),
            value.text() if value else "n/a", diff.text(signed=True) if diff else "—",
        ]
        if self_mode:
            cells += [arm.test.accuracy[name].text() for name in MEASURES[1:]]
            cells.append("—" if arm.prompt_chars is None else str(arm.prompt_chars))
        else:
            versus = arm.vs_baseline
            for name in ("balanced_accuracy", "auroc"):
                own: Interval | None = getattr(arm.test, name)
                paired: Interval | None = getattr(versus, name) if versus is not None else None
                cells += [own.text() if own else "n/a", paired.text(signed=True) if paired else "—"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += enforcement_lines([(arm.name, arm.enforcement) for arm in results.arms])
    noted = [arm for arm in results.arms if arm.note is not None]
    if noted:
        lines += ["", "Optimizer arms that kept their start program:"]
        lines += [f"- {arm.name}: {arm.note}" for arm in noted]
    if self_mode and any(arm.test.quality for arm in results.arms):
        lines += _quality_table(results)
    stepped = [arm for arm in results.arms if arm.steps]
    if stepped:
        lines += ["", f"Optimizer arms after each accepted step, on test (score minus {results.baseline}, paired):"]
        for arm in stepped:
            each = [f"iteration {step.iteration}: {step.difference.text(signed=True)}" for step in arm.steps]
            lines.append(f"- {arm.name}: " + "; ".join(each))
    selecting = [arm for arm in results.arms if arm.selection is not None]
    if selecting:
        lines += ["", "Best-of-N arms on test (pass@k: a passing sample among the first k drawn):"]
        lines += [f"- {arm.name}: {arm.selection.text()}" for arm in selecting if arm.selection is not None]
    return "\n".join(lines)


def _quality_table(results: ExperimentResults) -> list[str]:
    """What the replies are like beside their accuracy: the strict pass rate of instructions decoding does not
    enforce from the prompt's words, the share of degenerate replies (empty, a loop, cut mid-sentence), the MiniLM
    cosine between prompt and reply (does it still answer the prompt), mean words, and the wall seconds per test
    prompt, each arm minus the baseline paired where it has one."""
    lines = [
        "",
        f"Reply quality on test (minus {results.baseline}, paired):",
        "",
        "| arm | unenforced instructions followed | minus baseline | degenerate share | minus baseline | prompt-reply cosine | minus baseline"
        " | mean words | seconds per prompt |",
        "|" + " --- |" * 9,
    ]
    for arm in results.arms:
        cells = [arm.name]
        for name in ("unenforced_instruction", "degenerate", "relevance"):
            own, paired = arm.test.quality.get(name), arm.vs_baseline.quality.get(name) if arm.vs_baseline else None
            cells += [own.text() if own else "n/a", paired.text(signed=True) if paired else "—"]
        words = arm.test.quality.get("words")
        cells.append(f"{words.estimate:.0f}" if words is not None and words.estimate is not None else "n/a")
        per_prompt = arm.test_seconds / arm.test.items if arm.test_seconds is not None and arm.test.items else None
        cells.append("n/a" if per_prompt is None else f"{per_prompt:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines
