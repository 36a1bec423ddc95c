"""A study's results as typed models (``results.json``), a table of the best trials, and a plot of every trial.

One objective: the best trial, and a plot of each trial's value with the best so far. Several: the Pareto front
(the trials no other beats on every objective), plotted over the first two objectives.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState
from pydantic import BaseModel, Field, computed_field
from rich.table import Table

from bineval_dspy.core.jsonio import write_text_atomic
from bineval_dspy.core.plots import agg_figure
from bineval_dspy.lm.usage import Cost, total
from bineval_dspy.runs.kinds import RUN_KINDS
from bineval_dspy.tune.config import Direction, TuneConfig
from bineval_dspy.tune.study import brief, shown_url

RESULTS_FILE = "results.json"
PLOT_FILE = "trials.png"


class TrialRecord(BaseModel):
    """One trial as the study stored it: ``values`` by objective name, ``measured`` every value its runner
    returned (objectives or not), ``steps`` the values reported per step."""

    number: int
    state: str
    params: dict[str, Any]
    values: dict[str, float] | None = None
    measured: dict[str, float] = Field(default_factory=dict)
    steps: dict[int, float] = Field(default_factory=dict)
    run_dir: str | None = Field(default=None, description="relative to the study's folder")
    surplus: bool = False
    usage: Cost | None = Field(default=None, description="what the trial's runner spent when it ran; None: it never ran")


@RUN_KINDS.writes("tune", spec=TuneConfig, legacy=({"study", "trials"},))
class TuneResults(BaseModel):
    """A study when this worker finished: counts by state, the best trial(s), and every trial."""

    study: str
    storage: str
    objectives: dict[str, Direction]
    trials_wanted: int
    states: dict[str, int]
    best: list[TrialRecord] = Field(description="the best trial (one objective) or the Pareto front (several)")
    trials: list[TrialRecord]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def usage(self) -> Cost:
        """What every trial of the study spent, all workers and reruns together."""
        return total(t.usage for t in self.trials if t.usage is not None)


def _record(trial: FrozenTrial, names: list[str]) -> TrialRecord:
    return TrialRecord(
        number=trial.number,
        state=trial.state.name,
        params=trial.params,
        values=dict(zip(names, trial.values)) if trial.values is not None else None,
        measured=trial.user_attrs.get("measured", {}),
        steps=dict(trial.intermediate_values),
        run_dir=trial.user_attrs.get("run_dir"),
        surplus=bool(trial.user_attrs.get("surplus", False)),
        usage=Cost.model_validate(trial.user_attrs["usage"]) if "usage" in trial.user_attrs else None,
    )


def collect(config: TuneConfig, study: optuna.Study) -> TuneResults:
    """The study's results, read from its storage."""
    names = list(config.objectives)
    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    best: list[FrozenTrial] = []
    if complete:
        best = sorted(study.best_trials, key=lambda t: t.number) if config.multi_objective else [study.best_trial]
    states: dict[str, int] = {}
    for trial in trials:
        states[trial.state.name] = states.get(trial.state.name, 0) + 1
    return TuneResults(
        study=config.name,
        storage=shown_url(config.storage_url),
        objectives=config.objectives,
        trials_wanted=config.trials,
        states=states,
        best=[_record(t, names) for t in best],
        trials=[_record(t, names) for t in trials],
    )


def _tmp(path: Path) -> Path:
    """A temporary name beside ``path`` of this process only: workers finishing together each write whole files."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_results(results: TuneResults, folder: Path) -> tuple[Path, Path]:
    """``results.json`` and ``trials.png`` in the study's folder, each written whole (then renamed)."""
    folder.mkdir(parents=True, exist_ok=True)
    path, plot = folder / RESULTS_FILE, folder / PLOT_FILE
    write_text_atomic(path, results.model_dump_json(indent=2))
    tmp = _tmp(plot)  # matplotlib writes the file itself: renamed whole once it is done
    plot_trials(results, tmp)
    tmp.replace(plot)
    return path, plot


