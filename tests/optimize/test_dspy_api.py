"""BinEvalOptimizer as a DSPy optimizer: a metric as its first argument, located field errors, no teacher, no prints."""

from __future__ import annotations

import dspy
import pytest

from bineval_dspy.core.errors import InputError
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.optimize.lessons import LessonBank
from bineval_dspy.optimize.metric import bineval_metric
from bineval_dspy.optimize.optimizer import BinEvalOptimizer
from bineval_dspy.programs.generator import Generator
from tests.conftest import scripted_lm
from tests.optimize.test_optimizer import START, World, bag_of_words, checklist_for, rows


class Summarize(dspy.Signature):
    """Summarize the text."""

    text: str = dspy.InputField()
    summary: str = dspy.OutputField()


def test_a_missing_input_field_is_named_before_any_lm_call():
    world = World()
    dspy.configure(lm=scripted_lm(world))
    opt = BinEvalOptimizer(bineval_metric(BinaryJudge(), checklist_for, input_field="question"), bank=LessonBank(embed=bag_of_words))
    with pytest.raises(InputError, match=r"train example 0 \(0\): no field 'question' \(the metric's input_field"):
        opt.compile(Generator(START), trainset=rows(2), valset=rows(2))
    assert world.generator_calls == 0


def test_a_program_without_the_output_field_is_named():
    dspy.configure(lm=scripted_lm(World()))
    opt = BinEvalOptimizer(bineval_metric(BinaryJudge(), checklist_for), bank=LessonBank(embed=bag_of_words))
    with pytest.raises(InputError, match="produces no field 'response'.*produce summary.*output_field="):
        opt.compile(dspy.Predict(Summarize), trainset=rows(2))


def test_teacher_and_unknown_arguments_are_refused():
    opt = BinEvalOptimizer(bineval_metric(BinaryJudge(), checklist_for))
    with pytest.raises(ValueError, match="takes no teacher"):
        opt.compile(Generator(START), trainset=rows(1), teacher=Generator(START))
    with pytest.raises(TypeError):
        opt.compile(Generator(START), trainset=rows(1), num_trials=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unknown setting"):
        BinEvalOptimizer(bineval_metric(BinaryJudge(), checklist_for), max_iteration=3)


def test_any_dspy_metric_works_and_compile_prints_nothing(capsys):
    world = World(lesson="Use bullet points for every list.")
    dspy.configure(lm=scripted_lm(world))

    def bullets(gold, pred, trace=None, pred_name=None, pred_trace=None) -> dspy.Prediction:
        ok = pred.response.startswith("*")
        return dspy.Prediction(score=float(ok), feedback="" if ok else "Use bullet points for every list.")

    opt = BinEvalOptimizer(bullets, bank=LessonBank(embed=bag_of_words), max_iterations=1)
    program = opt.compile(Generator(START), trainset=rows(2), valset=rows(2))
    assert opt.audit is not None and opt.audit.iterations[0].failures[0].explanation == "Use bullet points for every list."
    assert opt.audit.best.val_score == 1.0 and "bullet" in program.generate.signature.instructions.lower()
    assert capsys.readouterr() == ("", "")
    assert not hasattr(program, "audit")  # results live on the optimizer, typed


def test_bootstrap_few_shot_keeps_only_outputs_that_pass_as_demonstrations():
    """DSPy asks a metric called with a trace for pass or fail; a Prediction is always truthy, so every output was
    kept, 0.0 scores too (issue 33, item 2)."""
    def answer(request) -> str:
        user = request.messages[-1].text
        return "* one\n* two" if any(f"({i})" in user for i in (0, 2)) else "one and two"  # two rows pass

    dspy.configure(lm=scripted_lm(answer))
    metric = bineval_metric(BinaryJudge(), checklist_for)
    assert metric(rows(1)[0], dspy.Prediction(response="one and two")).score == 0.0  # without a trace: the full result
    bootstrap = dspy.BootstrapFewShot(metric=metric, max_bootstrapped_demos=4, max_labeled_demos=0, max_rounds=1)
    compiled = bootstrap.compile(Generator(START), trainset=rows(4))
    demos = [demo for _, predictor in compiled.named_predictors() for demo in predictor.demos]
    assert sorted(demo["prompt"] for demo in demos) == ["List two fruits (0).", "List two fruits (2)."]
    with pytest.raises(ValueError, match="pass_threshold"):
        bineval_metric(BinaryJudge(), checklist_for, pass_threshold=2)
