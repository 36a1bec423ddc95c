"""`bineval finetune` refuses bad input in one located line, before any sampling or training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import InputError
from bineval_dspy.finetune.settings import FinetuneSettings

ROW = {"instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]}


def _config(tmp_path, extra: str = "", finetune: str = 'method = "sft"', val: int = 2) -> str:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"key": f"k{i}", "prompt": f"Describe item {i} in lowercase.", **ROW}) + "\n" for i in range(6)))
    config = tmp_path / "ft.toml"
    config.write_text(
        f'mode = "self"\nrun_dir = "run"\n{extra}\n[data]\nsuite = "suite.jsonl"\ntrain = 2\nval = {val}\ntest = 2\n[finetune]\n{finetune}\n'
    )
    return str(config)


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: ")
    return err


def test_val_0_is_a_run_of_its_own_and_dry_run_and_tiny_plan_it_without_running(tmp_path, capsys):
    """Issue 47: fine-tuning has no val loop, yet `val = 0` was refused; `--dry-run` and `--tiny` were experiment's only."""
    config = _config(tmp_path, val=0)
    assert cli.main(["finetune", config, "--dry-run"]) == 0
    full = " ".join(capsys.readouterr().out.split())
    assert "dry run:" in full and "2 test example(s)" in full and "no LM was called" in full
    assert cli.main(["finetune", config, "--dry-run", "--tiny"]) == 0
    small = " ".join(capsys.readouterr().out.split())
    assert "at most 24 completion tokens a call" in small and "at most 256" in full
    assert not (tmp_path / "run").exists() and not (tmp_path / "run-tiny").exists()  # nothing ran, nothing written
    optimize = tmp_path / "optimize.toml"
    optimize.write_text(Path(config).read_text().split("[finetune]")[0])
    assert cli.main(["optimize", str(optimize), "--dry-run"]) == 2  # the optimizer is checked on val: there it is refused
    assert "data.val" in capsys.readouterr().err


def test_an_unknown_or_invalid_finetune_setting_is_one_located_line(tmp_path, capsys):
    assert cli.main(["finetune", _config(tmp_path, finetune='method = "ppo"')]) == 2
    assert "finetune.method" in _one_error_line(capsys)
    assert cli.main(["finetune", _config(tmp_path, finetune="sample = 3")]) == 2
    assert "finetune.sample" in _one_error_line(capsys)


def test_train_data_that_holds_a_test_prompt_is_refused_before_any_lm_call(tmp_path, capsys):
    config = _config(tmp_path, extra='train_data = "suite.jsonl"')  # the whole suite: its val and test rows too
    assert cli.main(["finetune", config, "--cache-dir", str(tmp_path / "cache")]) == 2
    assert "would leak into training" in _one_error_line(capsys)
    assert not (tmp_path / "run" / "arms").exists()


@pytest.mark.parametrize("variant", [lambda p: p + " ", lambda p: p.replace(" ", "  ", 1), lambda p: p.replace(".", " .").upper()])
def test_train_data_holding_a_test_prompt_respaced_under_another_key_is_refused(tmp_path, capsys, variant):
    """Issue 46, item 3: a whitespace-only difference passed the exact-string comparison."""
    config = _config(tmp_path, extra='train_data = "extra.jsonl"')
    suite = [json.loads(line) for line in (tmp_path / "suite.jsonl").read_text().splitlines()]
    rows = [{**row, "key": f"copy-{row['key']}", "prompt": variant(row["prompt"])} for row in suite]
    (tmp_path / "extra.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert cli.main(["finetune", config, "--cache-dir", str(tmp_path / "cache")]) == 2
    assert "nearly duplicates" in (error := _one_error_line(capsys)) and "would leak into training" in error
    assert not (tmp_path / "run" / "arms").exists()


def test_judge_examples_that_copy_a_held_out_input_and_output_are_refused(tmp_path):
    import dspy

    from bineval_dspy.finetune.config import extra_train

    held = dspy.Example(input="Name a fruit that is red.", output="An apple is a red fruit.", question="Q?", example_id="e1")
    extra = tmp_path / "extra.jsonl"
    row = {"input": "Name a fruit  that is red. ", "output": "An apple is a red fruit.", "question": "Q?", "dimension": "d", "question_id": "x#0", "example_id": "x"}
    extra.write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError, match="'x' nearly duplicates 'e1'"):
        extra_train(extra, [held], "cross")
    extra.write_text(json.dumps({**row, "input": "Name a vegetable that is green.", "output": "Spinach."}) + "\n")
    assert [ex.example_id for ex in extra_train(extra, [held], "cross")] == ["x"]


@pytest.mark.parametrize(
    "setting, field",
    [
        ("target_modules = []", "finetune.target_modules"),
        ('target_modules = ["q_proj", "qkv_proj"]', "finetune.target_modules"),
        ('target_modules = ["lm_head"]', "finetune.target_modules"),
        ('target_modules = ["embed_tokens"]', "finetune.target_modules"),
        ("epochs = inf", "finetune.epochs"),
        ("learning_rate = inf", "finetune.learning_rate"),
    ],
)
def test_settings_that_cannot_train_or_export_are_refused_at_load(tmp_path, capsys, setting, field):
    """Issue 46, item 9: each passed validation and failed after the sampling (or trained for ever)."""
    assert cli.main(["finetune", _config(tmp_path, finetune=setting)]) == 2
    assert f"field '{field}'" in _one_error_line(capsys)
    assert not (tmp_path / "run").exists()


def test_the_adaptable_modules_are_the_linear_modules_of_a_llama_decoder_layer():
    """What ``target_modules`` accepts is what the model holds: the exporter's table, checked against transformers."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from bineval_dspy.finetune.export import LLAMA_TENSORS

    config = LlamaConfig(vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2)
    layer = LlamaForCausalLM(config).model.layers[0]
    assert {name for name, module in layer.named_modules() if isinstance(module, torch.nn.Linear)} == set(LLAMA_TENSORS)
    assert FinetuneSettings(target_modules=["self_attn.q_proj", "down_proj"]).target_modules == ["self_attn.q_proj", "down_proj"]


def test_a_moved_run_keeps_its_fingerprint_and_a_changed_setting_is_named(tmp_path):
    """Issue 46: the fingerprint held the suite's absolute path, so a run moved with its data was refused, naming
    two digests ("experiment: 'a1..' -> 'b2..'"); now the data's bytes count, and the field that differs is named."""
    from pathlib import Path
    from types import SimpleNamespace

    from bineval_dspy.cli.finetune import as_experiment
    from bineval_dspy.core.fingerprint import first_difference
    from bineval_dspy.finetune.config import load_finetune_config
    from bineval_dspy.optimize.config import run_fingerprint

    def config_in(name: str, extra: str = ""):
        (tmp_path / name).mkdir()
        return load_finetune_config(Path(_config(tmp_path / name, extra=extra)))

    here, moved, other = config_in("here"), config_in("moved"), config_in("other", extra="[program]\nmax_tokens = 64")
    assert run_fingerprint(here, "lm") == run_fingerprint(moved, "lm")

    from bineval_dspy.experiment.arms import finetune_fingerprint

    def fingerprint(config):
        experiment = as_experiment(config)
        return finetune_fingerprint(experiment.arms[1], SimpleNamespace(config=experiment, lm=SimpleNamespace(model="m", kwargs={})))

    assert fingerprint(here) == fingerprint(moved)
    assert first_difference(fingerprint(here), fingerprint(other)) == "config.program.max_tokens: 256 -> 64"
