"""The report's charts as plotly figures (JSON), drawn in the page by plotly.js.

Plotly.js reads a subset of HTML in every string it draws (``<b>``, ``<br>``, ``<a href>``), so every string that
comes from data goes through ``plot_text`` first: entities plotly decodes back, so the text shows as written and no
tag in it takes effect. The shared template is sent once (``TEMPLATE``) instead of inside every figure.
"""

from __future__ import annotations

import html
import json
import textwrap
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bineval_dspy.analysis.phi import LABELS, DimensionPhi
from bineval_dspy.analysis.weights import WeightsReport
from bineval_dspy.optimize.learning_curve import LearningCurve, ReliabilityBin
from bineval_dspy.report.judged_runs import JudgedRows
from bineval_dspy.report.stats import QuestionRate, Spread, TrajectoryStep, dimension_means
from bineval_dspy.tune.report import TuneResults

Figure = dict[str, Any]  # plotly's JSON form: {"data": [...], "layout": {...}}
LABEL_CHARS = 60
SCORE_RANGE = [-0.05, 1.05]  # every axis of scores and rates spans 0-1 (a margin for the points at its ends)
OUTCOME_COLOURS = {"start": "#636efa", "accepted": "#2ca02c", "rolled back": "#d62728", "stopped": "#7f7f7f", "in progress": "#bcbd22"}


def plot_text(value: object) -> str:
    """A data string as plotly must get it to draw it as written: ``<``, ``>`` and ``&`` as entities."""
    return html.escape(str(value), quote=False)


def label(text: str, chars: int = LABEL_CHARS) -> str:
    """A question as an axis label: shortened to ``chars``, then made plot-safe."""
    return plot_text(textwrap.shorten(text, chars, placeholder="..."))


def _json(figure: go.Figure) -> Figure:
    """The figure as plain JSON, without its template (the page applies ``TEMPLATE`` to every figure)."""
    out: Figure = json.loads(figure.to_json())
    out["layout"].pop("template", None)
    return out


def _template() -> dict[str, Any]:
    return json.loads(go.Figure(layout={"template": "plotly_white"}).to_json())["layout"]["template"]


TEMPLATE = _template()


def _height(rows: int, per_row: int = 22, base: int = 140) -> int:
    return max(260, base + per_row * rows)


# -- judge runs ---------------------------------------------------------------------------------------------------
def pass_rates(rates: Sequence[QuestionRate], title: str) -> Figure:
    """The yes rate of every question, one colour per dimension."""
    figure = go.Figure()
    for dim in dict.fromkeys(r.dimension for r in rates):
        mine = [r for r in rates if r.dimension == dim]
        figure.add_bar(
            name=plot_text(dim),
            orientation="h",
            x=[r.rate for r in mine],
            y=[f"{label(r.text)} [{r.id}]" for r in mine],
            customdata=[[plot_text(r.text), r.yes, r.no, r.unanswered] for r in mine],
            hovertemplate="%{customdata[0]}<br>yes %{customdata[1]}, no %{customdata[2]}, unanswered %{customdata[3]}<extra></extra>",
        )
    figure.update_layout(title=plot_text(title), height=_height(len(rates)), xaxis={"title": "share answered yes", "range": SCORE_RANGE}, yaxis={"autorange": "reversed"}, margin={"l": 20})
    return _json(figure)


def judge_scores(run: JudgedRows) -> Figure:
    """Every output's score per dimension and overall, one box of points per dimension."""
    figure = go.Figure()
    for mean in dimension_means([row.card for row in run.rows]):
        dim = mean.dimension
        points = [(row.id, row.card.overall if dim == "overall" else row.card.dimension_scores.get(dim)) for row in run.rows]
        known = [(oid, v) for oid, v in points if v is not None]
        figure.add_box(
            name=plot_text(dim),
            y=[v for _, v in known],
            text=[plot_text(oid) for oid, _ in known],
            boxpoints="all",
            jitter=0.4,
            pointpos=0,
            hovertemplate="output %{text}: %{y:.3f}<extra></extra>",
        )
    figure.update_layout(title="scores per dimension (one point per output)", height=360, yaxis={"title": "score", "range": SCORE_RANGE}, showlegend=False)
    return _json(figure)


