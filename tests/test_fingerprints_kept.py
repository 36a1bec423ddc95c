"""Fingerprints derived from models (``core.settings``) are the very strings the hand-built ones were, so every run
made before still resumes (issue 48). Each expected value below was computed once by the code before the change, on
the same fixed inputs; a difference here means older output would be refused (or silently redone)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from bineval_dspy.core.settings import fingerprint_of, listed_digest, settled_json
from bineval_dspy.experiment import arms
from bineval_dspy.experiment.config import load_experiment
from bineval_dspy.experiment.params import ArmFingerprint, GepaFingerprint, ProbeFingerprint
from bineval_dspy.finetune.optimizer import SamplesFingerprint, TrainingKey
from bineval_dspy.finetune.settings import FinetuneSettings
from bineval_dspy.lm.runtime import LMOptions
from bineval_dspy.meta.methods import BinEvalMethod, RougeMethod
from bineval_dspy.optimize.config import load_config, run_fingerprint
from bineval_dspy.optimize.optimizer import CompileFingerprint
from bineval_dspy.optimize.settings import OptimizerSettings
from bineval_dspy.tune.checklist_trials import ChecklistRunner, ChecklistRunSettings
from bineval_dspy.tune.config import load_config as load_study
from bineval_dspy.tune.optimizer_trials import OptimizerRunner, OptimizerRunSettings
from bineval_dspy.tune.runners import TrialEnv

ROW = {"instruction_id_list": ["detectable_format:number_bullet_lists"], "kwargs": [{"num_bullets": 2}]}
SUITE = "".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", **ROW}) + "\n" for i in range(8))
EXAMPLES = "".join(
    json.dumps({"input": f"in {i}", "output": f"out {i}", "question": "Is it good?", "dimension": "quality", "question_id": f"q{i}",
                "example_id": f"e{i}", "reference": "yes" if i % 2 else "no"}) + "\n"
    for i in range(8)
)  # fmt: skip
CHECKLIST = json.dumps({"task": "t", "dimensions": ["d"], "questions": [{"text": "Is it short?", "dimension": "d"}]})
TRAIN_DATA = "".join(
    json.dumps({"key": 100 + i, "prompt": f"Name a color ({i}).", "instruction_id_list": [], "kwargs": []}) + "\n"
    for i in range(3)
)
HEAD = 'name = "{title}"\nmode = "{mode}"\nlm = "openai/test-model"\nrun_dir = "runs/exp"\n'
SELF_ARMS = """
[[arms]]
name = "start"
kind = "start"
[[arms]]
name = "guard"
kind = "bineval"
[[arms]]
name = "own"
kind = "bineval"
program = { instructions = "Answer briefly." }
optimizer = { accept = "significant" }
[[arms]]
name = "demos"
kind = "selection_demos"
[[arms]]
name = "gepa"
kind = "gepa"
max_metric_calls = 20
[[arms]]
name = "tuned"
kind = "finetune"
train_data = "extra.jsonl"
finetune = { samples = 2 }
[[arms]]
name = "tuned-plain"
kind = "finetune"
"""
SELF = (
    HEAD.format(title="fixed", mode="self")
    + """[data]
suite = "suite.jsonl"
train = 3
val = 2
[program]
instructions = "Answer the request."
checklist = "checklist.json"
[optimizer]
max_iterations = 2
"""
    + SELF_ARMS
)
CROSS = (
    HEAD.format(title="fixed-cross", mode="cross")
    + """[data]
