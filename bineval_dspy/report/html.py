"""One self-contained HTML file for any runs: tables rendered here, charts drawn in the page by the inlined plotly.js.

Every string in a report comes from data or an LM, so nothing is put into the page unescaped:

* HTML is written by a Jinja2 environment with autoescaping on for every template, and no template marks data
  safe; the only markup passed through is our own stylesheet and scripts and plotly's bundle, checked here to hold
  no ``</script`` or ``<!--`` that could end or confuse their element.
* Data for the scripts (the figures) is one ``application/json`` element written by Jinja's ``tojson``, which
  escapes ``<``, ``>``, ``&`` and ``'`` as ``\\u003c`` ...: no ``</script>`` breakout, no ``<!--``. The page reads it
  with ``JSON.parse``; the scripts build no HTML from strings (text goes in through ``textContent`` only).
* Strings drawn by plotly go through ``figures.plot_text`` (plotly reads a subset of HTML in them).
* A Content-Security-Policy allows only the page's own scripts, by hash, and no network at all: even markup that
  got through could neither run a script nor fetch anything.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from bineval_dspy.core.jsonio import write_text_atomic
from bineval_dspy.core.version import __version__
from bineval_dspy.meta.correlation import Estimate
from bineval_dspy.report import figures
from bineval_dspy.report.compare import RunComparison
from bineval_dspy.report.figures import Figure
from bineval_dspy.report.pages import Row, amount, grid_rows, judge_rows, number
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
    shown_path,
)
from bineval_dspy.report.spend import spend_entries
from bineval_dspy.report.stats import audit_cost, dimension_means, question_rates, trajectory
from bineval_dspy.runs.kinds import RUN_KINDS

ASSETS = files("bineval_dspy.report").joinpath("assets")
FLIPS_SHOWN = 20  # flipped verdicts and most-moved items listed per column of a comparison section


# -- formatting (template filters) ---------------------------------------------------------------------------------
def interval(estimate: Estimate) -> str:
    """A correlation with its bootstrap interval, as results.md writes it."""
    if estimate.value is None:
        return "undefined"
    if estimate.low is None or estimate.high is None:
        return f"{estimate.value:.3f}"
    return f"{estimate.value:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]"


@dataclass(frozen=True)
class DiffLine:
    """One line of a unified diff and how to show it (``add``, ``del``, ``hunk`` or ``same``)."""

    kind: str
    text: str


def diff(before: str, after: str, before_name: str = "before", after_name: str = "after") -> list[DiffLine]:
    """A unified diff of two texts by line (an empty list when they are equal)."""
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), before_name, after_name, lineterm="")
    out = []
    for line in lines:
        kind = "hunk" if line.startswith(("@@", "---", "+++")) else "add" if line.startswith("+") else "del" if line.startswith("-") else "same"
        out.append(DiffLine(kind, line))
    return out


# -- the page ------------------------------------------------------------------------------------------------------
class Charts:
    """The figures of one page, each named by the element that shows it; with ``drawn`` off, none (the page then
    carries no plotly.js, which is most of its size)."""

    def __init__(self, drawn: bool = True) -> None:
        self.figures: dict[str, Figure] = {}
        self.drawn = drawn

    def add(self, figure: Figure) -> str:
        """The figure's element name ('' with charts off: the template leaves it out)."""
        if not self.drawn:
            return ""
        name = f"figure-{len(self.figures) + 1}"
        self.figures[name] = figure
        return name


@dataclass(frozen=True)
class Section:
    """One run of the page: its anchor, kind, heading, and what its macro shows."""

    anchor: str
    kind: str
    macro: str  # the template macro that draws ``view`` (sections.html.j2)
    heading: str
    source: str
    view: dict[str, Any]


@RUN_KINDS.pages("judge", "generate", "verify", "demo", macro="judge")
def _judge_view(run: JudgedRows, charts: Charts) -> dict[str, Any]:
    cards = [row.card for row in run.rows]
    rates = question_rates(cards)
    verdicts = [v for card in cards for v in card.verdicts]
    judges = list(dict.fromkeys(card.judge.model_dump_json(exclude_defaults=True) for card in cards if card.judge is not None))
    texts = {v.question_id: v.question or v.question_id for v in verdicts}
    return {
        "run": run,
        "means": dimension_means(cards),
        "rates": rates,
        "verdicts": len(verdicts),
        "unanswered": sum(card.unanswered for card in cards),
        "degenerate": run.degenerate,
        "repeats": run.repeats.summary(),
        "flips": [(texts.get(qid, qid), rate, rows) for qid, rate, rows in run.repeats.flip_rates()],  # most often first
        "judges": judges,
        "dimensions": list(dict.fromkeys(v.dimension for v in verdicts if v.dimension)),
        "answers": [a for a in ("yes", "no", "unanswered") if any(v.answer == a for v in verdicts)],
        "verdict_judges": list(dict.fromkeys(v.judge for v in verdicts)),
        "questions": list(dict.fromkeys(v.question or v.question_id for v in verdicts)),
        "charts": [charts.add(figures.judge_scores(run)), charts.add(figures.pass_rates(rates, "pass rate per question"))],
    }


