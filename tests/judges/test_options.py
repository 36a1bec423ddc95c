"""The judge's options are declared once (`JudgeFields`) and validated once (`JudgeOptions`): the judge, the
meta-eval method, the optimizer config and every command's flags take them from there (issue 34, item 3)."""

from __future__ import annotations

import argparse

import pytest

from bineval_dspy import cli
from bineval_dspy.cli.options import add_judge_options, judge_flag
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import JudgeFields, JudgeOptions, JudgeSpec, checked_options
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.meta.methods import BinEvalMethod, MethodProblem

CONFLICTS = [
    ({"verdict_format": "prefilled", "chain_of_thought": True}, "verdict_format", "no chain of thought, no batch scoring"),
    ({"scoring": "batch", "chain_of_thought": True}, "scoring", "batch scoring answers without chain of thought"),
    ({"calibration": "content_free", "samples": 3}, "calibration", "calibration needs samples=1"),
]


@pytest.mark.parametrize(("options", "field", "why"), CONFLICTS)
def test_one_rule_refuses_a_conflict_wherever_the_options_come_from(options, field, why):
    with pytest.raises(ValueError, match=why):
        BinaryJudge(**options)
    with pytest.raises(InputError, match=f"judge options: .*{why}"):
        checked_options(**options)
    with pytest.raises(MethodProblem, match=why) as caught:
        BinEvalMethod(kind="bineval", name="m", **options).check([], "summeval", [])
    assert caught.value.field == field


def test_every_option_is_a_flag_of_judge_and_a_key_of_the_meta_eval_method():
    parser = argparse.ArgumentParser()
    add_judge_options(parser)
    flags = {action.dest: action.option_strings[0] for action in parser._actions if action.option_strings and action.dest != "help"}
    assert flags == {name: judge_flag(name) for name in JudgeFields.model_fields}
    assert set(JudgeFields.model_fields) <= set(BinEvalMethod.model_fields)
    args = parser.parse_args(["--cot", "--samples", "2", "--mode", "loose", "--explanations", "failures"])
    assert JudgeOptions(**{n: getattr(args, n) for n in JudgeFields.model_fields}) == JudgeOptions(
        chain_of_thought=True, samples=2, verifier_mode="loose", explanations="failures"
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["--samples", "0"])


def test_the_spec_keeps_its_recorded_shape_and_builds_the_same_judge():
    """Fingerprints compare the spec as text: its key order and left-out defaults are the ones runs have recorded."""
    spec = JudgeSpec(model="m", probability=True, thresholds={"d": 0.4})
    assert list(spec.model_dump()) == [
        "model", "chain_of_thought", "samples", "probability", "sample_temperature", "verifier_mode", "partial",
        "explanations", "calibration", "thresholds", "scoring",
    ]  # fmt: skip
    judge = BinaryJudge.from_spec(spec)
    assert judge.spec().model_copy(update={"model": "m"}) == spec and judge.thresholds == {"d": 0.4}
    with pytest.raises(ValueError, match="thresholds are probabilities"):
        JudgeSpec(model="m", thresholds={"d": 2.0})


def test_the_command_refuses_a_conflict_naming_its_flags(capsys, tmp_path):
    assert cli.main(["judge", "--checklist", "c.json", "--data", "d.jsonl", "--scoring", "batch", "--cot"]) == 2
    assert "judge options: --scoring: batch scoring answers without chain of thought" in capsys.readouterr().err
