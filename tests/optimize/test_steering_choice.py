"""``[optimizer] steering``: candidates scored on the held-out split by the checklist score before any prompt edit,
the best one the acceptance policy keeps chosen, and the audit saying why (or why steering stayed as it was). The
scripted LM writes the bullets the rows ask for only when its request carries a steering spec, as a decoder
enforcing them would."""

from __future__ import annotations

import dspy
import pytest
from dspy.lm15 import Request

from bineval_dspy import cli
from bineval_dspy.enforce.steering import from_metadata
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.optimize.audit import Audit
from bineval_dspy.optimize.lessons import LessonBank
from bineval_dspy.optimize.metric import bineval_metric
from bineval_dspy.optimize.optimizer import BinEvalOptimizer
from bineval_dspy.programs.generator import Generator
from bineval_dspy.programs.state import ProgramFile
from bineval_dspy.programs.steer import SteeringSettings
from bineval_dspy.suites.rows import SuiteRow
from bineval_dspy.tune.optimizer_trials import held_out_curve
from tests.conftest import bag_of_words, scripted_lm
from tests.optimize.test_optimizer import World, checklist_for, rows


class SteeredWorld(World):
    """The optimizer test's World, whose generator writes two bullets when decoding is steered."""

    def __call__(self, request: Request) -> str:
        if from_metadata(request.config.extensions) is not None:
            self.generator_calls += 1
            return "* one\n* two"
        return super().__call__(request)


def compiled(tmp_path, candidates: list, **settings) -> tuple[Generator, Audit]:
    lm = scripted_lm(SteeredWorld(rewrite="Be kind."))
    lm.engine.supports_steering = True
    dspy.configure(lm=lm)
    train, val = rows(3), rows(2)
    student = Generator("Answer the request.").annotate([SuiteRow.from_example(ex) for ex in [*train, *val]])
    steering = [SteeringSettings.model_validate(c) for c in candidates]
    optimizer = BinEvalOptimizer(
        bineval_metric(BinaryJudge(), checklist_for), bank=LessonBank(embed=bag_of_words), run_dir=tmp_path / "run", steering=steering, max_iterations=1,
        **settings,
    )
    program = optimizer.compile(student, trainset=train, valset=val)
    assert isinstance(program, Generator) and optimizer.audit is not None
    return program, optimizer.audit


def test_the_candidate_with_the_best_held_out_score_is_chosen_and_the_audit_says_why(tmp_path):
    program, audit = compiled(tmp_path, ["none", "annotated"])
    choice = audit.steering
    assert choice is not None and choice.own == SteeringSettings()
    none, annotated = choice.candidates
    assert none.val is not None and none.val.score == 0.0 and none.decision is not None and not none.decision.accepted
    assert none.decision.reason == "the program's own steering: the start's held-out score"  # not scored twice
    assert annotated.val is not None and annotated.val.score == 1.0 and annotated.decision is not None and annotated.decision.accepted
    assert choice.chosen == SteeringSettings(enforce="annotated")
    assert choice.reason is not None and choice.reason.startswith("annotated: held-out 1.000, +1.000")
    assert "over the program's own (none, 0.000); the highest of 1 candidate(s) kept" in choice.reason
    assert audit.best.steering == SteeringSettings(enforce="annotated") and audit.best.val_score == 1.0
    assert program.enforce == "annotated"  # the compiled program decodes under the chosen steering
    assert ProgramFile.of(program).enforce == "annotated"
    assert audit.usage.lm_calls > audit.start.usage.lm_calls + sum(r.usage.lm_calls for r in audit.iterations)  # its cost counted
    assert Audit.load(tmp_path / "run").steering == choice  # written, and read back
    assert held_out_curve(audit) == [(1, 1.0)]  # what a tune trial reports: from the chosen steering's score on


