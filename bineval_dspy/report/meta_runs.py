"""Meta-evaluation runs for ``report`` and ``show``: every method's scores (``scores.jsonl``), the typed results
(``results.json``: correlations and system rankings, once the run has finished) and, given the run's config, the
human scores of the same outputs."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from bineval_dspy.analysis.judged import meta_references, recorded_fingerprint
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_model, read_text
from bineval_dspy.lm.usage import Cost, total
from bineval_dspy.meta.correlation import LEVELS, MIN_SUMMARY_DOCUMENTS, STATISTICS, Estimate, LevelCorrelation
from bineval_dspy.meta.report import SystemRanking, cell_levels, system_rankings
from bineval_dspy.meta.results import MetaEvalResults, OutputScore
from bineval_dspy.meta.runner import SCORES_FILE, scores_log

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