def spread(spreads: Sequence[Spread], dimension: str) -> Figure:
    """Each source's scores of one dimension on its scale mapped to 0-1: a pile at 1 is the ceiling effect."""
    figure = go.Figure()
    for s in spreads:
        figure.add_box(
            name=plot_text(s.source),
            y=s.normalized,
            customdata=s.values,
            boxpoints="all",
            jitter=0.5,
            pointpos=0,
            marker={"size": 4, "opacity": 0.5},
            hovertemplate=f"{plot_text(s.source)}: %{{customdata:.3f}} (scale {s.low:g}-{s.high:g})<extra></extra>",
        )
    figure.update_layout(
        title=f"{plot_text(dimension)}: scores on their scale, mapped to 0-1",
        height=380,
        yaxis={"title": "position on the scale", "range": SCORE_RANGE},
        showlegend=False,
    )
    return _json(figure)


def method_pass_rates(rates: dict[str, list[QuestionRate]]) -> Figure:
    """Questions x methods: the yes rate of every question each method asked."""
    questions: dict[str, QuestionRate] = {}
    for mine in rates.values():
        for r in mine:
            questions.setdefault(r.id, r)
    by_method = {method: {r.id: r.rate for r in mine} for method, mine in rates.items()}
    z = [[by_method[m].get(qid) for m in rates] for qid in questions]
    figure = go.Figure(
        go.Heatmap(
            z=z,
            x=[plot_text(m) for m in rates],
            y=[f"{plot_text(q.dimension)}: {label(q.text, 50)} [{q.id}]" for q in questions.values()],
            zmin=0,
            zmax=1,
            colorscale="Viridis",
            texttemplate="%{z:.2f}",
            hovertemplate="%{x}<br>%{y}<br>yes rate %{z:.3f}<extra></extra>",
            colorbar={"title": "yes rate"},
        )
    )
    figure.update_layout(title="pass rate per question and method", height=_height(len(questions), 24, 200), yaxis={"autorange": "reversed"}, xaxis={"tickangle": -30})
    return _json(figure)


# -- the optimizer ------------------------------------------------------------------------------------------------
def trajectory(steps: Sequence[TrajectoryStep]) -> Figure:
    """Held-out score (with the best so far) over prompt length, per iteration, coloured by the decision."""
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.62, 0.38], vertical_spacing=0.06)
    scored = [s for s in steps if s.val is not None]
    figure.add_scatter(row=1, col=1, x=[s.iteration for s in steps], y=[s.best for s in steps], mode="lines", line={"shape": "hv", "color": "#2ca02c"}, name="best so far")
    for outcome, colour in OUTCOME_COLOURS.items():
        mine = [s for s in scored if s.outcome == outcome]
        if mine:
            figure.add_scatter(
                row=1, col=1, x=[s.iteration for s in mine], y=[s.val for s in mine], mode="markers", marker={"color": colour, "size": 11}, name=outcome,
                customdata=[s.kind for s in mine], hovertemplate="iteration %{x} (%{customdata}): held-out %{y:.3f}<extra></extra>",
            )
    sized = [s for s in steps if s.prompt_chars is not None]
    figure.add_bar(
        row=2, col=1, x=[s.iteration for s in sized], y=[s.prompt_chars for s in sized], marker={"color": [OUTCOME_COLOURS.get(s.outcome, "#999") for s in sized]},
        name="prompt chars", showlegend=False, hovertemplate="iteration %{x}: %{y} chars<extra></extra>",
    )
    figure.update_yaxes(title_text="held-out score", range=SCORE_RANGE, row=1, col=1)  # the whole scale: a small gain looks small
    figure.update_yaxes(title_text="prompt chars", row=2, col=1)
    figure.update_xaxes(title_text="iteration", dtick=1, row=2, col=1)
    figure.update_layout(title="held-out score and prompt length per iteration", height=460)
    return _json(figure)