@RUN_KINDS.pages("optimizer-audit", "optimizer-test", macro="optimizer")
def _optimizer_view(run: OptimizerRun, charts: Charts) -> dict[str, Any]:
    audit = run.audit
    calls, tokens = audit_cost(audit)
    before, after = audit.start.instructions, audit.best.instructions
    final = {name: diff(before[name], after.get(name, ""), f"{name} (start)", f"{name} (final)") for name in before}
    edits = {
        it.iteration: [(edit, diff(edit.before, edit.after)) for edit in it.edits or []]
        for it in audit.iterations
    }
    lessons = {lesson.id: lesson.text for it in audit.iterations for lesson in it.lessons_new or []}
    lessons.update({lesson.id: lesson.text for lesson in audit.bank})
    steps = trajectory(audit)
    return {
        "run": run,
        "audit": audit,
        "lessons": lessons,
        "steps": steps,
        "calls": calls,
        "tokens": tokens,
        "chart": charts.add(figures.trajectory(steps)),
        "edits": edits,
        "final": final,
    }


@RUN_KINDS.pages("phi", "pruning", "weights", macro="analysis")
def _analysis_view(run: AnalysisRun, charts: Charts) -> dict[str, Any]:
    phi = run.phi
    heatmaps = {d.dimension: charts.add(figures.phi_heatmap(d, phi.statistic)) for d in phi.dimensions if len(d.questions) >= 2} if phi else {}
    texts = {q.id: q.text for d in phi.dimensions for q in d.questions} if phi else {}
    return {
        "run": run,
        "heatmaps": heatmaps,
        "texts": texts,
        "weights_chart": charts.add(figures.weights(run.weights)) if run.weights and run.weights.dimensions else None,
    }


@RUN_KINDS.pages("tune", macro="tune")
def _tune_view(run: TuneRun, charts: Charts) -> dict[str, Any]:
    results = run.results
    return {
        "run": run,
        "results": results,
        "best": {t.number for t in results.best},
        "params": list(dict.fromkeys(k for t in results.trials for k in t.params)),
        "chart": charts.add(figures.tune(results)),
    }


@RUN_KINDS.pages("experiment", macro="experiment")
def _experiment_view(run: ExperimentRun, charts: Charts) -> dict[str, Any]:
    results = run.results
    return {
        "run": run, "results": results, "measures": list(dict.fromkeys(m for arm in results.arms for m in arm.test.accuracy)),
        "grid": run.grid, "grid_columns": [arm.name for arm in results.arms], "disagree": sum(row.disagree for row in run.grid),
        "grid_questions": list(dict.fromkeys(check.name for row in run.grid for cell in row.cells.values() for check in cell.checks)),
    }


@RUN_KINDS.pages("calibration", macro="calibration")
def _calibration_view(run: CalibrationRun, charts: Charts) -> dict[str, Any]:
    curve = run.results.curve
    return {
        "run": run,
        "curve_chart": charts.add(figures.learning_curve(curve)) if curve is not None and any(p.heads for p in curve.points) else None,
        "reliability_chart": charts.add(figures.reliability(curve.reliability)) if curve is not None and curve.reliability else None,
    }


@RUN_KINDS.pages("finetune-samples", macro="finetune")
def _finetune_view(run: FinetuneRun, charts: Charts) -> dict[str, Any]:
    samples = run.samples
    return {
        "run": run, "samples": len(samples), "passing": sum(s.passed for s in samples),
        "mean": sum(s.score for s in samples) / len(samples) if samples else None, "failed": run.failed_questions(),
    }  # fmt: skip


