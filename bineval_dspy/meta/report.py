"""The results of a meta-evaluation: ``results.md`` (and the printed table), ``results.csv`` and ``results.json``."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from bineval_dspy.core.jsonio import write_json
from bineval_dspy.meta.correlation import (
    LEVELS,
    MIN_SUMMARY_DOCUMENTS,
    STATISTICS,
    DimensionCorrelation,
    Estimate,
    LevelCorrelation,
)
from bineval_dspy.meta.results import MetaEvalResults
from bineval_dspy.runs.header import headed

HEADERS = [
    "method",
    "dimension",
    "pairs",
    "missing",
    "skipped docs",
    "systems",
    *[f"{level} {stat}" for level in LEVELS for stat in ("Spearman", "Kendall", "Pearson")],
    "LM calls / output",
    "s / output",
]


def _cell(estimate: Estimate) -> str:
    if estimate.value is None:
        return "undefined"
    interval = f" [{estimate.low:.3f}, {estimate.high:.3f}]" if estimate.low is not None and estimate.high is not None else ""
    return f"{estimate.value:.3f}{interval}"


def _levels(levels: dict[str, LevelCorrelation], thin: str = "") -> list[str]:
    """The cells of every level; ``thin`` marks the summary level's cells (too few documents for an interval)."""
    return [_cell(getattr(levels[level], stat)) + (thin if level == "summary" else "") for level in LEVELS for stat in STATISTICS]


def cell_levels(cell: DimensionCorrelation) -> dict[str, LevelCorrelation]:
    """A cell's levels by name; a result written before the system level existed has it undefined."""
    undefined = LevelCorrelation(**{stat: Estimate(value=None) for stat in STATISTICS})
    return {"summary": cell.summary, "system": cell.system or undefined, "dataset": cell.dataset}


def thin_mark(cell: DimensionCorrelation) -> str:
    """`` (1 doc < 5)`` where the summary level rests on too few documents, else nothing."""
    if not cell.too_few_documents:
        return ""
    docs = cell.summary_documents
    return f" ({docs} doc{'' if docs == 1 else 's'} < {cell.min_documents})"


def table_rows(results: MetaEvalResults) -> list[list[str]]:
    """One row per (method, dimension), then the method's average over dimensions, as text cells of ``HEADERS``."""
    rows = []
    for method in results.methods:
        cost = [f"{method.lm_calls_per_output:.1f}", f"{method.seconds_per_output:.2f}"]
        for dim in results.dimensions:
            cell = method.correlations.get(dim)
            if cell is None:
                rows.append([method.name, dim, "0", "-", "-", "-", *["not scored"] * (len(LEVELS) * len(STATISTICS)), *cost])
                continue
            counts = [str(cell.pairs), str(method.missing.get(dim, 0)), str(cell.skipped_documents), str(cell.systems)]
            rows.append([method.name, dim, *counts, *_levels(cell_levels(cell), thin_mark(cell)), *cost])
        if method.average is not None and len(results.dimensions) > 1:
            thin = [dim for dim, cell in method.correlations.items() if cell.too_few_documents]
            note = f" ({', '.join(thin)}: too few docs)" if thin else ""
            rows.append([method.name, "average", "", str(sum(method.missing.values())), "", "", *_levels(_all_levels(method.average), note), *cost])
    return rows


def markdown(results: MetaEvalResults) -> str:
    """``results.md``: what was run, the correlation table, and InFoBench-style question agreement when measured."""
    lines = [
        f"# Meta-evaluation on {results.dataset}",
        "",
        f"LM: `{results.lm or 'none'}`. {results.outputs} outputs of {results.documents} documents; dimensions: "
        f"{', '.join(results.dimensions)}.",
        "",
        "Summary level: the correlation across each document's outputs, averaged over documents (documents with fewer "
        "than two scored outputs or a constant side are skipped: `skipped docs`); a cell that rests on fewer than "
        f"{MIN_SUMMARY_DOCUMENTS} documents is marked `(n docs < {MIN_SUMMARY_DOCUMENTS})`, has no interval and leaves the "
        "summary-level average undefined. System level: each system's mean score against its mean human score over the "
        "same outputs, correlated across the `systems`. Dataset level: all outputs pooled. Ties: Spearman on average "
        "ranks, Kendall tau-b (scipy's `spearmanr` and `kendalltau`, as the G-Eval and UniEval evaluations compute them). "
        + (
            f"Intervals: {results.confidence:.0%} percentile bootstrap over documents, {results.resamples} resamples."
            if results.resamples
            else "No bootstrap intervals (0 resamples)."
        )
        + " `missing`: outputs the method gave no usable score for (left out, never guessed); `not scored`: the method "
        "asks nothing about the dimension (its checklist has no question on it).",
        "",
        _markdown_table(HEADERS, table_rows(results)),
    ]
    lines += _rankings(results)
    measured = [(m.name, m.agreement) for m in results.methods if m.agreement is not None]
    if measured:
        lines += ["", "## Question-level agreement with the reference labels", ""]
        rows = [[name, str(a.questions), _number(a.agreement), _number(a.kappa), str(a.unanswered)] for name, a in measured]
        lines.append(_markdown_table(["method", "questions", "agreement", "Cohen's kappa (answered)", "unanswered"], rows))
    lines += ["", "## Cost", "", "LM calls (cache hits included), billed tokens and US dollars of each method's scores and generated checklist.", ""]
    costs = [[m.name, f"{m.usage.lm_calls:,}", f"{m.usage.tokens:,}", m.usage.price_text()] for m in results.methods]
    costs.append(["all", f"{results.usage.lm_calls:,}", f"{results.usage.tokens:,}", results.usage.price_text()])
    lines.append(_markdown_table(["method", "LM calls", "tokens", "USD"], costs))
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class SystemRanking:
    """One dimension's systems in the humans' order, each with the humans' and every method's mean score and rank:
    the columns the system level correlates, shown so a reader sees which systems a method misplaces."""

    dimension: str
    human: dict[str, tuple[float, int]]  # system -> (mean, rank), 1 = highest; in the humans' order
    methods: dict[str, dict[str, tuple[float, int]]]  # method -> system -> (mean, rank); a system it did not score is absent


