"""An experiment whose later arm fine-tunes a remote LM (issue 55's minor list): refused, naming the file and the
field, before any arm spends a call (it was refused only when that arm ran, after the arms before it, in a line
naming neither)."""

from __future__ import annotations

import json
from pathlib import Path

from bineval_dspy import cli
from tests.experiment.test_lm_arms import lms  # noqa: F401  (the fixture)


def test_a_finetune_arm_on_a_remote_lm_is_refused_before_any_arm_runs(tmp_path: Path, lms, capsys):  # noqa: F811
    (tmp_path / "suite.jsonl").write_text(
        "".join(json.dumps({"key": i, "prompt": f"Say hi ({i}).", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}) + "\n" for i in range(8))
    )
    config = tmp_path / "ft.toml"
    config.write_text(
        'mode = "self"\nrun_dir = "runs/ft"\nlm = "custom/plain"\n[data]\nsuite = "suite.jsonl"\ntrain = 4\nval = 0\n'
        '[[arms]]\nname = "plain"\nkind = "start"\nprogram = {instructions = "Answer."}\n'
        '[[arms]]\nname = "tuned"\nkind = "finetune"\n'
    )
    assert cli.main(["experiment", str(config)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "ft.toml: arm 'tuned': fine-tuning trains an embedded model" in err and "field 'lm' is 'custom/plain'" in err
    assert not lms["custom/plain"].engine.requests  # the first arm spent nothing