def test_show_prints_each_candidate_and_the_choice(tmp_path, capsys):
    compiled(tmp_path, ["none", "annotated"])
    assert cli.main(["show", str(tmp_path / "run")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "steering none: held-out 0.00, the program's own steering: the start's held-out score" in out
    assert "steering annotated: held-out 1.00, held-out gain +1.000 [1.000, 1.000] within budget" in out
    assert "steering chosen: annotated: held-out 1.000" in out


def test_a_candidate_the_guard_rejects_leaves_the_programs_own_steering_and_says_so(tmp_path):
    excluded = {"enforce": "annotated", "exclude": ["detectable_format"]}  # leaves the rows' only constraint to the model
    program, audit = compiled(tmp_path, [excluded])
    choice = audit.steering
    assert choice is not None
    (trial,) = choice.candidates
    assert trial.val is not None and trial.val.score == 0.0 and trial.decision is not None and not trial.decision.accepted
    assert "below min_delta" in trial.decision.reason
    assert choice.chosen == SteeringSettings()
    assert choice.reason == "no candidate was kept over the program's own steering (none, held-out 0.000): it stays"
    assert program.enforce is None


def test_of_two_kept_candidates_the_higher_wins_and_the_other_is_named(tmp_path, monkeypatch):
    """Two candidates both beat the start; the one listed second scores higher and is chosen."""
    half = SteeringSettings(enforce="annotated", floor_tokens=0)
    original = Generator.forward

    def forward(self, prompt, config=None, variables=None):  # the floor-capped candidate steers only the first row
        if self.steering == half and not prompt.startswith("List two fruits (0)"):
            self.steering, kept = SteeringSettings(), self.steering
            try:
                return original(self, prompt, config, variables)
            finally:
                self.steering = kept
        return original(self, prompt, config, variables)

    monkeypatch.setattr(Generator, "forward", forward)
    program, audit = compiled(tmp_path, [half.model_dump(), "annotated"], min_delta=0.1)
    choice = audit.steering
    assert choice is not None and [t.val.score for t in choice.candidates if t.val] == [0.5, 1.0]
    assert choice.chosen == SteeringSettings(enforce="annotated")
    assert choice.reason is not None and choice.reason.endswith("the highest of 2 candidate(s) kept (annotated, floor +0 0.500)")


def test_a_judge_student_with_steering_candidates_is_refused(tmp_path):
    dspy.configure(lm=scripted_lm(lambda request: "yes"))
    optimizer = BinEvalOptimizer(bineval_metric(BinaryJudge(), checklist_for), steering=[SteeringSettings(enforce="extracted")])
    with pytest.raises(ValueError, match="steering: only a generator decodes under constraints, not a BinaryJudge"):
        optimizer.compile(BinaryJudge(), trainset=rows(1), valset=rows(1))


@pytest.mark.embedded
def test_on_the_embedded_model_extracted_steering_is_scored_and_kept_when_it_wins(tmp_path):
    """Two rows, 16 tokens: the extracted candidate decodes in lowercase, so every check holds; plain decoding writes
    a capital. Whichever wins, the audit scores both and the compiled program decodes under the chosen one."""
    from bineval_dspy.lm.specs import make_lm

    dspy.configure(lm=make_lm("smollm2"))
    ids = {"instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]}
    train, val = (
        [dspy.Example(key=f"{split}{i}", prompt=f"Name the capital of {country}, all in lowercase letters.", **ids).with_inputs("prompt")]
        for split, (i, country) in (("t", (0, "France")), ("v", (1, "Italy")))
    )
    optimizer = BinEvalOptimizer(
        bineval_metric(BinaryJudge(), checklist_for), bank=LessonBank(embed=bag_of_words), steering=[SteeringSettings(), SteeringSettings(enforce="extracted")],
        max_iterations=1,
    )
    program = optimizer.compile(Generator("Respond to the user's request.", max_tokens=16), trainset=train, valset=val)
    choice = optimizer.audit.steering if optimizer.audit is not None else None
    assert choice is not None and choice.reason is not None
    plain, extracted = choice.candidates
    assert extracted.val is not None and extracted.val.score == 1.0  # enforced: the lowercase check holds
    assert plain.val is not None and extracted.decision is not None
    assert extracted.decision.accepted == (plain.val.score < 1.0)  # a gain of at least min_delta, or none at all
    assert program.enforce == ("extracted" if extracted.decision.accepted else None)


def test_an_annotated_candidate_without_the_suite_rows_is_refused_before_any_call(tmp_path):
    world = SteeredWorld()
    dspy.configure(lm=scripted_lm(world))
    optimizer = BinEvalOptimizer(bineval_metric(BinaryJudge(), checklist_for), steering=[SteeringSettings(enforce="annotated")])
    with pytest.raises(ValueError, match=r"an 'annotated' candidate enforces the suite's instruction ids: give the generator its rows first"):
        optimizer.compile(Generator("Answer."), trainset=rows(1), valset=rows(1))
    assert world.generator_calls == 0


def test_an_lm_that_cannot_steer_is_refused_before_any_call(tmp_path):
    from bineval_dspy.core.errors import InputError

    world = SteeredWorld()
    dspy.configure(lm=scripted_lm(world))  # its engine does not decode under constraints
    optimizer = BinEvalOptimizer(bineval_metric(BinaryJudge(), checklist_for), steering=["none", SteeringSettings(enforce="extracted")])
    with pytest.raises(InputError, match="enforce = 'extracted': .* cannot decode under constraints"):
        optimizer.compile(Generator("Answer."), trainset=rows(1), valset=rows(1))
    assert world.generator_calls == 0
