"""The optimizer's seams: acceptance and stopping policies as replaceable objects, and the typed audit."""

from __future__ import annotations

import dspy

from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.optimize.audit import Audit, BestRecord, Decision, EvalSummary, IterationRecord, StartRecord
from bineval_dspy.optimize.edits import Edit
from bineval_dspy.optimize.lessons import LessonBank
from bineval_dspy.optimize.metric import bineval_metric
from bineval_dspy.optimize.optimizer import BinEvalOptimizer
from bineval_dspy.optimize.policies import AcceptAll, BloatGuard, MaxIterations, Patience, TargetScore
from bineval_dspy.optimize.settings import OptimizerSettings
from bineval_dspy.programs.generator import Generator
from bineval_dspy.programs.state import instructions_of
from bineval_dspy.stats.bootstrap import Interval
from tests.conftest import scripted_lm
from tests.optimize.test_optimizer import START, World, bag_of_words, checklist_for, rows


def audit(**changes) -> Audit:
    summary = EvalSummary(score=0.5, dimension_gaps={"d": 0.01})
    base = Audit(
        mode="cross",
        settings=OptimizerSettings(),
        start=StartRecord(instructions={"p": "x"}, prompt_chars=1, val=summary),
        best=BestRecord(instructions={"p": "x"}, val_score=0.5, val=summary),
    )
    return base.model_copy(update=changes)


def test_bloat_guard_budget_and_decisions():
    guard = BloatGuard(min_delta=0.05, max_chars=1000, max_growth=2.0, min_allowance=100)
    assert guard.budget(50) == 150 and guard.budget(600) == 1000
    assert guard.decide(gain=Interval(estimate=0.1), prompt_chars=120, start_chars=50).accepted
    kept_short = guard.decide(gain=Interval(estimate=0.01), prompt_chars=120, start_chars=50)
    assert not kept_short.accepted and "below min_delta" in kept_short.reason
    too_long = guard.decide(gain=Interval(estimate=0.5), prompt_chars=151, start_chars=50)
    assert not too_long.accepted and "over budget 150" in too_long.reason
    assert AcceptAll().decide(gain=Interval(estimate=-1.0), prompt_chars=10**6, start_chars=1).accepted


def test_the_significant_guard_wants_the_gain_interval_above_zero():
    guard = BloatGuard(min_delta=0.01, significant=True)
    noisy = guard.decide(gain=Interval(estimate=0.044, low=-0.03, high=0.12), prompt_chars=100, start_chars=100)
    assert not noisy.accepted and "not significant" in noisy.reason
    clear = guard.decide(gain=Interval(estimate=0.044, low=0.01, high=0.08), prompt_chars=100, start_chars=100)
    assert clear.accepted
    # the plain guard keeps the noisy gain: what the issue saw on IFEval
    assert BloatGuard(min_delta=0.01).decide(gain=Interval(estimate=0.044, low=-0.03, high=0.12), prompt_chars=100, start_chars=100).accepted


def test_stopping_rules_read_the_audit():
    stale = audit(stale=2, iterations=[IterationRecord(iteration=3)])
    assert Patience(2).reason(stale) == "patience 2 exhausted" and Patience(3).reason(stale) is None
    assert MaxIterations(3).reason(stale) == "max iterations 3" and MaxIterations(4).reason(stale) is None
    assert TargetScore(0.5).reason(stale) and TargetScore(0.6).reason(stale) is None


def test_a_user_policy_replaces_the_guard_and_a_user_rule_stops_the_run():
    class AlwaysRollBack:
        def decide(self, *, gain: Interval, prompt_chars: int, start_chars: int) -> Decision:
            return Decision(accepted=False, reason="the user's policy says no")

    class AfterOne:
        def reason(self, audit: Audit) -> str | None:
            return "one is enough" if audit.iterations else None

    dspy.configure(lm=scripted_lm(World()))
    opt = BinEvalOptimizer(
        bineval_metric(BinaryJudge(), checklist_for),
        bank=LessonBank(embed=bag_of_words),
        acceptance=AlwaysRollBack(),
        stopping=[AfterOne()],
    )
    program = opt.compile(Generator(START), trainset=rows(2), valset=rows(2))
    assert opt.audit is not None and opt.audit.stopped == "one is enough"
    decision = opt.audit.iterations[0].decision
    assert decision is not None and (decision.accepted, decision.reason) == (False, "the user's policy says no")
    assert decision.gain is not None  # the audit records the interval of every decision
    assert instructions_of(program) == {"generate": START}


def test_the_audit_round_trips_through_json(tmp_path):
    record = IterationRecord(
        iteration=1,
        edits=[Edit(lesson_id="l-1", before="", after="Use bullets.", appended=True)],
        decision=Decision(accepted=True, reason="gain"),
        val=EvalSummary(score=1.0),
    )
    original = audit(iterations=[record], stopped="done")
    original.save(tmp_path)
    assert Audit.load(tmp_path) == original
    assert record.outcome == "accepted" and IterationRecord(iteration=2).outcome == "in progress"


def test_settings_are_one_model_for_constructor_toml_and_audit():
    opt = BinEvalOptimizer(bineval_metric(BinaryJudge(), checklist_for), max_iterations=7)
    assert opt.settings.max_iterations == 7
    assert opt.get_params_summary() == opt.settings.model_dump()
