"""Kind ``optimizer`` with a scripted LM: trials are optimize runs, a repeated parameter set reuses its run, pruning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from optuna.trial import TrialState

from bineval_dspy import cli
from bineval_dspy.optimize.audit import Audit
from bineval_dspy.tune import TuneResults, open_study, prepare, work
from bineval_dspy.tune.optimizer_trials import PRUNED
from tests.conftest import route_cli_lm
from tests.optimize.test_optimizer import World

SUITE_ROW = {"instruction_id_list": ["detectable_format:number_bullet_lists"], "kwargs": [{"num_bullets": 2}]}
# helps on held-out, and is 300 characters long: within a 4000-character budget, over a 200-character one
LONG_EDIT = "Use bullet points. " + "Be thorough and careful. " * 12
RUN = """
mode = "self"
run_dir = "not-used-by-tune"
[data]
suite = "suite.jsonl"
train = 3
val = 2
[program]
instructions = "Answer the request."
[optimizer]
max_iterations = 3
patience = 2
"""
TUNE = """
name = "budget"
trials = {trials}
heartbeat = 1
[objectives]
{objectives}
[space]
max_chars = {{ type = "categorical", choices = {choices} }}
[run]
kind = "optimizer"
config = "run.toml"
{extra}
"""


@pytest.fixture
def world(tmp_path: Path, monkeypatch, words_embedder) -> World:
    (tmp_path / "suite.jsonl").write_text("\n".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", **SUITE_ROW}) for i in range(6)) + "\n")
    (tmp_path / "run.toml").write_text(RUN)
    scripted = World(rewrite=LONG_EDIT)
    route_cli_lm(monkeypatch, scripted)
    return scripted


def tune_config(tmp_path: Path, trials: int, choices: str = "[200, 4000]", objectives: str = 'val_score = "maximize"', extra: str = "") -> Path:
    path = tmp_path / "tune.toml"
    path.write_text(TUNE.format(trials=trials, choices=choices, objectives=objectives, extra=extra))
    return path


def results(tmp_path: Path) -> TuneResults:
    return TuneResults.model_validate_json((tmp_path / "runs" / "budget" / "results.json").read_text())


def test_a_trial_is_an_optimize_run_and_a_repeated_parameter_set_reuses_it(tmp_path, world):
    assert cli.main(["tune", str(tune_config(tmp_path, trials=1, choices="[4000]"))]) == 0
    (first,) = results(tmp_path).trials
    assert first.values is not None and first.values["val_score"] == 1.0 and first.run_dir is not None
    run_dir = tmp_path / "runs" / "budget" / first.run_dir
    audit = Audit.load(run_dir)
    assert audit.settings.max_chars == 4000 and audit.settings.max_iterations == 3  # the trial's value, the config's others
    assert audit.stopped == "no failures left on the trainset"
    calls = world.generator_calls
    assert calls > 0 and first.measured["lm_calls"] >= calls and set(first.measured) == {"val_score", "lm_calls", "tokens", "prompt_chars"}

    assert cli.main(["tune", str(tune_config(tmp_path, trials=2, choices="[4000]"))]) == 0
    again = results(tmp_path).trials[1]
    assert again.run_dir == first.run_dir and again.values == first.values
    assert world.generator_calls == calls  # the finished, fingerprinted run was resumed: no LM call


def test_a_hopeless_run_is_pruned_its_rerun_too_and_without_a_pruner_it_goes_on(tmp_path, world):
    pruned = '[pruner]\nkind = "median"\nstartup_trials = 1'
    tuning = prepare(tune_config(tmp_path, trials=2, extra=pruned))
    study = open_study(tuning)
    study.enqueue_trial({"max_chars": 4000})
    study.enqueue_trial({"max_chars": 200})  # the edit is rolled back: held-out 0.0 after iteration 1, behind 1.0
    work(tuning, study)
    good, bad = study.trials
    assert (good.state, bad.state) == (TrialState.COMPLETE, TrialState.PRUNED)
    assert good.intermediate_values == {1: 1.0, 2: 1.0} and bad.intermediate_values == {1: 0.0}
    bad_dir = tmp_path / "runs" / "budget" / bad.user_attrs["run_dir"]
    audit = Audit.load(bad_dir)
    assert audit.stopped == PRUNED and len(audit.iterations) == 1

    calls = world.generator_calls
    tuning = prepare(tune_config(tmp_path, trials=3, extra=pruned))
    study = open_study(tuning)
    study.enqueue_trial({"max_chars": 200})
    work(tuning, study)
    assert study.trials[2].state == TrialState.PRUNED and world.generator_calls == calls  # pruned from its record

    tuning = prepare(tune_config(tmp_path, trials=4, extra='[pruner]\nkind = "none"'))
    study = open_study(tuning)
    study.enqueue_trial({"max_chars": 200})
    work(tuning, study)
    last = study.trials[3]
    assert last.state == TrialState.COMPLETE and last.value == 0.0 and world.generator_calls > calls
    audit = Audit.load(bad_dir)
    assert len(audit.iterations) == 2 and audit.stopped == "no new lessons to apply"  # the pruned run, continued


def test_held_out_score_against_lm_calls_gives_a_pareto_front(tmp_path, world):
    path = tune_config(tmp_path, trials=2, objectives='val_score = "maximize"\nlm_calls = "minimize"')
    tuning = prepare(path)
    assert tuning.pruner.kind == "none"  # Optuna does not prune multi-objective studies
    assert tuning.env.lm_cache == tmp_path.resolve() / "runs" / "budget" / "lm-cache"  # DSPy's LM cache: one per study
    study = open_study(tuning)
    for max_chars in (200, 4000):
        study.enqueue_trial({"max_chars": max_chars})
    assert cli.main(["tune", str(path)]) == 0
    saved = results(tmp_path)
    values = {t.params["max_chars"]: t.values for t in saved.trials}
    assert values[4000] is not None and values[200] is not None
    assert values[4000]["val_score"] == 1.0 and values[200]["val_score"] == 0.0
    front = {t.params["max_chars"] for t in saved.best}
    assert 4000 in front and (200 in front) == (values[200]["lm_calls"] < values[4000]["lm_calls"])
    assert (tmp_path / "runs" / "budget" / "trials.png").is_file()


def test_a_call_budget_stops_the_study_between_trials_and_a_rerun_goes_on(tmp_path, world, capsys):
    config = tune_config(tmp_path, trials=2, choices="[200, 4000]")
    assert cli.main(["tune", str(config), "--max-calls", "1"]) == 4  # the first trial runs (nothing to estimate from)
    err = capsys.readouterr().err
    assert "stopped: budget reached (--max-calls 1)" in err and "1 of 2 trial(s) not finished" in err
    (first,) = results(tmp_path).trials
    assert first.usage is not None and first.usage.lm_calls == first.measured["lm_calls"] > 1
    assert cli.main(["tune", str(config)]) == 0
    saved = results(tmp_path)
    assert saved.states == {"COMPLETE": 2} and saved.trials[0] == first
    assert saved.usage.lm_calls == sum(t.usage.lm_calls for t in saved.trials if t.usage)  # the study's cost: its trials'


def test_a_dollar_budget_needs_priced_lms_before_any_trial(tmp_path, world, capsys):
    assert cli.main(["tune", str(tune_config(tmp_path, trials=1)), "--max-cost", "1"]) == 2
    assert "--max-cost: the price of LM 'smollm2' is unknown" in capsys.readouterr().err
    assert world.generator_calls == 0 and not (tmp_path / "runs" / "budget" / "trials").exists()
