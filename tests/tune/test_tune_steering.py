"""Steering in ``bineval tune`` and ``bineval optimize`` configs: a study's space names the generator's steering
(``steering_enforce``, ``steering_exclude``, ...), each trial's run decodes under the values drawn, and the study
keeps the one with the best held-out score; the run config's ``[optimizer] steering`` and ``[program] steering``
read and refuse as other settings do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import InputError
from bineval_dspy.optimize.audit import Audit
from bineval_dspy.optimize.config import build, load_config
from bineval_dspy.programs.steer import SteeringSettings
from bineval_dspy.tune import TuneResults, prepare
from bineval_dspy.tune.optimizer_trials import trial_steering
from tests.conftest import route_cli_lm
from tests.optimize.test_steering_choice import SteeredWorld
from tests.tune.test_tune_optimizer import RUN, SUITE_ROW

TUNE = """
name = "steer"
trials = 2
heartbeat = 1
[objectives]
val_score = "maximize"
[space]
steering_enforce = {{ type = "categorical", choices = ["none", "annotated"] }}
{more}
[run]
kind = "optimizer"
config = "run.toml"
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch, words_embedder) -> Path:
    (tmp_path / "suite.jsonl").write_text("\n".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", **SUITE_ROW}) for i in range(6)) + "\n")
    (tmp_path / "run.toml").write_text(RUN.replace("max_iterations = 3", "max_iterations = 1"))
    route_cli_lm(monkeypatch, SteeredWorld(rewrite="Be kind.")).engine.supports_steering = True
    return tmp_path


def tune(folder: Path, more: str = "") -> Path:
    path = folder / "tune.toml"
    path.write_text(TUNE.format(more=more))
    return path


def test_a_study_chooses_the_steering_with_the_best_held_out_score(folder):
    from bineval_dspy.tune import open_study, work

    tuning = prepare(tune(folder))
    study = open_study(tuning)
    study.enqueue_trial({"steering_enforce": "none"})
    study.enqueue_trial({"steering_enforce": "annotated"})
    work(tuning, study)
    assert cli.main(["tune", str(tune(folder))]) == 0  # the study is complete: the command writes its results
    results = TuneResults.model_validate_json((folder / "runs" / "steer" / "results.json").read_text())
    by_value = {t.params["steering_enforce"]: t for t in results.trials}
    assert by_value["none"].values == {"val_score": 0.0} and by_value["annotated"].values == {"val_score": 1.0}
    (best,) = results.best
    assert best.params == {"steering_enforce": "annotated"}  # the report's chosen values
    assert best.run_dir is not None
    audit = Audit.load(folder / "runs" / "steer" / best.run_dir)
    assert audit.start.val.score == 1.0  # the trial's run decoded under the drawn steering from its start


def test_a_space_naming_an_unknown_kind_or_setting_is_refused_before_any_trial(folder):
    with pytest.raises(InputError, match=r"field 'space\.steering_exclude': 'chnage_case' names no instruction id"):
        prepare(tune(folder, 'steering_exclude = { type = "categorical", choices = ["", "chnage_case"] }'))
    with pytest.raises(InputError, match=r"field 'space\.steering_colour': not an \[optimizer\] setting nor a steering one"):
        prepare(tune(folder, 'steering_colour = { type = "categorical", choices = ["red"] }'))
    prepare(tune(folder, 'steering_exclude = { type = "categorical", choices = ["", "change_case mask"] }\nsteering_floor_tokens = { type = "int", low = -1, high = 64 }'))


def test_trial_steering_sets_each_field_and_plain_decoding_drops_the_limits():
    base = SteeringSettings(enforce="extracted")
    drawn = trial_steering(base, {"steering_exclude": "change_case, mask", "steering_floor_tokens": 32, "max_chars": 9})
    assert drawn == SteeringSettings(enforce="extracted", exclude=("change_case", "mask"), floor_tokens=32)
    assert trial_steering(base, {"steering_floor_tokens": -1}).floor_tokens is None  # negative: what the floor needs
    assert trial_steering(base, {"steering_enforce": "none", "steering_only": "mask"}) == SteeringSettings()


def test_a_run_config_reads_steering_candidates_and_refuses_a_misspelt_name(folder):
    config = folder / "run.toml"
    config.write_text(RUN + 'steering = ["none", "annotated", { enforce = "annotated", exclude = ["detectable_format"] }]\n')
    loaded = load_config(config)
    assert loaded.optimizer.steering == [
        SteeringSettings(), SteeringSettings(enforce="annotated"), SteeringSettings(enforce="annotated", exclude=("detectable_format",))
    ]
    student, optimizer, _ = build(loaded)
    assert optimizer.settings.steering == loaded.optimizer.steering and student.annotations  # annotated candidates need the rows
    config.write_text(RUN.replace('[optimizer]', '[program.steering]\nexclude = ["chnage_case"]\n[optimizer]').replace(
        '[program]\ninstructions = "Answer the request."', '[program]\ninstructions = "Answer the request."\nenforce = "extracted"'))
    with pytest.raises(InputError, match=r"field 'program\.steering': 'chnage_case' names no instruction id"):
        build(load_config(config))