# -- analysis -----------------------------------------------------------------------------------------------------
def phi_heatmap(dim: DimensionPhi, statistic: str) -> Figure:
    """A dimension's phi matrix over [-1, 1]; undefined cells left empty."""
    names = [f"Q{k + 1}" for k in range(len(dim.questions))]
    texts = [plot_text(q.text) for q in dim.questions]
    figure = go.Figure(
        go.Heatmap(
            z=dim.matrix,
            x=names,
            y=names,
            zmin=-1,
            zmax=1,
            colorscale="RdBu",
            reversescale=True,
            texttemplate="%{z:.2f}",
            customdata=[[[texts[i], texts[j]] for j in range(len(texts))] for i in range(len(texts))],
            hovertemplate="%{y} %{customdata[0]}<br>%{x} %{customdata[1]}<br>%{z:.3f}<extra></extra>",
            colorbar={"title": plot_text(statistic)},
        )
    )
    side = 160 + 34 * len(names)
    figure.update_layout(title=f"{plot_text(dim.dimension)}: {LABELS.get(statistic, statistic)}", height=max(300, side), width=max(360, side + 120), yaxis={"autorange": "reversed"})
    return _json(figure)


def weights(report: WeightsReport) -> Figure:
    """The fitted weight of every question, one colour per dimension (1 is the mean weight of a dimension)."""
    figure = go.Figure()
    for dim in report.dimensions:
        figure.add_bar(
            name=plot_text(dim.dimension),
            orientation="h",
            x=[q.weight for q in dim.questions],
            y=[f"{label(q.text)} [{q.id}]" for q in dim.questions],
            customdata=[q.coefficient for q in dim.questions],
            hovertemplate="weight %{x:.3f}, coefficient %{customdata:.3f}<extra></extra>",
        )
    count = sum(len(d.questions) for d in report.dimensions)
    figure.update_layout(title="fitted weights (mean 1 per dimension)", height=_height(count), yaxis={"autorange": "reversed"})
    return _json(figure)


# -- tune studies -------------------------------------------------------------------------------------------------
def tune(results: TuneResults) -> Figure:
    """One objective: each trial's value and the best so far. Several: the first two, the Pareto front marked."""
    names = list(results.objectives)
    complete = [t for t in results.trials if t.state == "COMPLETE" and t.values]
    best = {t.number for t in results.best}
    hover = [plot_text(", ".join(f"{k}={v}" for k, v in t.params.items())) for t in complete]
    figure = go.Figure()
    if len(names) == 1:
        name, pick = names[0], max if results.objectives[names[0]] == "maximize" else min
        ys = [t.values[name] for t in complete if t.values]
        running: list[float] = []
        for value in ys:
            running.append(value if not running else pick(running[-1], value))
        figure.add_scatter(x=[t.number for t in complete], y=ys, mode="markers", name="complete", customdata=hover, hovertemplate="trial %{x}: %{y:.4g}<br>%{customdata}<extra></extra>")
        figure.add_scatter(x=[t.number for t in complete], y=running, mode="lines", line={"shape": "hv"}, name="best so far")
        pruned = [t for t in results.trials if t.state == "PRUNED" and t.steps]
        if pruned:
            figure.add_scatter(x=[t.number for t in pruned], y=[t.steps[max(t.steps)] for t in pruned], mode="markers", marker={"symbol": "x", "color": "#7f7f7f"}, name="pruned (last reported)")
        figure.update_layout(xaxis={"title": "trial"}, yaxis={"title": f"{plot_text(name)} ({results.objectives[name]})"})
    else:
        x, y = names[:2]
        figure.add_scatter(
            x=[t.values[x] for t in complete if t.values], y=[t.values[y] for t in complete if t.values], mode="markers", name="complete",
            text=[str(t.number) for t in complete], customdata=hover, hovertemplate="trial %{text}<br>%{customdata}<extra></extra>",
        )
        front = sorted((t for t in complete if t.number in best and t.values), key=lambda t: t.values[x] if t.values else 0.0)
        figure.add_scatter(
            x=[t.values[x] for t in front if t.values], y=[t.values[y] for t in front if t.values], mode="lines+markers+text", name="Pareto front",
            text=[str(t.number) for t in front], textposition="top right", marker={"size": 11, "color": "#d62728"}, line={"color": "#d62728"},
        )
        figure.update_layout(xaxis={"title": f"{plot_text(x)} ({results.objectives[x]})"}, yaxis={"title": f"{plot_text(y)} ({results.objectives[y]})"})
    finished = sum(results.states.get(s, 0) for s in ("COMPLETE", "PRUNED"))
    figure.update_layout(title=f"{plot_text(results.study)}: {finished} of {results.trials_wanted} trials finished", height=420)
    return _json(figure)