examples = "examples.jsonl"
train = 3
val = 2
[[arms]]
name = "start"
kind = "start"
[[arms]]
name = "probe"
kind = "probe"
train_data = "examples.jsonl"
[[arms]]
name = "probe-plain"
kind = "probe"
folds = 3
"""
)
LM = SimpleNamespace(model="openai/test-model", kwargs={"api_base": "http://h:1/v1", "temperature": 0.0, "max_tokens": 64})  # as lm_identity reads it
SETTINGS = (
    '{"data": {"limit": {}, "seed": 0, "test": "rest", "train": 3, "val": 2}, "lesson_lm": null, "lm": "o'
    'penai/test-model", "mode": "self", "program": {"enforce": null, "instructions": "Answer the request.'
    '", "judge": {"calibration": "none", "chain_of_thought": false, "explanations": "all", "partial": fal'
    'se, "probability": false, "samples": 1, "scoring": "per_question", "verdict_format": "json", "verifi'
    'er_mode": "strict"}, "llm_questions": [0, 0], "max_tokens": 256, "threads": 1}, "reference": {"lm": '
    "null}}"
)  # the run description's settings, as every run fingerprint of the self-mode experiment records them
LM_IDENTITY = 'openai/test-model @ http://h:1/v1 {"max_tokens": 64, "temperature": 0.0}'
RUN = {
    "config": SETTINGS,
    "data_file": "8bc709a47c74efb6",
    "checklist_file": "0e6640e4476a4ac1",
    "lm": LM_IDENTITY,
    "verifiers": "VERIFIERS",
}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr("bineval_dspy.optimize.config.code_digest", lambda: "VERIFIERS")  # that code may change; the rest may not
    for name, text in {
        "suite.jsonl": SUITE,
        "examples.jsonl": EXAMPLES,
        "checklist.json": CHECKLIST,
        "extra.jsonl": TRAIN_DATA,
    }.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "self.toml").write_text(SELF)
    (tmp_path / "cross.toml").write_text(CROSS)
    return tmp_path


def _context(path: Path) -> tuple[arms.ArmContext, dict[str, arms.Arm]]:
    """The arms' context as far as fingerprints read it (the config and the LM), and the arms by name."""
    config = load_experiment(path)
    context = arms.ArmContext(config, None, [], [], [], None, LM, optimization_calls={})  # type: ignore[arg-type]
    return context, {arm.name: arm for arm in config.arms}


def test_an_experiments_shared_settings_and_its_optimizer_arms_keep_their_fingerprints(folder):
    context, arm = _context(folder / "self.toml")
    assert arms._run_settings(context) == RUN
    assert arms._fingerprint(context) == "24400e12003f5430"
    recorded = {
        name: fingerprint_of(ArmFingerprint(experiment="E", arm=arm[name]))["arm"]
        for name in ("guard", "own", "demos")
    }
    assert recorded == {
        "guard": '{"name":"guard","kind":"bineval","optimizer":{}}',  # program (added later) left out while unset
        "own": '{"name":"own","kind":"bineval","optimizer":{"accept":"significant"},"program":{"instructions":"Answer briefly."}}',
        "demos": '{"name":"demos","kind":"selection_demos","n":8,"temperature":0.7,"demos":2,"optimizer":{}}',
    }


def test_gepa_probe_and_finetune_arms_keep_their_fingerprints(folder):
    context, arm = _context(folder / "self.toml")
    assert (
        listed_digest(GepaFingerprint(experiment=arms._fingerprint(context), arm=arm["gepa"], budget=20))
        == "a07a0230139d0e0e"
    )
    assert arms.finetune_fingerprint(arm["tuned"], context) == {
        **RUN,
        "arm": '{"name":"tuned","kind":"finetune","train_data_rows":null,"finetune":{"samples":2}}',
        "train_data": "b5b606178f31aa0d",
    }
    assert arms.finetune_fingerprint(arm["tuned-plain"], context) == {
        **RUN,
        "arm": '{"name":"tuned-plain","kind":"finetune","train_data_rows":null,"finetune":{}}',
    }
    cross, arm = _context(folder / "cross.toml")
    assert arms._fingerprint(cross) == "29764985af0e3c74"
    assert listed_digest(
        ProbeFingerprint(experiment=arms._fingerprint(cross), arm=arm["probe"], train_data=["d66b72ea71e2eeb1"]),
        sort_keys=False,
    ) == "79a7f707353a96bb"
    assert listed_digest(
        ProbeFingerprint(experiment=arms._fingerprint(cross), arm=arm["probe-plain"], train_data=[]),
        sort_keys=False,
    ) == "20a4abf89350bf29"


