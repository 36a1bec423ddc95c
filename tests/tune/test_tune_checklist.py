"""Kind ``checklist`` with a fake writer factory and a fake scorer: values, reuse of a saved trial, bad parameters."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.tune import KINDS, TuneResults, checklist_kind

TASKS = [
    {"task": "Summarize the article.", "gold": ["Is it short?", "Is it faithful?", "Does it name the main event?", "Is it neutral?"]},
    {"task": "Write a haiku.", "gold": {"task": "Write a haiku.", "dimensions": ["form"], "questions": [{"text": "Three lines?", "dimension": "form"}, {"text": "5-7-5?", "dimension": "form"}]}},
]
TUNE = """
name = "writers"
trials = 3
heartbeat = 1
[objectives]
coverage = "maximize"
lm_calls = "minimize"
[space]
questions_per_requirement = {{ type = "int", low = 1, high = {high} }}
[run]
kind = "checklist"
tasks = "tasks.jsonl"
method = "fake"
[run.params]
style = "terse"
"""


@dataclass
class Scored:
    coverage: float
    uniqueness: float


class FakeWriters:
    """``make_writer``: a writer of ``questions_per_requirement`` questions; refuses more than 5, as a real one would."""

    def __init__(self) -> None:
        self.written = 0

    def __call__(self, method: str, **params) -> object:
        if method != "fake" or params["questions_per_requirement"] > 5:
            raise InputError(f"{method} writer: field 'questions_per_requirement': at most 5")

        def write(*, task: str, dimensions: list[str] | None = None) -> Checklist:
            self.written += 1
            n = params["questions_per_requirement"]
            return Checklist(task=task, dimensions=["d"], questions=[Question(text=f"{params['style']} {i}?", dimension="d") for i in range(n)])

        return write


def fake_score(generated: Checklist, gold: Checklist) -> Scored:
    return Scored(coverage=min(1.0, len(generated.questions) / len(gold.questions)), uniqueness=0.5)


@pytest.fixture
def writers(tmp_path: Path, monkeypatch) -> FakeWriters:
    (tmp_path / "tasks.jsonl").write_text("\n".join(json.dumps(t) for t in TASKS) + "\n")
    fake = FakeWriters()
    monkeypatch.setitem(KINDS, "checklist", checklist_kind(make_writer=fake, score=fake_score))
    monkeypatch.setattr("bineval_dspy.lm.runtime.configure", lambda options=None, cache_dir=None: None)
    return fake


def config(tmp_path: Path, high: int = 4) -> Path:
    path = tmp_path / "tune.toml"
    path.write_text(TUNE.format(high=high))
    return path


def test_trials_write_and_score_a_checklist_per_task(tmp_path, writers):
    assert cli.main(["tune", str(config(tmp_path))]) == 0
    saved = TuneResults.model_validate_json((tmp_path / "runs" / "writers" / "results.json").read_text())
    for trial in saved.trials:
        n = trial.params["questions_per_requirement"]
        assert trial.measured == {"coverage": (min(1, n / 4) + min(1, n / 2)) / 2, "uniqueness": 0.5, "lm_calls": 0.0, "questions": n}
        stored = json.loads((tmp_path / "runs" / "writers" / str(trial.run_dir) / "checklists.json").read_text())
        assert len(stored["checklists"]) == 2 and stored["checklists"][0]["questions"][0]["text"] == "terse 0?"
    assert saved.best  # the Pareto front of coverage against LM calls


def test_a_saved_trial_is_reused_unless_other_settings_made_it(tmp_path, writers, capsys):
    path = config(tmp_path, high=1)  # one parameter set only
    assert cli.main(["tune", str(path)]) == 0
    assert writers.written == 2  # two tasks, once: the next trials found the saved checklists
    saved = TuneResults.model_validate_json((tmp_path / "runs" / "writers" / "results.json").read_text())
    assert len({t.run_dir for t in saved.trials}) == 1 and len(saved.trials) == 3
    (tmp_path / "tasks.jsonl").write_text(json.dumps(TASKS[0]) + "\n")  # other tasks, in a study made anew
    for made in (tmp_path / "runs" / "writers").glob("study.db*"):
        made.unlink()
    assert cli.main(["tune", str(path)]) == 0
    assert writers.written == 3  # the saved trial was made with other tasks: written again, once, and said
    said = "".join(capsys.readouterr().err.split())  # the console wraps a long path anywhere
    assert said.count("checklists.json:madewithothersettings(run.tasks:") == 1 and "redoingit" in said, said


def test_parameters_the_writer_refuses_are_one_line_before_any_trial(tmp_path, writers, capsys):
    assert cli.main(["tune", str(config(tmp_path, high=9))]) == 2
    err = capsys.readouterr().err
    assert "tune.toml: run.method 'fake': fake writer: field 'questions_per_requirement': at most 5" in err
    assert len(err.strip().splitlines()) == 1 and writers.written == 0


def test_the_library_writers_check_the_space(tmp_path, monkeypatch, capsys):
    (tmp_path / "tasks.jsonl").write_text(json.dumps(TASKS[0]) + "\n")
    body = TUNE.format(high=2).replace('method = "fake"\n[run.params]\nstyle = "terse"\n', 'method = "qworld"\n')
    body = body.replace('questions_per_requirement = { type = "int", low = 1, high = 2 }', 'w1 = { type = "int", low = 0, high = 30 }')
    (tmp_path / "tune.toml").write_text(body)
    assert cli.main(["tune", str(tmp_path / "tune.toml")]) == 2
    err = capsys.readouterr().err
    assert "run.method 'qworld': qworld writer: field 'w1'" in err and len(err.strip().splitlines()) == 1
