"""Meta-evaluation runs for ``report`` and ``show``, the one module of its reading side (its reader and both its
views register on its ``RUN_KINDS`` entry here): every method's scores (``scores.jsonl``), the typed results
(``results.json``: correlations and system rankings, once the run has finished) and, given the run's config, the
human scores of the same outputs."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from plotly.subplots import make_subplots
from pydantic import BaseModel
from rich import box
from rich.table import Table
from rich.text import Text

from bineval_dspy.analysis.judged import meta_references, recorded_fingerprint
from bineval_dspy.core.console import console
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_model, read_text
from bineval_dspy.core.terminal import printable
from bineval_dspy.lm.usage import Cost, total
from bineval_dspy.meta.correlation import LEVELS, MIN_SUMMARY_DOCUMENTS, STATISTICS, Estimate, LevelCorrelation
from bineval_dspy.meta.report import SystemRanking, cell_levels, system_rankings
from bineval_dspy.meta.results import MetaEvalResults, OutputScore
from bineval_dspy.meta.runner import SCORES_FILE, scores_log
from bineval_dspy.report import figures
from bineval_dspy.report.figures import Figure, _height, _json, plot_text
from bineval_dspy.report.html import Charts
from bineval_dspy.report.pages import number
from bineval_dspy.report.spend import spend_entries
from bineval_dspy.report.stats import HUMAN, SCALES, QuestionRate, Spread, question_rates
from bineval_dspy.report.text import _row, _say, _spend, _table
from bineval_dspy.runs.kinds import RUN_KINDS

META_RESULTS_FILE = "results.json"  # written by meta.report.write_report


class CorrelationRow(BaseModel):
    """A method's correlations with the humans on one dimension (or ``average``), from the run's ``results.json``."""

    method: str
    kind: str
    dimension: str  # or "average" over the dimensions
    pairs: int | None
    documents: int | None
    skipped_documents: int | None
    missing: int | None
    levels: dict[str, LevelCorrelation]  # "summary", "system" (undefined in older results) and "dataset"
    lm_calls_per_output: float | None
    seconds_per_output: float | None

    @property
    def too_few_documents(self) -> bool:
        """Whether the summary level rests on fewer documents than an interval needs (``results.md`` marks it)."""
        if self.documents is None or self.skipped_documents is None:
            return False
        return self.documents - self.skipped_documents < MIN_SUMMARY_DOCUMENTS



@dataclass(frozen=True)
class MetaEvaluation:
    """A meta-evaluation run directory: every method's scores, the correlation table, and (given the run's config)
    the human scores of the same outputs."""

    source: Path
    scores: list[OutputScore]
    spends: dict[str, Cost]  # per method
    kinds: dict[str, str]  # method -> kind (bineval, holistic, unieval, rouge_l)
    dimensions: list[str]
    table: list[CorrelationRow]  # empty while the run has not written results.json
    human: dict[str, dict[str, float]] | None  # output id -> dimension -> human score, for the run's outputs
    human_range: dict[str, tuple[float, float]]  # dimension -> lowest and highest human score in the whole dataset
    dataset: str | None = None
    lm: str | None = None
    rankings: list[SystemRanking] = field(default_factory=list)  # from results.json; empty before it is written
    results: MetaEvalResults | None = None  # results.json, once written
    kind: Literal["meta-eval"] = "meta-eval"

    @property
    def methods(self) -> list[str]:
        return list(self.kinds)

    @property
    def outputs(self) -> int:
        """The outputs scored: counted in the scores, else (results read without them) as the results say."""
        return len({s.id for s in self.scores}) if self.scores or self.results is None else self.results.outputs

    @property
    def documents(self) -> int:
        return len({s.doc_id for s in self.scores}) if self.scores or self.results is None else self.results.documents

    @property
    def spend(self) -> Cost:
        return total(self.spends.values())



def load_meta(folder: Path, scores_file: Path | None = None, config: Path | None = None) -> MetaEvaluation:
    """A meta-eval run directory; with ``config`` (the run's TOML), the human scores of its outputs too."""
    path = scores_file or folder / SCORES_FILE
    scores: list[OutputScore] = []
    spends: dict[str, Cost] = {}
    for _, record in scores_log(path, hint="").read():
        scores.append(record)
        spends[record.method] = spends.get(record.method, Cost()) + record.usage
    if not scores:
        raise InputError(f"{path}: no scores")
    recorded = recorded_fingerprint(path) or {}
    results_path = folder / META_RESULTS_FILE
    results = load_model(results_path, MetaEvalResults) if results_path.is_file() else None
    table = correlation_rows(results) if results is not None else []
    kinds = _method_kinds(recorded, table, scores)
    dimensions = _recorded_list(recorded, "dimensions") or list(dict.fromkeys(d for s in scores for d in s.scores))
    human, span = None, {}
    if config is not None:
        reference = meta_references(config, path)  # refuses a config whose dataset is not the run's
        span = _ranges(reference.scores.values())
        ids = {s.id for s in scores}
        human = {oid: values for oid, values in reference.scores.items() if oid in ids}
    dataset = _recorded_object(recorded, "dataset").get("kind")
    rankings = system_rankings(results) if results is not None else []
    return MetaEvaluation(
        source=folder,
        scores=scores,
        spends=spends,
        kinds=kinds,
        dimensions=dimensions,
        table=table,
        human=human,
        human_range=span,
        dataset=str(dataset) if dataset is not None else None,
        lm=recorded.get("lm"),
        rankings=rankings,
        results=results,
    )


def meta_results(path: Path) -> MetaEvaluation:
    """A meta-eval's ``results.json`` read without its scores (a copy kept apart from its run directory): the
    correlation table, the system rankings and each method's cost, no score spreads or question rates."""
    results = load_model(path, MetaEvalResults)
    table = correlation_rows(results)
    return MetaEvaluation(
        source=path,
        scores=[],
        spends={m.name: m.usage for m in results.methods},
        kinds={m.name: m.kind for m in results.methods},
        dimensions=results.dimensions,
        table=table,
        human=None,
        human_range={},
        dataset=results.dataset,
        lm=results.lm,
        rankings=system_rankings(results),
        results=results,
    )


def meta_from_config(path: Path) -> MetaEvaluation:
    """A meta-eval config: its run directory, read with the human scores of its dataset."""
    from bineval_dspy.meta.config import load_config

    try:
        raw = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: malformed TOML ({exc})") from None
    if not {"dataset", "methods"} <= raw.keys():
        raise InputError(f"{path}: not a meta-eval config (a .toml is read only as one: its run directory with the human scores)")
    run_dir = load_config(path).run_dir
    if not (run_dir / SCORES_FILE).is_file():
        raise InputError(f"{path}: its run directory {run_dir} holds no {SCORES_FILE} yet (run `bineval meta-eval {path}` first)")
    return load_meta(run_dir, config=path)


def _method_kinds(recorded: dict[str, str], table: list[CorrelationRow], scores: list[OutputScore]) -> dict[str, str]:
    """Each method's kind, in the run's order: from its fingerprint, else results.json, else what its scores hold."""
    kinds: dict[str, str] = {}
    for key in recorded:
        if key.startswith("method."):
            kinds[key.removeprefix("method.")] = str(_recorded_object(recorded, key).get("kind", "?"))
    for row in table:
        kinds.setdefault(row.method, row.kind)
    for s in scores:
        kinds.setdefault(s.method, "bineval" if s.scorecard is not None else "holistic" if s.ratings is not None else "?")
    present = {s.method for s in scores}
    return {name: kind for name, kind in kinds.items() if name in present}


def _recorded_object(recorded: dict[str, str], key: str) -> dict[str, Any]:
    try:
        value = json.loads(recorded.get(key, "{}"))
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _recorded_list(recorded: dict[str, str], key: str) -> list[str]:
    try:
        value = json.loads(recorded.get(key, "[]"))
    except json.JSONDecodeError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _ranges(rows: Iterable[dict[str, float]]) -> dict[str, tuple[float, float]]:
    span: dict[str, tuple[float, float]] = {}
    for scores in rows:
        for dim, value in scores.items():
            low, high = span.get(dim, (value, value))
            span[dim] = (min(low, value), max(high, value))
    return span


def correlation_rows(results: MetaEvalResults) -> list[CorrelationRow]:
    """The results table: per method, a row per dimension it scores, then its average over them when it has one."""
    undefined = LevelCorrelation(**{stat: Estimate(value=None) for stat in STATISTICS})
    rows = []
    for method in results.methods:
        shared: dict[str, Any] = dict(
            method=method.name, kind=method.kind, lm_calls_per_output=method.lm_calls_per_output, seconds_per_output=method.seconds_per_output
        )
        for dim, cell in method.correlations.items():
            rows.append(CorrelationRow(
                **shared, dimension=dim, pairs=cell.pairs, documents=cell.documents, skipped_documents=cell.skipped_documents,
                missing=method.missing.get(dim, 0), levels=cell_levels(cell),
            ))
        if method.average is not None:
            rows.append(CorrelationRow(
                **shared, dimension="average", pairs=None, documents=None, skipped_documents=None, missing=sum(method.missing.values()),
                levels={level: method.average.get(level, undefined) for level in LEVELS},
            ))
    return rows


# -- the reader and both views, on the kind's RUN_KINDS entry: load_run, show and the page dispatch to them --------
@RUN_KINDS.reads("meta-eval", title="meta-evaluation", suffixes=(".jsonl", ".json", ".toml"))
def _meta(path: Path) -> MetaEvaluation:
    """A meta-eval's config (its run directory, with the dataset's human scores), its scores (its run is their
    folder), or its results: with the scores beside them when they are."""
    if path.suffix == ".toml":
        return meta_from_config(path)
    if path.suffix == ".jsonl":
        return load_meta(path.parent, scores_file=path)
    return load_meta(path.parent) if (path.parent / SCORES_FILE).is_file() else meta_results(path)


def _estimate(e: Estimate) -> str:
    if e.value is None:
        return "undefined"
    return f"{e.value:.2f}" if e.low is None or e.high is None else f"{e.value:.2f} [{e.low:.2f}, {e.high:.2f}]"


@RUN_KINDS.shows("meta-eval")
def show_meta(run: MetaEvaluation) -> None:
    """Spearman with the humans (all three levels, with intervals), each method's system ranks beside the humans', where
    scores lie on their scale, questions' yes rates."""

    _say(f"{run.outputs} output(s) of {run.documents} document(s){' from ' + run.dataset if run.dataset else ''}; methods: {', '.join(run.methods)}")
    _spend(run.spend)
    if run.table:
        levels = ("summary", "system", "dataset")
        table = _table("Spearman with the human scores (all statistics: results.md)", "method", "dimension", "pairs", *levels, left=("method", "dimension"), wrap=("method", "dimension", *levels))
        for r in run.table:
            cells = [_estimate(r.levels[level].spearman) + (" (few docs)" if level == "summary" and r.too_few_documents else "") for level in levels]
            _row(table, r.method, r.dimension, "" if r.pairs is None else r.pairs, *cells)
        console.print(table)
    else:
        _say("no results.json yet (the run has not finished): no correlations")
    for ranking in run.rankings:  # one row per source, one column per system: 16 systems still fit 80 columns
        systems = list(ranking.human)
        _say(f"system ranks on {ranking.dimension} (1 = highest mean; means: results.md)")  # a title would wrap to the table
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=0)
        table.add_column("by", overflow="fold")
        for system in systems:  # no padding: the box's separator is the one space between rank columns
            table.add_column(Text(printable(system)), justify="right", no_wrap=True)
        _row(table, "human", *[rank for _, rank in ranking.human.values()])
        for name, ranks in ranking.methods.items():
            _row(table, name, *[ranks[system][1] if system in ranks else "-" for system in systems])
        console.print(table)
    if not run.scores:
        _say("read from results.json without the run's scores.jsonl: no score spreads or question rates")
        return
    table = _table("scores on their scale: share at the top (the ceiling effect)", "dimension", "source", "scale", "mean", "distinct", "at top", left=("dimension", "source"), wrap=("dimension", "source"))
    for dim in run.dimensions:
        for k, s in enumerate(spreads(run, dim)):
            _row(table, dim if k == 0 else "", s.source, f"{s.low:g}-{s.high:g}", number(s.mean), s.distinct, number(s.top, 2))
    console.print(table)
    if run.human is None:
        _say("human scores: give the run's config (CONFIG.toml) instead of its folder to see them here")
    rates = method_rates(run)
    if rates:
        table = _table("questions per method", "method", "questions", "mean yes rate", "always yes", left=("method",), wrap=("method",))
        for method, mine in rates.items():
            known = [r.rate for r in mine if r.rate is not None]
            _row(table, method, len(mine), number(sum(known) / len(known) if known else None, 2), sum(r.rate == 1.0 for r in mine))
        console.print(table)


