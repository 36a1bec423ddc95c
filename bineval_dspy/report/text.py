"""Any run the library writes, as text on the console (80 columns are enough): what ``bineval show`` prints, and
``show_run`` from Python.

The same runs as ``bineval report`` reads (``report.runs.load_runs``), in brief: judge output, meta-evaluations,
optimizer runs (trajectory and first-vs-final prompt diff), analyses, tune studies, experiments, calibrations and
fine-tuning's samples. Text from data is printed
as text (``Text``, ``markup=False``): a bracket in a question or a reason is never read as console markup, and a
control character (ANSI, OSC) is shown escaped, never sent to the terminal.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table
from rich.text import Text

from bineval_dspy.core.console import console, shown
from bineval_dspy.core.terminal import printable
from bineval_dspy.runs.kinds import RUN_KINDS

if TYPE_CHECKING:  # plotly, Optuna and DSPy load when a run is shown, never for the parser
    from bineval_dspy.analysis.phi import PhiReport
    from bineval_dspy.analysis.pruning import PruningReport
    from bineval_dspy.analysis.weights import WeightsReport
    from bineval_dspy.experiment.grid import GridCell
    from bineval_dspy.lm.usage import Cost
    from bineval_dspy.optimize.audit import EvalSummary
    from bineval_dspy.optimize.results import TestResults
    from bineval_dspy.report.runs import (
        AnalysisRun,
        CalibrationRun,
        ExperimentRun,
        FinetuneRun,
        JudgedRows,
        LoadedRun,
        LogRun,
        OptimizerRun,
        TuneRun,
    )

WORST = 10  # outputs listed for a judge run, lowest overall score first


def _say(text: str) -> None:
    console.print(text, markup=False, highlight=False)


def _spend(cost: Cost) -> None:
    from bineval_dspy.report.pages import amount
    from bineval_dspy.report.spend import spend_entries

    entries = spend_entries(cost)
    if entries:
        _say("cost: " + ", ".join(f"{key} {amount(value)}" for key, value in entries.items()))


def _table(title: str, *columns: str, left: tuple[str, ...] = (), wrap: tuple[str, ...] = ()) -> Table:
    """A compact table; only the ``wrap`` columns (long text) wrap, so numbers and names stay on one line."""
    table = Table(title=Text(printable(title)), title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for column in columns:
        table.add_column(column, justify="left" if column in left else "right", overflow="fold", no_wrap=column not in wrap)
    return table


def _row(table: Table, *cells: object) -> None:
    table.add_row(*(Text(printable(str(cell))) for cell in cells))


# -- judge output --------------------------------------------------------------------------------------------------
@RUN_KINDS.shows("judge", "generate", "verify", "demo")
def show_judge(run: JudgedRows) -> None:
    """Mean scores, pass rate per question, and the lowest-scoring outputs."""
    from bineval_dspy.report.pages import number
    from bineval_dspy.report.stats import dimension_means, question_rates

    cards = [row.card for row in run.rows]
    judges = sorted({card.judge.model for card in cards if card.judge is not None})
    _say(f"{len(cards)} output(s), {sum(len(c.verdicts) for c in cards)} verdict(s), {sum(c.unanswered for c in cards)} unanswered; judge: {', '.join(judges) or '-'}")
    if run.task:
        _say(f"task: {run.task}")
    if (degenerate := run.degenerate) is not None:
        console.print(degenerate.message(), style="yellow", markup=False, highlight=False, soft_wrap=True)
    if run.probe_head is not None:
        console.print(run.probe_head, style="yellow" if "AT CHANCE" in run.probe_head else None, markup=False, highlight=False, soft_wrap=True)
    if (repeats := run.repeats.summary()) is not None:
        _say(repeats.line())
        texts = {v.question_id: v.question or v.question_id for row in run.rows for v in row.card.verdicts}
        for qid, rate, asked in run.repeats.flip_rates()[:WORST]:
            _say(f"  flipped on {rate:.2f} of {asked} row(s): {texts.get(qid, qid)}")
    if run.enforcement is not None:  # `generate --enforce` output: its summary line, "enforced nothing" first when so
        console.print(run.enforcement.line(), style="yellow" if run.enforcement.nothing else None, markup=False, highlight=False, soft_wrap=True)
    _spend(run.spend)
    means = _table("mean scores", "dimension", "mean", "lowest", "highest", "scored", "no score", left=("dimension",), wrap=("dimension",))
    for m in dimension_means(cards):
        _row(means, m.dimension, number(m.mean, 2), number(m.low, 2), number(m.high, 2), m.scored, m.unscored)
    console.print(means)
    rates = _table("pass rate per question", "dimension", "question", "yes", "no", "unans.", "rate", left=("dimension", "question"), wrap=("dimension", "question"))
    for r in question_rates(cards):
        _row(rates, r.dimension, r.text, r.yes, r.no, r.unanswered, number(r.rate, 2))
    console.print(rates)
    worst = sorted(run.rows, key=lambda row: -1.0 if row.card.overall is None else row.card.overall)[:WORST]
    outputs = _table(f"lowest overall first ({len(worst)} of {len(run.rows)})", "output", "overall", "yes", "no", "unans.", left=("output",), wrap=("output",))
    for row in worst:
        answers = [v.answer for v in row.card.verdicts]
        _row(outputs, row.id, number(row.card.overall, 2), answers.count("yes"), answers.count("no"), answers.count("unanswered"))
    console.print(outputs)


# -- optimizer runs ------------------------------------------------------------------------------------------------
def _score(summary: EvalSummary | None) -> str:
    return "-" if summary is None else f"{summary.score:.2f}"


@RUN_KINDS.shows("optimizer-audit", "optimizer-test")
def show_optimizer(run: OptimizerRun) -> None:
    """Held-out score and prompt length per iteration, accepted or not and why, then the prompt diff."""
    from bineval_dspy.optimize.unchanged import unchanged_note

    audit = run.audit
    table = _table(f"{audit.mode} mode: {audit.stopped or 'in progress'}", "it", "kind", "train", "held-out", "chars", "lessons", "edits", "calls", "decision", left=("kind", "decision"), wrap=("kind",))
    start = audit.start
    _row(table, 0, "-", "-", _score(start.val), start.prompt_chars, "-", "-", start.lm_calls, "start")
    for it in audit.iterations:
        chars = "-" if it.prompt_chars is None else it.prompt_chars
        lessons = f"{len(it.lessons_new or [])}->{len(it.selected or [])}"
        _row(table, it.iteration, it.kind, _score(it.train), _score(it.val), chars, lessons, len(it.edits or []), it.lm_calls, it.outcome)
    console.print(table)
    _spend(run.spend)
    if audit.steering is not None:  # chosen before the iterations
        for trial in audit.steering.candidates:
            _say(f"steering {trial.settings.label}: held-out {_score(trial.val)}" + (f", {trial.decision.reason}" if trial.decision is not None else ""))
        _say(f"steering chosen: {audit.steering.reason or 'in progress'}")
    if run.plan is not None:  # the test evaluation is in the plan, and spent apart from the loop
        _say(run.plan.against(run.spend if run.results is None else run.spend + run.results.usage))
    for it in audit.iterations:
        if it.decision is not None:
            _say(f"iteration {it.iteration}: {it.decision.reason}")
        if it.lessons_discarded:
            _say(f"  {len(it.lessons_discarded)} drafted lesson(s) discarded, {it.rule_lessons or 0} verifier rule(s) used instead")
        if it.lessons_skipped:
            first = it.lessons_skipped[0]
            text = first.text if len(first.text) <= 60 else first.text[:59] + "…"
            _say(f"  {len(it.lessons_skipped)} lesson(s) not proposed (each with why in audit.json); \"{text}\": {first.reason}")
    note = unchanged_note(audit)
    if note is not None:  # no candidate accepted: the test difference from the start measures no optimization
        _say(note)
    if audit.best.demos:
        _say("demonstrations kept: " + ", ".join(f"{name} {len(ds)}" for name, ds in audit.best.demos.items()))
    if audit.best.thresholds:
        _say("P(yes) thresholds kept: " + ", ".join(f"{d} {t:.3f}" for d, t in audit.best.thresholds.items()))
    gaps = audit.best.val.dimension_gaps
    if gaps:
        _say("per-dimension |S_d(target) - S_d(reference)| of the final prompt: " + ", ".join(f"{d} {g:.3f}" for d, g in gaps.items()))
    if run.results is not None and run.results.test is not None:
        show_test(run.results.test)
    before, after = audit.start.instructions, audit.best.instructions
    for name in before:
        diff = list(difflib.unified_diff(before[name].splitlines(), after[name].splitlines(), f"{name} (start)", f"{name} (final)", lineterm=""))
        _say(f"{name}: {len(before[name])} -> {len(after.get(name, ''))} chars")
        _say("\n".join(diff) if diff else "(unchanged)")


def show_test(test: TestResults) -> None:
    """Start and final program on the test split, and the paired difference, each with its 95% interval (two
    decimals, to fit 80 columns; ``results.json`` has them all)."""
    table = _table(f"test split ({test.final.items} items; final = iteration {test.final_iteration})", "measure", "start", "final", "final - start", left=("measure",))
    _row(table, "score", test.start.interval.text(2), test.final.interval.text(2), test.difference.text(2, signed=True))
    for name, interval in test.final.accuracy.items():
        _row(table, name.replace("_", " "), test.start.accuracy[name].text(2), interval.text(2), test.accuracy_difference[name].text(2, signed=True))
    if test.final.kappa is not None and test.start.kappa is not None and test.kappa_difference is not None:
        _row(table, "kappa", test.start.kappa.text(2), test.final.kappa.text(2), test.kappa_difference.text(2, signed=True))
    for step in test.steps:
        _row(table, f"after iteration {step.iteration}", "", f"{step.score:.2f}", step.difference.text(2, signed=True))
    console.print(table)


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def print_phi(report: PhiReport, pruning: PruningReport | None) -> None:
    """Per dimension: questions, constant ones, mean |phi|, the most redundant pair and what pruning dropped."""
    from bineval_dspy.analysis.phi import LABELS

    table = Table(title=f"{LABELS[report.statistic]} between the questions of each dimension, over {report.outputs} outputs of {report.source}")
    for column in ("dimension", "questions", "constant", "mean |r|", "most redundant pair", "dropped"):
        table.add_column(column, justify="left" if column in ("dimension", "most redundant pair") else "right")
    for dim in report.dimensions:
        label = {q.id: f"Q{k + 1}" for k, q in enumerate(dim.questions)}
        top = dim.strongest()
        pair = "-" if top is None else f"{label[top.a]}~{label[top.b]} {_number(top.phi)} (n={top.pairs})"
        dropped = [label[c.id] for c in pruning.dropped if c.dimension == dim.dimension] if pruning else []
        constant = sum(q.constant for q in dim.questions)
        table.add_row(dim.dimension, str(len(dim.questions)), str(constant), _number(dim.mean_abs_phi), pair, " ".join(dropped) or "-")
    shown.print(table)
    if pruning is not None:
        print_pruning(pruning)


def print_pruning(pruning: PruningReport) -> None:
    """The pruning rule and what it saved, in one line."""
    shown.print(
        f"pruning at |{pruning.statistic}| > {pruning.threshold:g} (at least {pruning.min_pairs} outputs per pair): "
        f"{pruning.questions_before} -> {pruning.questions_after} questions, LM calls per output "
        f"{pruning.lm_calls_per_output_before} -> {pruning.lm_calls_per_output_after} ({pruning.lm_calls_saved_per_output} saved)"
    )


def print_weights(report: WeightsReport) -> None:
    """Held-out correlation of the weighted and unweighted scores with the reference, then the weights."""
    table = Table(title=f"held-out correlation with the reference ({report.folds}-fold by document)")
    for column in ("dimension", "n", "score", "Spearman\nsummary", "Spearman\ndataset", "Pearson\nsummary", "Pearson\ndataset"):
        table.add_column(column, justify="left" if column in ("dimension", "score") else "right")
    for dim in report.dimensions:
        cv = dim.cross_validation
        if cv is None:
            table.add_row(dim.dimension, str(dim.outputs), "-", *["n/a"] * 4)
            continue
        for name, cell in (("unweighted", cv.unweighted), ("weighted", cv.weighted)):
            values = [cell.summary.spearman, cell.dataset.spearman, cell.summary.pearson, cell.dataset.pearson]
            first = name == "unweighted"
            table.add_row(dim.dimension if first else "", str(dim.outputs) if first else "", name, *[_number(e.value) for e in values], end_section=not first)
    shown.print(table)
    shown.print("weights: " + "; ".join(f"{d.dimension} " + " ".join(f"{q.weight:.2f}" for q in d.questions) for d in report.dimensions))
    for name, why in report.skipped.items():
        console.print(f"{name}: not fitted ({why})", style="yellow")
    if report.unused_references:
        console.print(f"reference dimensions the checklist asks nothing about: {', '.join(report.unused_references)}")


# -- analyses and tune studies -------------------------------------------------------------------------------------
@RUN_KINDS.shows("phi", "pruning", "weights")
def show_analysis(run: AnalysisRun) -> None:
    """What ``bineval analyze`` printed: phi per dimension, the pruning, the weights' cross-validation."""
    _spend(run.spend)
    if run.phi is not None:
        print_phi(run.phi, run.pruning)
    elif run.pruning is not None:
        print_pruning(run.pruning)
    if run.weights is not None:
        print_weights(run.weights)


