"""Two runs of one kind held against each other item by item: the regression gate ``bineval compare`` prints.

Both runs are read by ``load_run`` (one reader per kind, as ``report`` and ``show`` read them) and paired on the
keys they share: a judged, generated or verified row's id, an experiment's test row within each arm both runs have.
Per column (a log's rows; each shared arm of an experiment) the comparison holds every shared item's two scores, the
paired bootstrap interval of the mean difference (NEW - BASE), the sign test of the items that changed, and the
verdicts that flipped either way. An item without a score in one run (an unanswered verdict, a failed output) is
counted apart, never as a pass or a tie.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from bineval_dspy.core.errors import InputError
from bineval_dspy.experiment.grid import GridRow
from bineval_dspy.report.judged_runs import JudgedRow
from bineval_dspy.report.runs import ExperimentRun, JudgedRows, LoadedRun, load_runs
from bineval_dspy.runs.files import run_kind
from bineval_dspy.stats.bootstrap import DEFAULT_RESAMPLES, Bootstrap, Interval
from bineval_dspy.stats.sign import sign_test

Passed = Literal["yes", "no"]


class Item(BaseModel):
    """One shared item's scores in both runs (None: no score there) and whether its output changed."""

    key: str
    base: float | None
    new: float | None
    changed_output: bool = False

    @property
    def difference(self) -> float | None:
        return None if self.base is None or self.new is None else self.new - self.base


class Flip(BaseModel):
    """A verdict on a shared item that went from one answer to the other."""

    key: str
    question: str
    base: Passed
    new: Passed


class Column(BaseModel):
    """One column's paired comparison (a log's rows, or one experiment arm's test rows)."""

    name: str
    items: list[Item]
    difference: Interval = Field(description="mean of NEW - BASE over the items scored in both, paired bootstrap")
    improved: int
    worsened: int
    sign_p: float | None = Field(description="two-sided exact sign test of improved against worsened; None: none changed")
    flips: list[Flip] = Field(default_factory=list)

    @property
    def scored(self) -> list[Item]:
        return [item for item in self.items if item.difference is not None]

    @property
    def unscored_new(self) -> list[Item]:
        """Items BASE scored and NEW did not: a gate cannot call them unchanged."""
        return [item for item in self.items if item.base is not None and item.new is None]

    @property
    def regressed(self) -> bool:
        """NEW is worse beyond noise: the whole interval of the mean difference lies below zero."""
        return self.difference.high is not None and self.difference.high < 0

    def lost(self) -> list[Flip]:
        return [flip for flip in self.flips if flip.base == "yes"]

    def gained(self) -> list[Flip]:
        return [flip for flip in self.flips if flip.base == "no"]


class RunComparison(BaseModel):
    """BASE against NEW: their kind, the keys only one has, and a column per thing both scored."""

    kind: str
    base: str
    new: str
    only_base: list[str]
    only_new: list[str]
    columns: list[Column]

    @property
    def regressed(self) -> list[Column]:
        return [column for column in self.columns if column.regressed]

    @property
    def scored(self) -> bool:
        """Whether any shared item has a score in both runs (plain generations have none)."""
        return any(column.scored for column in self.columns)