@RUN_KINDS.pages("meta-eval", macro="meta")
def _meta_view(run: MetaEvaluation, charts: Charts) -> dict[str, Any]:
    by_dim = {dim: spreads(run, dim) for dim in run.dimensions}
    rates = method_rates(run)
    scored = [r for r in run.table if r.dimension != "average"]
    correlation_charts = [charts.add(correlations(scored, level, "spearman")) for level in LEVELS] if scored else []
    return {
        "run": run,
        "statistics": STATISTICS,
        "levels": LEVELS,
        "outputs": run.outputs,
        "documents": run.documents,
        "correlation_charts": correlation_charts,
        "spreads": {dim: (charts.add(figures.spread(values, dim)), values) for dim, values in by_dim.items() if values},
        "rates": rates,
        "rates_chart": charts.add(figures.method_pass_rates(rates)) if rates else None,
        "spend_keys": list(dict.fromkeys(k for block in run.spends.values() for k in spend_entries(block))),
    }


# -- what its views show: the spreads of its scores, its methods' question rates, its correlations --------------
def spreads(run: MetaEvaluation, dimension: str) -> list[Spread]:
    """The humans' scores (when the run was read with its config) and every method's, for one dimension.

    Scales: a method's by its kind (0-1 for fractions, P(yes) and ROUGE, 1-5 for the holistic rating); the humans'
    from the lowest to the highest score of the dimension in the whole dataset.
    """
    out = []
    if run.human is not None and dimension in run.human_range:
        low, high = run.human_range[dimension]
        values = [scores[dimension] for scores in run.human.values() if dimension in scores]
        out.append(Spread(HUMAN, values, low, high))
    for method, kind in run.kinds.items():
        values = [v for s in run.scores if s.method == method and (v := s.scores.get(dimension)) is not None]
        if values:
            low, high = SCALES.get(kind, (min(values), max(values)))
            out.append(Spread(method, values, low, high))
    return out


