"""A study of the test kind on SQLite: results and plot, resume, pruning, the Pareto front, dead and surplus trials."""

from __future__ import annotations

from pathlib import Path

import pytest
from optuna.trial import TrialState

from bineval_dspy import cli
from bineval_dspy.runs.header import RunHeader
from bineval_dspy.tune import KINDS, StudyObjective, SurplusTrial, TuneResults, open_study, prepare, work
from tests.tune.fakes import CALLS_FILE, fake_runner

BODY = """
name = "demo"
trials = {trials}
seed = 7
heartbeat = 1
[objectives]
{objectives}
[space]
x = {{ type = "float", low = 0.0, high = 1.0 }}
y = {{ type = "float", low = 0.0, high = 1.0 }}
[run]
kind = "fake"
steps = {steps}
{extra}
"""


@pytest.fixture(autouse=True)
def fake_kind(monkeypatch):
    monkeypatch.setitem(KINDS, "fake", fake_runner)


def config(tmp_path: Path, trials: int = 4, objectives: str = 'loss = "minimize"', steps: int = 1, extra: str = "") -> Path:
    path = tmp_path / "tune.toml"
    path.write_text(BODY.format(trials=trials, objectives=objectives, steps=steps, extra=extra))
    return path


def results(tmp_path: Path) -> TuneResults:
    return TuneResults.model_validate_json((tmp_path / "runs" / "demo" / "results.json").read_text())


def runs_done(tmp_path: Path) -> int:
    return sum(len(p.read_text().split()) for p in (tmp_path / "runs" / "demo" / "trials").glob(f"*/{CALLS_FILE}"))


def test_a_study_runs_its_trials_then_saves_the_best_and_a_plot(tmp_path, capsys):
    assert cli.main(["tune", str(config(tmp_path))]) == 0
    saved = results(tmp_path)
    assert saved.trials_wanted == 4 and saved.states == {"COMPLETE": 4}
    assert [t.number for t in saved.trials] == [0, 1, 2, 3]
    (best,) = saved.best
    assert best.values is not None and best.values["loss"] == min(t.values["loss"] for t in saved.trials if t.values)
    assert best.run_dir is not None and (tmp_path / "runs" / "demo" / best.run_dir / CALLS_FILE).is_file()
    assert (tmp_path / "runs" / "demo" / "trials.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    header = RunHeader.model_validate_json((tmp_path / "runs" / "demo" / "results.json.run.json").read_text())
    assert (header.kind, header.status, header.usage) == ("tune", "finished", saved.usage)  # the study's one header
    captured = capsys.readouterr()
    err = captured.err + captured.out  # the best trials and written paths on stdout, progress on stderr
    assert "best trial" in captured.out and "4 complete" in err and "wrote" in captured.out


def test_rerunning_continues_the_study_and_counts_finished_trials(tmp_path):
    assert cli.main(["tune", str(config(tmp_path, trials=3))]) == 0
    first = results(tmp_path).trials
    assert cli.main(["tune", str(config(tmp_path, trials=3))]) == 0
    assert runs_done(tmp_path) == 3  # nothing left to do
    assert cli.main(["tune", str(config(tmp_path, trials=5))]) == 0
    saved = results(tmp_path)
    assert saved.states == {"COMPLETE": 5} and saved.trials[:3] == first and runs_done(tmp_path) == 5


def test_hopeless_trials_are_pruned_and_count_toward_the_total(tmp_path):
    path = config(tmp_path, trials=3, steps=3, extra='[pruner]\nkind = "median"\nstartup_trials = 1')
    tuning = prepare(path)
    study = open_study(tuning)
    for x in (0.6, 0.95, 0.3):  # the median of finished trials at step 1 stops the far one, not the near one
        study.enqueue_trial({"x": x, "y": 0.3})
    work(tuning, study)
    states = [t.state for t in study.trials]
    assert states == [TrialState.COMPLETE, TrialState.PRUNED, TrialState.COMPLETE]
    assert list(study.trials[1].intermediate_values) == [1]  # stopped at its first step
    assert list(study.trials[2].intermediate_values) == [1, 2, 3]


def test_several_objectives_give_the_pareto_front(tmp_path):
    path = config(tmp_path, trials=8, objectives='loss = "minimize"\ncost = "minimize"', steps=2)
    assert cli.main(["tune", str(path)]) == 0
    saved = results(tmp_path)
    complete = [t.values for t in saved.trials if t.values]
    front = [t.values for t in saved.best if t.values]
    assert front and len(complete) == 8

    def dominates(a: dict[str, float], b: dict[str, float]) -> bool:
        return all(a[k] <= b[k] for k in a) and any(a[k] < b[k] for k in a)

    assert not any(dominates(c, f) for f in front for c in complete)
    assert all(any(dominates(f, c) for f in front) for c in complete if c not in front)
    assert all(not t.steps for t in saved.trials)  # Optuna cannot prune several objectives: nothing is reported
    assert (tmp_path / "runs" / "demo" / "trials.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.filterwarnings("ignore:Heartbeat of storage")  # the test asks for trials as a dead worker did
def test_a_dead_workers_trial_is_failed_and_replaced(tmp_path):
    path = config(tmp_path, trials=2)
    tuning = prepare(path)
    study = open_study(tuning)
    orphan = study.ask()  # as a worker killed before its first heartbeat leaves it: RUNNING, and never beating
    work(tuning, study)  # waits out the grace period (2 heartbeats of 1 s), fails it, runs two trials
    assert study.trials[orphan.number].state == TrialState.FAIL
    assert sum(t.state == TrialState.COMPLETE for t in study.trials) == 2 and len(study.trials) == 3


@pytest.mark.filterwarnings("ignore:Heartbeat of storage")
def test_a_trial_beyond_the_count_is_failed_before_it_takes_parameters(tmp_path, caplog):
    tuning = prepare(config(tmp_path, trials=2))
    study = open_study(tuning)
    for _ in range(2):  # two live workers' trials, created just before ours
        study.ask().set_user_attr("worker", "elsewhere")
    study.optimize(StudyObjective(tuning), n_trials=1, catch=(SurplusTrial,))
    surplus = study.trials[2]
    assert surplus.state == TrialState.FAIL and surplus.user_attrs["surplus"] is True and surplus.params == {}
    assert runs_done(tmp_path) == 0 and "Trial 2 failed" not in caplog.text  # an expected race: no traceback


def test_one_parameter_set_is_one_run_directory(tmp_path):
    path = config(tmp_path, trials=2)
    path.write_text(path.read_text().replace('x = { type = "float", low = 0.0, high = 1.0 }\ny = { type = "float", low = 0.0, high = 1.0 }', 'x = { type = "categorical", choices = [0.5] }'))
    assert cli.main(["tune", str(path)]) == 0
    a, b = results(tmp_path).trials
    assert a.run_dir == b.run_dir and a.values == b.values
    calls = (tmp_path / "runs" / "demo" / str(a.run_dir) / CALLS_FILE).read_text().split()
    assert calls == ["0", "1"]  # the test kind does its work again; the optimizer kind resumes the finished run


def test_results_hide_the_storage_password(tmp_path):
    path = config(tmp_path, trials=1, extra="")
    path.write_text(path.read_text().replace('name = "demo"', f'name = "demo"\nstorage = "sqlite:///{tmp_path}/s.db"'))
    from bineval_dspy.tune.study import shown_url

    assert shown_url("postgresql://tuner:secret@db:5432/tune") == "postgresql://tuner:***@db:5432/tune"
    assert cli.main(["tune", str(path)]) == 0
    assert results(tmp_path).storage == f"sqlite:///{tmp_path}/s.db"