def test_an_optimize_runs_fingerprint_is_kept_for_split_files_and_cross_mode(folder):
    lines = SUITE.splitlines(keepends=True)
    for name, line in zip(("train", "val", "test"), lines):
        (folder / f"{name}.jsonl").write_text(line)
    (folder / "split.toml").write_text(
        'mode = "self"\nrun_dir = "r"\n[data]\ntrain = "train.jsonl"\nval = "val.jsonl"\ntest = "test.jsonl"\n'
    )
    assert run_fingerprint(load_config(folder / "split.toml"), "LM") == {
        "config": (
            '{"data": {"limit": {}, "seed": 0}, "lesson_lm": null, "lm": "smollm2", "mode": "self", "program": {"'
            'enforce": null, "instructions": null, "judge": {"calibration": "none", "chain_of_thought": false, "e'
            'xplanations": "all", "partial": false, "probability": false, "samples": 1, "scoring": "per_question"'
            ', "verdict_format": "json", "verifier_mode": "strict"}, "llm_questions": [0, 0], "max_tokens": 256, '
            '"threads": 1}, "reference": {"lm": null}}'
        ),
        "train_file": "c9707e33b7f8ec41",
        "val_file": "df9833e371468a16",
        "test_file": "e21653ce9b74bf94",
        "lm": "LM",
        "verifiers": "VERIFIERS",
    }
    cross = 'mode = "cross"\nrun_dir = "r"\ntest_every = true\nverifiers = []\n[data]\nexamples = "examples.jsonl"\ntrain = 3\nval = 2\n'
    cross += "[program.judge]\nsamples = 3\n"
    (folder / "cross_run.toml").write_text(cross)
    assert run_fingerprint(load_config(folder / "cross_run.toml"), "LM") == {
        "config": (
            '{"data": {"limit": {}, "seed": 0, "test": "rest", "train": 3, "val": 2}, "lesson_lm": null, "lm": "s'
            'mollm2", "mode": "cross", "program": {"enforce": null, "instructions": null, "judge": {"calibration"'
            ': "none", "chain_of_thought": false, "explanations": "all", "partial": false, "probability": false, '
            '"samples": 3, "scoring": "per_question", "verdict_format": "json", "verifier_mode": "strict"}, "llm_'
            'questions": [0, 0], "max_tokens": 256, "threads": 1}, "reference": {"lm": null}}'
        ),
        "data_file": "d66b72ea71e2eeb1",
        "lm": "LM",
        "verifiers": "VERIFIERS",
    }


def test_the_optimizers_settings_leave_out_those_added_later_at_their_default():
    student = "2031da4148e5f254"
    default = fingerprint_of(
        CompileFingerprint(
            mode="self", settings=OptimizerSettings(), student_instructions=student, examples="3 train, 2 held-out"
        )
    )
    assert default == {
        "mode": "self",
        "settings": (
            '{"max_iterations":4,"patience":2,"min_delta":0.01,"target_score":null,"epsilon":0.05,"max_chars":400'
            '0,"max_growth":4.0,"min_allowance":400,"lessons_per_iteration":3,"max_failures":16,"demos":0,"thresh'
            'olds":false,"bloat_guard":true,"accept":"min_delta","resamples":1000,"confidence":0.95,"dedup_thresh'
            'old":0.7,"max_unanswered":0.2,"seed":0}'
        ),
        "student_instructions": student,
        "examples": "3 train, 2 held-out",
    }
    later = OptimizerSettings(kinds=["instructions"], min_rule_share=0.25, max_iterations=3)
    assert settled_json(later) == (
        '{"max_iterations":3,"patience":2,"min_delta":0.01,"target_score":null,"epsilon":0.05,"max_chars":400'
        '0,"max_growth":4.0,"min_allowance":400,"lessons_per_iteration":3,"max_failures":16,"min_rule_share":'
        '0.25,"demos":0,"thresholds":false,"bloat_guard":true,"accept":"min_delta","kinds":["instructions"],"'
        'resamples":1000,"confidence":0.95,"dedup_threshold":0.7,"max_unanswered":0.2,"seed":0}'
    )


def test_meta_eval_methods_leave_out_options_added_later_at_their_default():
    assert BinEvalMethod(name="m", kind="bineval").fingerprint_options() == {
        "chain_of_thought": False,
        "samples": 1,
        "probability": False,
        "explanations": "none",
        "calibration": "none",
        "name": "m",
        "lm": None,
        "kind": "bineval",
        "checklist": "generate",
        "max_questions": 24,
    }
    later = BinEvalMethod(
        name="m",
        kind="bineval",
        writer="tick",
        scoring="batch",
        code_routing=False,
        verdict_format="json",
        verifier_mode="loose",
        partial=True,
    )
    assert later.fingerprint_options() == {
        "chain_of_thought": False,
        "samples": 1,
        "probability": False,
        "verifier_mode": "loose",
        "partial": True,
        "explanations": "none",
        "calibration": "none",
        "scoring": "batch",
        "name": "m",
        "lm": None,
        "kind": "bineval",
        "checklist": "generate",
        "max_questions": 24,
        "writer": "tick",
        "code_routing": False,
    }
    assert RougeMethod(name="r", kind="rouge_l").fingerprint_options() == {
        "name": "r",
        "lm": None,
        "kind": "rouge_l",
        "references": "all",
        "stemmer": True,
    }
    assert RougeMethod(name="r", kind="rouge", rouge="rouge1", aggregate="mean").fingerprint_options() == {
        "name": "r",
        "lm": None,
        "kind": "rouge",
        "rouge": "rouge1",
        "references": "all",
        "aggregate": "mean",
        "stemmer": True,
    }