# -- calibrations ---------------------------------------------------------------------------------------------------
CURVE_FIGURES = (("kappa", "kappa"), ("auroc", "AUROC"), ("balanced_accuracy", "balanced accuracy"))


def learning_curve(curve: LearningCurve) -> Figure:
    """Held-out kappa, AUROC and balanced accuracy per label budget, with their 95% intervals."""
    figure = go.Figure()
    measured = [p for p in curve.points if p.heads]
    for name, title in CURVE_FIGURES:
        values = [getattr(p, name) for p in measured]
        figure.add_scatter(
            x=[p.labels for p in measured], y=[v.estimate for v in values], mode="lines+markers", name=title,
            error_y={"type": "data", "symmetric": False, "array": [(v.high - v.estimate) if v.high is not None and v.estimate is not None else 0 for v in values],
                     "arrayminus": [(v.estimate - v.low) if v.low is not None and v.estimate is not None else 0 for v in values]},
            hovertemplate=f"{title} %{{y:.3f}} at %{{x}} labels<extra></extra>",
        )
    where = "test file" if curve.held_out == "test file" else f"{curve.folds} grouped folds"
    figure.update_layout(
        title=f"learning curve: {curve.held_out_rows} held-out rows ({where})", height=380,
        xaxis={"title": "training labels", "type": "log"}, yaxis={"title": "held-out figure", "range": [-0.25, 1.05]},
    )
    return _json(figure)


def reliability(bins: Sequence[ReliabilityBin]) -> Figure:
    """The all-labels head's P(yes) in tenths against the observed yes rate (the diagonal: perfectly calibrated)."""
    figure = go.Figure()
    figure.add_scatter(x=[0, 1], y=[0, 1], mode="lines", line={"dash": "dot", "color": "#7f7f7f"}, name="calibrated", hoverinfo="skip")
    figure.add_scatter(
        x=[b.mean_p for b in bins], y=[b.yes_rate for b in bins], mode="lines+markers", name="held-out rows",
        marker={"size": [8 + 14 * (b.rows / max(x.rows for x in bins)) ** 0.5 for b in bins]},
        customdata=[[b.low, b.high, b.rows] for b in bins],
        hovertemplate="P(yes) %{customdata[0]:.1f}-%{customdata[1]:.1f}: %{customdata[2]} rows, mean %{x:.2f}, yes rate %{y:.2f}<extra></extra>",
    )
    figure.update_layout(title="reliability: P(yes) against the observed yes rate", height=380, xaxis={"title": "P(yes)", "range": SCORE_RANGE}, yaxis={"title": "observed yes rate", "range": SCORE_RANGE})
    return _json(figure)