@RUN_KINDS.shows("tune")
def show_tune(run: TuneRun) -> None:
    """The best trial or the Pareto front, as ``bineval tune`` printed it."""
    from bineval_dspy.tune.report import best_table

    _spend(run.spend)
    console.print(best_table(run.results))


@RUN_KINDS.shows("experiment")
def show_experiment(run: ExperimentRun) -> None:
    """Every arm's test figure with its interval and its paired difference from the baseline (two decimals)."""
    from bineval_dspy.experiment.steered import nothing_enforced

    results = run.results
    main = results.measure.replace("_", " ")
    title = f"{results.name}: {results.splits['test']} test items; {main}, each minus {results.baseline}"
    table = _table(title, "arm", "calls", main, "minus baseline", left=("arm",))
    for arm in results.arms:
        value, diff = results.figures(arm)
        _row(table, arm.name, arm.lm_calls, value.text(2) if value else "n/a", diff.text(2, signed=True) if diff else "-")
    console.print(table)
    for arm in results.arms:
        if arm.selection is not None:
            _say(f"{arm.name}: {arm.selection.text()}")
        if arm.enforcement is not None:  # steered decoding, as generate reports it; an arm that enforced nothing says so
            _say(nothing_enforced(arm.name, arm.enforcement) if arm.enforcement.nothing else f"{arm.name}: {arm.enforcement.text()}")
        if arm.note is not None:  # an optimizer arm that kept its start program: its +0.000 measures no optimization
            _say(f"{arm.name}: {arm.note}")
    if run.grid:
        _show_disagreements(run)
    _spend(run.spend)
    if run.plan is not None:
        _say(run.plan.against(run.spend))