def test_a_studys_and_its_trial_kinds_fingerprints_are_kept(folder):
    (folder / "tasks.jsonl").write_text(json.dumps({"task": "Write a haiku.", "gold": ["Is it a haiku?"]}) + "\n")
    (folder / "opt.toml").write_text(
        'mode = "self"\nlm = "openai/test-model"\nrun_dir = "r"\n[data]\nsuite = "suite.jsonl"\ntrain = 3\nval = 2\n'
    )
    space = '[space.max_chars]\ntype = "int"\nlow = 200\nhigh = 4000\nlog = true\n'
    space += '[space.accept]\ntype = "categorical"\nchoices = ["min_delta", "significant"]\n'
    objectives = '[objectives]\nval_score = "maximize"\nlm_calls = "minimize"\n'
    (folder / "tune.toml").write_text(
        f'name = "s"\ntrials = 3\n{objectives}{space}[run]\nkind = "optimizer"\nconfig = "opt.toml"\n'
    )
    assert load_study(folder / "tune.toml").fingerprint() == {
        "objectives": '[["val_score", "maximize"], ["lm_calls", "minimize"]]',
        "space": "522201ec424b7f9d",
        "kind": "optimizer",
    }
    env = TrialEnv(base=folder, folder=folder / "study", source="tune.toml")
    served = TrialEnv(
        base=folder, folder=folder / "study", source="tune.toml", lm_options=LMOptions(api_base="http://h:2/v1")
    )
    assert OptimizerRunner(OptimizerRunSettings(config=Path("opt.toml")), env).fingerprint() == {
        "run.config": "d7af5f8b7c4d713e",
        "run.data": "8bc709a47c74efb6",
        "run.lm": "openai/test-model",
    }
    assert (
        OptimizerRunner(OptimizerRunSettings(config=Path("opt.toml")), served).fingerprint()["run.lm"]
        == "openai/test-model @ http://h:2/v1"
    )
    settings = ChecklistRunSettings(
        tasks=Path("tasks.jsonl"), method="tick", params={"max_questions": 5, "a": [1, 2]}, threshold=0.6
    )
    assert ChecklistRunner(settings, env, None, None).fingerprint() == {  # type: ignore[arg-type]
        "run.tasks": "c897f5cf5510fb0d",
        "run.method": "tick",
        "run.params": '{"a": [1, 2], "max_questions": 5}',
        "run.match": "embedding 0.6",
        "run.lm": "smollm2",
    }
    plain = ChecklistRunner(ChecklistRunSettings(tasks=Path("tasks.jsonl"), method="bineval"), served, None, None)  # type: ignore[arg-type]
    assert plain.fingerprint() == {
        "run.tasks": "c897f5cf5510fb0d",
        "run.method": "bineval",
        "run.params": "{}",
        "run.match": "embedding None",
        "run.lm": "smollm2 @ http://h:2/v1",
    }


@pytest.mark.parametrize(
    "settings, sampling, key",
    [
        (FinetuneSettings(), '{"greedy_too": true, "samples": 4, "seed": 0, "temperature": 0.8}', "0a1b05a9779bfda1"),
        (
            FinetuneSettings(enforce="extracted", samples=2),
            '{"enforce": "extracted", "greedy_too": true, "samples": 2, "seed": 0, "temperature": 0.8}',
            "877af1508e151cc7",
        ),
    ],
)
def test_fine_tunings_samples_and_training_keep_their_fingerprints(settings, sampling, key):
    given = settings.model_dump(include={"samples", "temperature", "greedy_too", "seed", "enforce"}, exclude_none=True)
    assert fingerprint_of(SamplesFingerprint(program="STATE", sampling=given)) == {
        "program": "STATE",
        "sampling": sampling,
    }
    data = [{"prompt": "p", "completion": "c"}]
    assert listed_digest(TrainingKey(base="smollm2", program="STATE", settings=settings, data=data)) == key