def _section(anchor: str, run: LoadedRun, charts: Charts) -> Section:
    """A run's section: the heading and page view its kind's entry holds (``RUN_KINDS``); a log of a kind with no
    reader of its own, its header and first records."""
    source = shown_path(run.source)
    if isinstance(run, LogRun):
        return Section(anchor, run.kind, "runlog", "run log", source, {"run": run, "columns": run.columns()})
    kind = RUN_KINDS[run.kind]
    if kind.page is None:
        raise RuntimeError(f"run kind {run.kind!r} has a reader but no page view")
    return Section(anchor, run.kind, kind.macro, kind.title, source, kind.page(run, charts))


def section_rows(run: LoadedRun) -> list[Row] | None:
    """The rows of a run's row list (a judge run's scorecards, an experiment's output grid), which the page draws a
    page at a time; None for a run with none."""
    if isinstance(run, JudgedRows):
        return judge_rows(run)
    if isinstance(run, ExperimentRun) and run.grid:
        return grid_rows(run.grid, [arm.name for arm in run.results.arms])
    return None


def anchors(runs: Sequence[LoadedRun]) -> list[str]:
    """Each run's section id on the page, in order (the API names a section by it)."""
    return [f"run-{k}" for k in range(1, len(runs) + 1)]


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: ASSETS.joinpath(name).read_text(encoding="utf-8")),
        autoescape=True,  # every template, whatever its name: data is always escaped
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(number=number, interval=interval, amount=amount, entries=spend_entries)
    return env


def _inline(text: str, element: str = "script") -> str:
    """Our code for an inline ``<script>`` (or ``<style>``): refused if it could end its element early or open an
    HTML comment there."""
    lowered = text.lower()
    if f"</{element}" in lowered or "<!--" in lowered:
        raise RuntimeError(f"inline {element} holds '</{element}' or '<!--': it cannot be inlined safely")
    return text


def _hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii") + "'"


def _comparison_section(k: int, comparison: RunComparison) -> Section:
    """``bineval report BASE NEW --compare``'s section: the paired interval, sign test and flipped verdicts of each
    column (``report.compare``, what ``bineval compare`` prints)."""
    source = f"{shown_path(Path(comparison.base))} vs {shown_path(Path(comparison.new))}"
    return Section(f"compare-{k}", "compare", "comparison", "NEW - BASE", source, {"c": comparison, "most": FLIPS_SHOWN})


def render(
    runs: Sequence[LoadedRun], title: str = "bineval report", charts_on: bool = True, api: str | None = None, comparisons: Sequence[RunComparison] = (),
) -> str:
    """The report on ``runs`` as one HTML document (UTF-8 text) that needs nothing else to be viewed; without
    ``charts_on``, tables only (a few kB, not the 4.6 MB of plotly.js). With ``api`` (``bineval view``'s), the row
    lists are not inlined: the page asks that URL for them a page at a time (``report.pages``), the one connection
    its policy allows."""
    charts = Charts(charts_on)
    sections = [_section(anchor, run, charts) for anchor, run in zip(anchors(runs), runs, strict=True)]
    sections += [_comparison_section(k, comparison) for k, comparison in enumerate(comparisons, start=1)]
    inlined = [] if api is not None else zip(anchors(runs), runs, strict=True)
    lists = {anchor: rows for anchor, run in inlined if (rows := section_rows(run)) is not None}
    plotly_js = _inline(get_plotlyjs()) if charts_on else ""
    page_js = _inline(ASSETS.joinpath("report.js").read_text(encoding="utf-8"))
    scripts = " ".join(_hash(script) for script in (plotly_js, page_js) if script)
    policy = f"default-src 'none'; script-src {scripts}; style-src 'unsafe-inline'; img-src data: blob:; font-src data:"
    if api is not None:
        policy += "; connect-src 'self'"
    return _environment().get_template("report.html.j2").render(
        title=title,
        version=__version__,
        sections=sections,
        data={"figures": charts.figures, "template": figures.TEMPLATE, "api": api, "rows": lists},
        policy=policy,
        style=Markup(_inline(ASSETS.joinpath("report.css").read_text(encoding="utf-8"), "style")),
        plotly_js=Markup(plotly_js),
        page_js=Markup(page_js),
    )


def write_report(runs: Sequence[LoadedRun], out: Path, title: str = "bineval report", charts_on: bool = True, comparisons: Sequence[RunComparison] = ()) -> Path:
    """Write the report atomically (temporary file, then rename); returns ``out``."""
    write_text_atomic(out, render(runs, title, charts_on, comparisons=comparisons))
    return out