def _show_disagreements(run: ExperimentRun) -> None:
    """The first rows where the columns disagree: each column's score and the checks it missed (the report's
    grid has the outputs)."""
    from bineval_dspy.experiment.grid import disagreeing

    rows = disagreeing(run.grid)
    names = [arm.name for arm in run.results.arms]
    table = _table(f"columns disagree on {len(rows)} of {len(run.grid)} rows (first {min(len(rows), WORST)}; outputs in `bineval report`)", "row", *names, left=("row", *names), wrap=tuple(names))
    for row in rows[:WORST]:
        _row(table, row.id, *(_cell(row.cells.get(name)) for name in names))
    console.print(table)


def _cell(cell: GridCell | None) -> str:
    if cell is None:
        return "-"
    if cell.error:
        return "failed"
    missed = [check.name for check in cell.checks if check.passed is not True]
    score = "incomplete" if cell.score is None else f"{cell.score:.2f}"
    return score + (f" missed {', '.join(missed)}" if missed else "")


# -- calibrations and fine-tuning samples --------------------------------------------------------------------------
@RUN_KINDS.shows("calibration")
def show_calibration(run: CalibrationRun) -> None:
    """What the probe was trained on, and its figures out-of-fold and on the test split, as `bineval calibrate` printed them."""
    from bineval_dspy.report.pages import number

    record, results = run.record, run.results
    _say(f"a probe judge on {record.model}")
    _say(f"trained on {record.rows} row(s) of {len(record.groups)} task(s), {record.yes_share:.0%} yes; labels: {record.labels}")
    tested = (f"test ({results.test_rows} rows)",) if results.test else ()
    table = _table("the head's figures", "figure", f"{record.folds} folds by task", *tested, left=("figure",))
    for name, validation, held_out in run.figures:
        _row(table, name.replace("_", " "), number(validation), *(held_out.text() if held_out else "-" for _ in tested))
    console.print(table)
    if not results.test:
        _say("no test split: the head was not scored on held-out tasks")
    if results.test_majority is not None:
        _say(f"majority baseline on test: always {results.test_majority.answer!r} agrees {results.test_majority.agreement:.3f}")
    if results.standing is not None and results.standing.at_chance:
        console.print(f"AT CHANCE ({results.standing.source}): {'; '.join(results.standing.at_chance)}", style="yellow", markup=False, highlight=False, soft_wrap=True)
    for name, baseline in results.baselines.items():
        _say(baseline.text(name))
    for line in results.curve.lines() if results.curve is not None else []:
        _say(line)