def compare_paths(base: Path, new: Path, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> RunComparison:
    """Read both runs and compare them; runs of different kinds, or with no key in common, are one InputError line."""
    (base_kind, base_run), (new_kind, new_run) = _one_run(base), _one_run(new)
    if base_kind != new_kind:
        raise InputError(f"{new}: a {new_kind!r} run cannot be compared with {base} (a {base_kind!r} run); compare two runs of one kind")
    return compare_runs(base_kind, base_run, new_run, str(base), str(new), resamples=resamples, seed=seed)


def compare_runs(kind: str, base: LoadedRun, new: LoadedRun, base_name: str, new_name: str, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> RunComparison:
    """Pair two read runs of ``kind`` on their shared keys (each column on its own draws of those keys)."""
    if isinstance(base, JudgedRows) and isinstance(new, JudgedRows):
        pairs = {"rows": (_keyed(base.rows, base_name), _keyed(new.rows, new_name))}
    elif isinstance(base, ExperimentRun) and isinstance(new, ExperimentRun):
        pairs = _arms(_keyed(base.grid, base_name), _keyed(new.grid, new_name))
    else:
        raise InputError(f"{new_name}: {kind!r} runs have no items to pair; compare judge, generate, verify or experiment output")
    base_keys = {key for left, _ in pairs.values() for key in left}
    new_keys = {key for _, right in pairs.values() for key in right}
    if not base_keys & new_keys:
        raise InputError(f"{new_name}: no row key in common with {base_name} ({len(base_keys)} and {len(new_keys)} keys); compare two runs over the same data")
    columns = [_column(name, left, right, resamples, seed) for name, (left, right) in pairs.items()]
    return RunComparison(
        kind=kind, base=base_name, new=new_name, only_base=sorted(base_keys - new_keys), only_new=sorted(new_keys - base_keys),
        columns=[column for column in columns if column.items],
    )


def _one_run(path: Path) -> tuple[str, LoadedRun]:
    runs = load_runs(path)
    if len(runs) != 1:
        raise InputError(f"{path}: holds {len(runs)} runs ({', '.join(run.kind for run in runs)}); name the one file to compare")
    run = runs[0]
    if isinstance(run, JudgedRows) and run.source.suffix in (".jsonl", ".json"):
        return run_kind(run.source), run  # judge, generate, verify and demo output are all read as judged rows
    return run.kind, run


def _keyed(entries: Iterable[JudgedRow] | Iterable[GridRow], where: str) -> dict[str, JudgedRow | GridRow]:
    keyed: dict[str, JudgedRow | GridRow] = {}
    for entry in entries:
        if entry.id in keyed:
            raise InputError(f"{where}: row key {entry.id!r} appears twice; items are paired by key, so each must be unique")
        keyed[entry.id] = entry
    return keyed


Pair = tuple[dict[str, JudgedRow | GridRow], dict[str, JudgedRow | GridRow]]


def _arms(base: dict[str, JudgedRow | GridRow], new: dict[str, JudgedRow | GridRow]) -> dict[str, Pair]:
    """An experiment's grid split by arm: each arm both runs have, its rows by key on either side."""

    def arm(rows: dict[str, JudgedRow | GridRow], name: str) -> dict[str, JudgedRow | GridRow]:
        return {key: row for key, row in rows.items() if isinstance(row, GridRow) and name in row.cells}

    names = {name for row in base.values() if isinstance(row, GridRow) for name in row.cells}
    names &= {name for row in new.values() if isinstance(row, GridRow) for name in row.cells}
    return {name: (arm(base, name), arm(new, name)) for name in sorted(names)}


def _column(name: str, base: dict[str, JudgedRow | GridRow], new: dict[str, JudgedRow | GridRow], resamples: int, seed: int) -> Column:
    shared = sorted(base.keys() & new.keys())
    items = [Item(key=key, base=_score(base[key], name), new=_score(new[key], name), changed_output=_output(base[key], name) != _output(new[key], name)) for key in shared]
    scored = [item for item in items if item.difference is not None]
    draws = Bootstrap([item.key for item in scored], resamples=resamples, seed=seed)
    difference = draws.difference([item.new or 0.0 for item in scored], [item.base or 0.0 for item in scored]) if scored else Interval(estimate=None)
    improved = sum(1 for item in scored if (item.difference or 0.0) > 0)
    worsened = sum(1 for item in scored if (item.difference or 0.0) < 0)
    flips = [flip for key in shared for flip in _flips(key, base[key], new[key], name)]
    return Column(name=name, items=items, difference=difference, improved=improved, worsened=worsened, sign_p=sign_test(improved, worsened), flips=flips)


def _score(entry: JudgedRow | GridRow, arm: str) -> float | None:
    if isinstance(entry, JudgedRow):
        return entry.card.overall
    cell = entry.cells[arm]
    return None if cell.error else cell.checklist if cell.checklist is not None else cell.score


def _output(entry: JudgedRow | GridRow, arm: str) -> str | None:
    return entry.output if isinstance(entry, JudgedRow) else entry.cells[arm].output


def _answers(entry: JudgedRow | GridRow, arm: str) -> Iterator[tuple[str, str, bool | None]]:
    """Each verdict as (its key, what it asks, passed); unanswered ones as None."""
    if isinstance(entry, JudgedRow):
        for verdict in entry.card.verdicts:
            passed = None if verdict.answer == "unanswered" else verdict.answer == "yes"
            yield verdict.question_id, verdict.question or verdict.question_id, passed
    else:
        for check in entry.cells[arm].checks:
            yield check.name, check.text or check.name, check.passed


def _flips(key: str, base: JudgedRow | GridRow, new: JudgedRow | GridRow, arm: str) -> list[Flip]:
    """The verdicts answered in both runs that changed answer (an unanswered one is no flip: it is unscored)."""
    before = {name: (text, passed) for name, text, passed in _answers(base, arm)}
    answer: dict[bool, Passed] = {True: "yes", False: "no"}
    return [
        Flip(key=key, question=text, base=answer[was], new=answer[now])
        for name, text, now in _answers(new, arm)
        if name in before and (was := before[name][1]) is not None and now is not None and was != now
    ]