def plot_trials(results: TuneResults, path: Path) -> None:
    """A PNG of the trials (matplotlib's Agg canvas: no display, no pyplot state)."""
    figure = agg_figure(figsize=(7, 4.5), dpi=110)
    axes = figure.add_subplot()
    names = list(results.objectives)
    complete = [t for t in results.trials if t.state == "COMPLETE" and t.values]
    finished = sum(results.states.get(s, 0) for s in ("COMPLETE", "PRUNED"))
    axes.set_title(f"{results.study}: {finished} of {results.trials_wanted} trials finished")
    if not complete:
        axes.text(0.5, 0.5, "no complete trial yet", ha="center", va="center", transform=axes.transAxes)
    elif len(names) == 1:
        _plot_history(axes, results, names[0], complete)
    else:
        _plot_front(axes, results, names, complete)
    figure.tight_layout()
    figure.savefig(path, format="png")


def _plot_history(axes: Any, results: TuneResults, name: str, complete: list[TrialRecord]) -> None:
    direction = results.objectives[name]
    pick = max if direction == "maximize" else min
    xs = [t.number for t in complete]
    ys = [t.values[name] for t in complete if t.values]
    axes.scatter(xs, ys, color="tab:blue", label="complete", zorder=3)
    pruned = [t for t in results.trials if t.state == "PRUNED" and t.steps]
    if pruned:
        last = [t.steps[max(t.steps)] for t in pruned]
        axes.scatter([t.number for t in pruned], last, color="grey", marker="x", label="pruned (last reported)", zorder=3)
    best, running = [], None
    for y in ys:
        running = y if running is None else pick(running, y)
        best.append(running)
    axes.step(xs, best, where="post", color="tab:red", label="best so far")
    axes.set_xlabel("trial")
    axes.set_ylabel(f"{name} ({direction})")
    axes.legend()


def _plot_front(axes: Any, results: TuneResults, names: list[str], complete: list[TrialRecord]) -> None:
    x, y = names[:2]
    axes.scatter([t.values[x] for t in complete if t.values], [t.values[y] for t in complete if t.values], color="tab:blue", alpha=0.6, label="complete")
    front = sorted((t for t in results.best if t.values), key=lambda t: t.values[x] if t.values else 0.0)
    fx = [t.values[x] for t in front if t.values]
    fy = [t.values[y] for t in front if t.values]
    axes.plot(fx, fy, "o-" if len(names) == 2 else "o", color="tab:red", label="Pareto front", zorder=3)
    for trial, px, py in zip(front, fx, fy):
        axes.annotate(str(trial.number), (px, py), textcoords="offset points", xytext=(4, 4), fontsize=8)
    axes.set_xlabel(f"{x} ({results.objectives[x]})")
    axes.set_ylabel(f"{y} ({results.objectives[y]})")
    if len(names) > 2:
        axes.set_title(f"{results.study}: Pareto front over {len(names)} objectives, first two shown")
    axes.legend()


def best_table(results: TuneResults) -> Table:
    """The best trial, or the Pareto front, as a table (a command prints it)."""
    counts = ", ".join(f"{n} {s.lower()}" for s, n in sorted(results.states.items()))
    title = "best trial" if len(results.objectives) == 1 else f"Pareto front ({len(results.best)} trials)"
    table = Table(title=f"{results.study}: {title} ({counts})")
    table.add_column("trial", justify="right")
    for name, direction in results.objectives.items():
        table.add_column(f"{name} ({direction[:3]})", justify="right")
    table.add_column("parameters")
    table.add_column("run")
    for trial in results.best:
        values = trial.values or {}
        table.add_row(
            str(trial.number),
            *(f"{values[name]:.4g}" for name in results.objectives),
            brief(trial.params),
            trial.run_dir or "-",
        )
    return table