def show_log(run: LogRun) -> None:
    """A run of a kind with no view of its own: its header, then its records' first fields, the first few rows."""
    header = run.header
    _say(f"a {header.kind!r} run, {header.status} (written by version {header.version}): {len(run.records)} record(s)")
    _spend(run.spend)
    columns = run.columns()
    if columns:
        table = _table(f"the first records ({min(len(run.records), WORST)} of {len(run.records)})", *columns, left=tuple(columns), wrap=tuple(columns))
        for record in run.records[:WORST]:
            _row(table, *(str(record.get(name, "")) for name in columns))
        console.print(table)


@RUN_KINDS.shows("finetune-samples")
def show_finetune(run: FinetuneRun) -> None:
    """The samples fine-tuning drew: how many pass, the prompts with the fewest passing, the questions failed most."""
    from bineval_dspy.report.pages import number

    samples = run.samples
    mean = sum(s.score for s in samples) / len(samples) if samples else None
    _say(f"{len(run.prompts)} train prompt(s), {len(samples)} sample(s), {sum(s.passed for s in samples)} passing; mean checklist score {number(mean, 2)}")
    _spend(run.spend)
    fewest = sorted(run.prompts, key=lambda p: sum(s.passed for s in p.samples))[:WORST]
    prompts = _table(f"fewest passing first ({len(fewest)} of {len(run.prompts)})", "prompt", "samples", "passing", "best", "worst", left=("prompt",), wrap=("prompt",))
    for prompt in fewest:
        scores = [s.score for s in prompt.samples]
        _row(prompts, prompt.key, len(scores), sum(s.passed for s in prompt.samples), number(max(scores, default=None), 2), number(min(scores, default=None), 2))
    console.print(prompts)
    failed = run.failed_questions()[:WORST]
    if failed:
        questions = _table("questions failed most", "question", "samples", left=("question",), wrap=("question",))
        for question, count in failed:
            _row(questions, question, count)
        console.print(questions)


def show_run(run: LoadedRun) -> None:
    """The run's title line, then the view its kind's entry holds (``RUN_KINDS``); a log of a kind with no reader of
    its own, its header and first records."""
    from bineval_dspy.report.runs import LogRun, shown_path

    if isinstance(run, LogRun):
        _say(f"== run log: {shown_path(run.source)}")
        show_log(run)
        return
    kind = RUN_KINDS[run.kind]
    if kind.show is None:
        raise RuntimeError(f"run kind {run.kind!r} has a reader but no view")
    _say(f"== {kind.title}: {shown_path(run.source)}")
    kind.show(run)
