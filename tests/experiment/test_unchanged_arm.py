"""Issue 57, item 7: on a suite whose rows each state their own constraint (IFBench-style), the optimizer arm drew no
lesson, stopped at iteration 1 and the table showed +0.000 with no cue. The arm now says why, in results.md, on
stderr, in results.json and in the report, with the setting to change."""

from __future__ import annotations

import json
from pathlib import Path

from bineval_dspy import cli
from bineval_dspy.optimize.audit import Audit
from bineval_dspy.optimize.unchanged import unchanged_note
from tests.experiment.test_experiment import fruit_suite, scripted  # noqa: F401  (the scripted LM fixture)

OWN = [  # one constraint per row, each failed by the scripted reply "one and two"
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}), ("change_case:english_capital", {}), ("detectable_format:title", {}),
    ("startend:end_checker", {"end_phrase": "Is there anything else?"}), ("detectable_content:postscript", {"postscript_marker": "P.S."}),
    ("keywords:existence", {"keywords": ["banana"]}), ("detectable_format:json_format", {}), ("startend:quotation", {}),
]


def _config(tmp_path: Path, suite: Path) -> Path:
    config = tmp_path / "exp.toml"
    config.write_text(
        f'name = "own"\nmode = "self"\nrun_dir = "runs/own"\n[data]\nsuite = "{suite.name}"\ntrain = 4\nval = 2\ntest = 2\n'
        '[program]\ninstructions = "Answer the request."\n[[arms]]\nname = "start"\nkind = "start"\n[[arms]]\nname = "guard"\nkind = "bineval"\n'
    )
    return config


def test_an_optimizer_arm_that_drew_no_lesson_from_rows_own_constraints_says_why(tmp_path, scripted, capsys):  # noqa: F811
    suite = tmp_path / "suite.jsonl"
    suite.write_text("\n".join(
        json.dumps({"key": i, "prompt": f"List two fruits ({i}).", "instruction_id_list": [iid], "kwargs": [kw]}) for i, (iid, kw) in enumerate(OWN)
    ) + "\n")
    assert cli.main(["experiment", str(_config(tmp_path, suite))]) == 0
    run = tmp_path / "runs" / "own"
    err = " ".join(capsys.readouterr().err.split())
    said = "arm guard: kept its start program (its difference from the start measures no optimization): stopped at iteration 1: no new lessons to apply"
    assert said in err and "fewer than min_rule_share 0.5 of the 4 train rows" in err and "lower [optimizer] min_rule_share" in err
    table = (run / "results.md").read_text()
    assert "| guard | bineval (kept its start program) |" in table and "- guard: kept its start program" in table
    arms = {arm["name"]: arm for arm in json.loads((run / "results.json").read_text())["arms"]}
    assert arms["start"]["note"] is None and "each of the 4 failed rule(s)" in arms["guard"]["note"]
    assert cli.main(["show", str(run)]) == 0
    assert "guard: kept its start program" in " ".join(capsys.readouterr().out.split())
    assert cli.main(["show", str(run / "arms" / "guard")]) == 0  # the optimize run's own trajectory says it too
    assert "min_rule_share 0.5 of the 4 train rows" in " ".join("".join(capsys.readouterr()).split())
    assert cli.main(["report", str(run), "-o", str(tmp_path / "r.html")]) == 0
    assert "kept its start program" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_an_arm_whose_rule_every_row_shares_gets_no_note(tmp_path, scripted, capsys):  # noqa: F811
    """The same run on a suite where every row asks for bullets: the lesson is drawn and accepted, no note."""
    assert cli.main(["experiment", str(_config(tmp_path, fruit_suite(tmp_path, 8)))]) == 0
    run = tmp_path / "runs" / "own"
    assert "kept its start program" not in (run / "results.md").read_text()
    assert unchanged_note(Audit.load(run / "arms" / "guard")) is None
