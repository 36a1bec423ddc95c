"""`bineval tune` configs: defaults, one-line errors, search-space suggestions, and the per-trial seeded sampler."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest

from bineval_dspy import cli
from bineval_dspy.tune import KINDS, TrialSeededSampler, load_config
from bineval_dspy.tune.config import CategoricalParam, FloatParam, IntParam
from tests.tune.fakes import fake_runner

FAKE = """
name = "demo"
trials = 3
heartbeat = 1
[objectives]
loss = "minimize"
[space]
x = { type = "float", low = 0.0, high = 1.0 }
[run]
kind = "fake"
"""

SUITE_ROW = {"instruction_id_list": ["detectable_format:number_bullet_lists"], "kwargs": [{"num_bullets": 2}]}
OPTIMIZE = """
mode = "self"
run_dir = "ignored"
[data]
suite = "suite.jsonl"
train = 2
val = 2
"""


@pytest.fixture(autouse=True)
def fake_kind(monkeypatch):
    monkeypatch.setitem(KINDS, "fake", fake_runner)


def write(tmp_path: Path, body: str, name: str = "tune.toml") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


def test_defaults_put_the_study_in_its_folder(tmp_path):
    config = load_config(write(tmp_path, FAKE))
    assert config.dir == (tmp_path / "runs" / "demo").resolve()
    assert config.storage_url == f"sqlite:///{tmp_path.resolve()}/runs/demo/study.db"
    given = load_config(write(tmp_path, FAKE.replace('name = "demo"', 'name = "demo"\nstorage = "postgresql://u:secret@db/tune"\ndir = "elsewhere"')))
    assert given.storage_url == "postgresql://u:secret@db/tune" and given.dir == (tmp_path / "elsewhere").resolve()


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("trials = 3", "", "field 'trials': Field required"),
        ("trials = 3", "trials = 0", "field 'trials'"),
        ('name = "demo"', 'name = "../up"', "field 'name'"),
        ("trials = 3", "trials = 3\nbogus = 1", "unknown key(s): 'bogus'"),
        ('loss = "minimize"', 'loss = "lower"', "field 'objectives.loss'"),
        ('loss = "minimize"', 'speed = "minimize"', "field 'objectives.speed': not a value of kind 'fake'; one of loss, cost"),
        ("low = 0.0, high = 1.0", "low = 2.0, high = 1.0", "low 2.0 is above high 1.0"),
        ("low = 0.0, high = 1.0", "low = 0.0, high = 1.0, log = true", "a log range needs low > 0"),
        ("low = 0.0, high = 1.0", "low = 0.1, high = 1.0, log = true, step = 0.1", "log and step cannot be combined"),
        ('type = "float", low = 0.0, high = 1.0', 'type = "ordinal", low = 0.0, high = 1.0', "field 'space.x'"),
        ('type = "float", low = 0.0, high = 1.0', 'type = "categorical", choices = [1, 1]', "1 is listed twice"),
        ('type = "float", low = 0.0, high = 1.0', 'type = "categorical", choices = []', "field 'space.x.categorical.choices'"),
        ('kind = "fake"', 'kind = "nope"', "field 'run.kind': unknown kind 'nope'; one of checklist, fake, optimizer"),
        ('kind = "fake"', "steps = 2", "field 'run': Value error, needs kind"),
        ('kind = "fake"', 'kind = "fake"\nsteps = "many"', "field 'run.steps'"),
        ('loss = "minimize"', 'loss = "minimize"\ncost = "minimize"\n[pruner]\nkind = "median"', "Optuna does not prune multi-objective studies"),
        ('loss = "minimize"', 'cost = "minimize"\n[pruner]\nkind = "median"', "objective 'cost' has no per-step value to prune on"),
        ('name = "demo"', 'name = "demo"\nstorage = "nosuchdialect://x"', "field 'storage': cannot open nosuchdialect://x"),
        ("x = = 1", "x = = 1", "malformed TOML"),
    ],
)
def test_a_bad_config_is_one_line(tmp_path, capsys, old, new, message):
    body = FAKE.replace(old, new) if old in FAKE else FAKE + "\n" + new
    assert cli.main(["tune", str(write(tmp_path, body))]) == 2
    err = capsys.readouterr().err
    assert message in err and "tune.toml" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "space, run, message",
    [
        ('bogus = { type = "int", low = 1, high = 2 }', 'config = "run.toml"', "field 'space.bogus': not an [optimizer] setting"),
        ('max_iterations = { type = "int", low = 0, high = 3 }', 'config = "run.toml"', "field 'space.max_iterations': 0 is not a valid setting"),
        ('bloat_guard = { type = "categorical", choices = [true, "maybe"] }', 'config = "run.toml"', "'maybe' is not a valid setting"),
        ('patience = { type = "int", low = 1, high = 3 }', 'config = "missing.toml"', "field 'run.config'"),
        ('patience = { type = "int", low = 1, high = 3 }', 'config = "run.toml"\nbogus = 1', "field 'run.bogus'"),
    ],
)
def test_optimizer_kind_refuses_what_the_optimizer_cannot_take(tmp_path, capsys, space, run, message):
    (tmp_path / "suite.jsonl").write_text(json.dumps({"key": 0, "prompt": "List two fruits.", **SUITE_ROW}) + "\n")
    write(tmp_path, OPTIMIZE, "run.toml")
    body = f'name = "t"\ntrials = 1\n[objectives]\nval_score = "maximize"\n[space]\n{space}\n[run]\nkind = "optimizer"\n{run}\n'
    assert cli.main(["tune", str(write(tmp_path, body))]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_a_study_made_with_another_space_is_refused(tmp_path, capsys):
    path = write(tmp_path, FAKE.replace("trials = 3", "trials = 1"))
    assert cli.main(["tune", str(path)]) == 0
    path.write_text(FAKE.replace("high = 1.0", "high = 2.0"))
    assert cli.main(["tune", str(path)]) == 2
    err = capsys.readouterr().err
    assert "study 'demo' in sqlite:///" in err and ".db: made with other settings (space" in err


def test_suggestions_stay_in_their_ranges():
    space = {
        "n": IntParam(type="int", low=2, high=10, step=2),
        "k": IntParam(type="int", low=1, high=64, log=True),
        "rate": FloatParam(type="float", low=0.001, high=1.0, log=True),
        "delta": FloatParam(type="float", low=0.0, high=0.05, step=0.01),
        "mode": CategoricalParam(type="categorical", choices=[True, "strict", 3]),
    }
    study = optuna.create_study(sampler=TrialSeededSampler(0))
    drawn = []
    for _ in range(30):
        trial = study.ask()
        drawn.append({name: param.suggest(trial, name) for name, param in space.items()})
        study.tell(trial, 0.0)
    for d in drawn:
        assert d["n"] in (2, 4, 6, 8, 10) and 1 <= d["k"] <= 64 and isinstance(d["k"], int)
        assert 0.001 <= d["rate"] <= 1.0 and round(d["delta"] * 100, 6) in (0, 1, 2, 3, 4, 5)
        assert d["mode"] in (True, "strict", 3)
    assert {type(d["mode"]) for d in drawn} == {bool, str, int}  # TOML's types survive the storage


def two_workers(tmp_path: Path, sampler) -> list[float]:
    """Two study handles on one storage, as two worker processes have, each asking in turn."""
    tmp_path.mkdir()
    url = f"sqlite:///{tmp_path}/s.db"
    optuna.create_study(storage=url, study_name="s")
    workers = [optuna.load_study(storage=url, study_name="s", sampler=sampler()) for _ in range(2)]
    values = []
    for _ in range(3):
        for study in workers:
            trial = study.ask()
            values.append(trial.suggest_float("x", 0, 1))
            study.tell(trial, 0.0)
    return values


def test_workers_with_one_seed_never_share_parameters(tmp_path):
    plain = two_workers(tmp_path / "plain", lambda: optuna.samplers.TPESampler(seed=0))
    assert plain[0] == plain[1]  # why: the same seed in two processes draws the same numbers
    seeded = two_workers(tmp_path / "seeded", lambda: TrialSeededSampler(0))
    assert len(set(seeded)) == len(seeded)
    assert two_workers(tmp_path / "again", lambda: TrialSeededSampler(0)) == seeded  # trial N's draw depends on N only
