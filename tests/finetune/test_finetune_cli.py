"""`bineval finetune` refuses bad input in one located line, before any sampling or training."""

from __future__ import annotations

import json

from bineval_dspy import cli

ROW = {"instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]}


def _config(tmp_path, extra: str = "", finetune: str = 'method = "sft"') -> str:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"key": f"k{i}", "prompt": f"Describe item {i} in lowercase.", **ROW}) + "\n" for i in range(6)))
    config = tmp_path / "ft.toml"
    config.write_text(
        f'mode = "self"\nrun_dir = "run"\n{extra}\n[data]\nsuite = "suite.jsonl"\ntrain = 2\nval = 2\ntest = 2\n[finetune]\n{finetune}\n'
    )
    return str(config)


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: ")
    return err


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