def method_rates(run: MetaEvaluation) -> dict[str, list[QuestionRate]]:
    """Per method that kept scorecards (bineval, unieval), the pass rate of each of its questions."""
    return {
        method: question_rates(s.scorecard for s in run.scores if s.method == method and s.scorecard is not None)
        for method in run.methods
        if any(s.method == method and s.scorecard is not None for s in run.scores)
    }


def correlations(rows: Sequence[CorrelationRow], level: str, statistic: str) -> Figure:
    """One statistic at one level with its bootstrap interval, per method, one panel per dimension."""
    dims = list(dict.fromkeys(r.dimension for r in rows))
    figure = make_subplots(rows=1, cols=len(dims), shared_yaxes=True, subplot_titles=[plot_text(d) for d in dims], horizontal_spacing=0.02)
    for col, dim in enumerate(dims, start=1):
        mine = [r for r in rows if r.dimension == dim and getattr(r.levels[level], statistic).value is not None]
        estimates = [getattr(r.levels[level], statistic) for r in mine]
        figure.add_scatter(
            row=1,
            col=col,
            mode="markers",
            showlegend=False,
            marker={"color": "#636efa", "size": 8},
            x=[e.value for e in estimates],
            y=[plot_text(r.method) for r in mine],
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [(e.high - e.value) if e.high is not None and e.value is not None else 0 for e in estimates],
                "arrayminus": [(e.value - e.low) if e.low is not None and e.value is not None else 0 for e in estimates],
            },
            hovertemplate="%{y}: %{x:.3f}<extra></extra>",
        )
        figure.add_vline(x=0, line={"color": "#999", "width": 1}, row=1, col=col)
    methods = len(dict.fromkeys(r.method for r in rows))
    figure.update_layout(title=f"{level}-level {statistic} with the human scores (bootstrap interval)", height=_height(methods, 26, 160))
    figure.update_yaxes(autorange="reversed")
    figure.update_xaxes(range=[-1.05, 1.05])
    return _json(figure)