def _ranked(means: dict[str, float]) -> dict[str, tuple[float, int]]:
    """Each system's mean and rank (1 for the highest; tied systems share the better rank)."""
    ordered = sorted(means.values(), reverse=True)
    return {system: (value, ordered.index(value) + 1) for system, value in means.items()}


def system_rankings(results: MetaEvalResults) -> list[SystemRanking]:
    """Per dimension with at least two systems, the humans' ranking and every method's that scored two or more of
    them (nothing for a run of one system, such as QAGS)."""
    rankings = []
    for dim in results.dimensions:
        human = _ranked(results.human_system_means.get(dim, {}))
        if len(human) < 2:
            continue
        order = sorted(human, key=lambda system: (human[system][1], system))
        scored = {m.name: _ranked(m.system_means[dim]) for m in results.methods if len(m.system_means.get(dim, {})) >= 2}
        rankings.append(SystemRanking(dimension=dim, human={system: human[system] for system in order}, methods=scored))
    return rankings


def _rankings(results: MetaEvalResults) -> list[str]:
    """The ``System rankings`` section of ``results.md``: one table per dimension, systems in the humans' order."""
    lines: list[str] = []
    for ranking in system_rankings(results):
        rows = []
        for system, (mean, rank) in ranking.human.items():
            cells = [f"{mean:.3f} ({rank})"]
            for ranks in ranking.methods.values():
                cells.append(f"{ranks[system][0]:.3f} ({ranks[system][1]})" if system in ranks else "-")
            rows.append([system, *cells])
        lines += ["", f"### {ranking.dimension}", "", _markdown_table(["system", "human", *ranking.methods], rows)]
    if lines:
        head = (
            "Each system's mean score (its rank, 1 = highest) over its outputs, for the humans and each method, by "
            "the humans' ranking; the system level above correlates these columns."
        )
        lines = ["", "## System rankings", "", head, *lines]
    return lines


def _number(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def _markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def csv_text(results: MetaEvalResults) -> str:
    """``results.csv``: one row per (method, dimension) and per method average; values, interval bounds, cost."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    stats = [f"{level}_{stat}{part}" for level in LEVELS for stat in STATISTICS for part in ("", "_low", "_high")]
    writer.writerow(
        ["method", "kind", "dimension", "pairs", "documents", "skipped_documents", "missing", "systems", *stats, "lm_calls_per_output", "seconds_per_output", "method_tokens", "method_usd"]
    )
    for method in results.methods:
        cost = [_raw(method.lm_calls_per_output), _raw(method.seconds_per_output), str(method.usage.tokens), _raw(method.usage.usd)]
        for dim, cell in method.correlations.items():
            counts = [cell.pairs, cell.documents, cell.skipped_documents, method.missing.get(dim, 0), cell.systems]
            writer.writerow([method.name, method.kind, dim, *counts, *_estimates(cell_levels(cell)), *cost])
        if method.average is not None:
            writer.writerow([method.name, method.kind, "average", "", "", "", sum(method.missing.values()), "", *_estimates(_all_levels(method.average)), *cost])
    return buffer.getvalue()


def _all_levels(levels: dict[str, LevelCorrelation]) -> dict[str, LevelCorrelation]:
    """An average's levels, the system level undefined where an older result lacks it."""
    undefined = LevelCorrelation(**{stat: Estimate(value=None) for stat in STATISTICS})
    return {level: levels.get(level, undefined) for level in LEVELS}


def _estimates(levels: dict[str, LevelCorrelation]) -> list[str]:
    out = []
    for level in LEVELS:
        for stat in STATISTICS:
            e: Estimate = getattr(levels[level], stat)
            out += [_raw(e.value), _raw(e.low), _raw(e.high)]
    return out


def _raw(value: float | None) -> str:
    return "" if value is None else repr(round(value, 6))


def write_report(results: MetaEvalResults, run_dir: Path | None = None) -> tuple[Path, Path, Path]:
    """Write ``results.md``, ``results.csv`` and ``results.json`` (every result, with ``usage``) into the run
    directory; returns their paths."""
    folder = run_dir or results.run_dir
    md, table, full = folder / "results.md", folder / "results.csv", folder / "results.json"
    md.write_text(markdown(results), encoding="utf-8")
    table.write_text(csv_text(results), encoding="utf-8")
    with headed(full, "meta-eval") as heading:  # its header, the one place its kind is written
        write_json(full, results.model_dump(mode="json"))
        heading.usage, heading.status = results.usage, "incomplete" if results.missing else "finished"
    return md, table, full
