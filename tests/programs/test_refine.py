"""STICK with scripted LMs: refinement fixes failed checks and never regresses; best-of-N keeps the best."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import dspy
import pytest
from dspy.lm15 import Request

from bineval_dspy.checklists.hybrid import hybrid_checklist
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.programs.generator import Generator
from bineval_dspy.programs.refine import ChecklistBestOfN, SelfRefine
from tests.checklists.test_hybrid import ROW, TICK, tick_reply
from tests.conftest import ScriptedEngine, prompt_fields, scripted_lm, verdict_json

# ROW asks for the word "ocean" and no commas: both checked by code.
CODE_ONLY = hybrid_checklist(ROW, n_llm_questions=(0, 0))
GOOD = "The ocean is wide and deep."
BAD = "The sea is wide, and deep."  # no "ocean", a comma: fails both checks
HALF = "The ocean is wide, and deep."  # fails the comma check only


def stick_script(
    generate: Callable[[str], str] = lambda prompt: GOOD,
    rewrite: Callable[[str], str] = lambda text: GOOD,
    verdict: str = "yes",
    samples: Sequence[str | Exception] = (),
) -> Callable[[Request], str]:
    """Replies by request kind: TICK questions, judge verdicts, plans, rewrites, plain generations; a sampled
    generation (Best-of-N draws them concurrently, in no fixed order) is ``samples[seed]`` when given."""

    def script(request: Request) -> str:
        text = request.messages[-1].text
        if "order of fields: `questions`" in text:
            return tick_reply(TICK)
        if "order of fields: `verdict`" in text:
            return verdict_json(verdict)
        if "order of fields: `plan`" in text:
            return json.dumps({"plan": "remove the commas and mention the ocean"})
        if "order of fields: `revised_response`" in text:
            return json.dumps({"revised_response": rewrite(text)})
        if samples and request.config.seed is not None:
            item = samples[request.config.seed]
            if isinstance(item, Exception):
                raise item
            return item
        return generate(text)

    return script


def kinds(engine: ScriptedEngine) -> list[str]:
    out = []
    for request in engine.requests:
        text = request.messages[-1].text
        names = ("questions", "verdict", "plan", "revised_response")
        out.append(next((k for k in names if f"order of fields: `{k}`" in text), "generate"))
    return out


def test_all_passing_response_is_returned_unchanged_without_lm_calls():
    lm = scripted_lm(stick_script())
    dspy.configure(lm=lm)
    judge = BinaryJudge()
    card = judge(input=ROW.prompt, output=GOOD, checklist=CODE_ONLY)
    result = SelfRefine(judge, max_iterations=3)(prompt=ROW.prompt, response=GOOD, checklist=CODE_ONLY, scorecard=card)
    assert result.response == GOOD and result.iterations == []
    assert lm.engine.requests == []


def test_refine_fixes_a_failing_constraint_and_stops():
    lm = scripted_lm(stick_script(rewrite=lambda text: GOOD))
    dspy.configure(lm=lm)
    result = SelfRefine(BinaryJudge(), max_iterations=3)(prompt=ROW.prompt, response=BAD, checklist=CODE_ONLY)
    assert result.response == GOOD
    assert result.initial_score == 0.0 and result.scorecard.overall == 1.0
    assert len(result.iterations) == 1 and result.iterations[0]["kept"] is True  # nothing left to fix: stopped
    assert kinds(lm.engine) == ["plan", "revised_response"]
    plan_prompt = lm.engine.requests[0].messages[-1].text
    assert "punctuation:no_comma" in plan_prompt and "keywords:existence" in plan_prompt  # both failures fed back
    assert "Not met: asked for no commas; found 1 comma" in plan_prompt  # the verifier's diagnosis is fed back


def test_refine_tells_the_rewriter_what_passed():
    lm = scripted_lm(stick_script(rewrite=lambda text: GOOD))
    dspy.configure(lm=lm)
    result = SelfRefine(BinaryJudge())(prompt=ROW.prompt, response=HALF, checklist=CODE_ONLY)
    assert result.response == GOOD
    rewrite_prompt = prompt_fields(lm.engine.requests[1])
    failed, passed = rewrite_prompt["failed_checks"], rewrite_prompt["passed_checks"]
    assert "punctuation:no_comma" in failed and "keywords:existence" not in failed
    assert "keywords:existence" in passed


def test_refine_never_returns_a_worse_response():
    rewrites = iter([BAD, BAD + " Again, worse."])
    lm = scripted_lm(stick_script(rewrite=lambda text: next(rewrites)))
    dspy.configure(lm=lm)
    result = SelfRefine(BinaryJudge(), max_iterations=2)(prompt=ROW.prompt, response=HALF, checklist=CODE_ONLY)
    assert result.response == HALF
    assert result.scorecard.overall == 0.5
    assert [(i["score"], i["kept"]) for i in result.iterations] == [(0.0, False), (0.0, False)]


def test_refine_keeps_an_equal_score_original_and_stops_on_no_change():
    lm = scripted_lm(stick_script(rewrite=lambda text: HALF))
    dspy.configure(lm=lm)
    result = SelfRefine(BinaryJudge(), max_iterations=3)(prompt=ROW.prompt, response=HALF, checklist=CODE_ONLY)
    assert result.response == HALF
    assert len(result.iterations) == 1 and result.iterations[0]["unchanged"] is True


def test_refine_lm_failure_keeps_the_best_so_far():
    def script(request: Request) -> str:
        raise RuntimeError("server down")

    dspy.configure(lm=scripted_lm(script))
    result = SelfRefine(BinaryJudge())(prompt=ROW.prompt, response=HALF, checklist=CODE_ONLY)
    assert result.response == HALF
    assert "server down" in result.iterations[0]["error"]


def test_refine_judges_llm_questions_too():
    lm = scripted_lm(stick_script(rewrite=lambda text: GOOD, verdict="no"))
    dspy.configure(lm=lm)
    checklist = hybrid_checklist(ROW)
    lm.engine.requests.clear()
    result = SelfRefine(BinaryJudge())(prompt=ROW.prompt, response=BAD, checklist=checklist)
    # the TICK questions still fail, but both code checks now pass: a strictly better version
    assert result.response == GOOD and result.scorecard.overall == 0.5
    assert kinds(lm.engine).count("verdict") == 4  # 2 TICK questions, before and after


def test_best_of_n_picks_the_highest_score_first_on_ties():
    lm = scripted_lm(stick_script(samples=[BAD, HALF, GOOD, GOOD + " Yes."]))
    dspy.configure(lm=lm)
    pick = ChecklistBestOfN(Generator(), BinaryJudge(), n=4)(prompt=ROW.prompt, checklist=CODE_ONLY)
    assert pick.response == GOOD and pick.chosen == 2
    assert [c["score"] for c in pick.candidates] == [0.0, 0.5, 1.0, 1.0]
    assert [c["rollout_id"] for c in pick.candidates] == [0, 1, 2, 3]
    assert {r.config.temperature for r in lm.engine.requests} == {0.7}


def test_best_of_n_samples_are_cached_apart_and_replayed():
    engine = ScriptedEngine(lambda request: f"sample {request.config.seed} about the ocean")
    lm = dspy.LM("custom/cached", engine=engine, cache=True, num_retries=0)
    dspy.configure(lm=lm)
    first = ChecklistBestOfN(Generator(), BinaryJudge(), n=3)(prompt=ROW.prompt, checklist=CODE_ONLY)
    assert len(engine.requests) == 3
    assert len({c["response"] for c in first.candidates}) == 3  # distinct rollout ids: distinct cache entries
    again = ChecklistBestOfN(Generator(), BinaryJudge(), n=3)(prompt=ROW.prompt, checklist=CODE_ONLY)
    assert len(engine.requests) == 3  # a rerun replays the cached samples
    assert again.candidates == first.candidates


def test_best_of_n_survives_a_failed_sample():
    dspy.configure(lm=scripted_lm(stick_script(samples=[RuntimeError("flaky"), GOOD])))
    pick = ChecklistBestOfN(Generator(), BinaryJudge(), n=2)(prompt=ROW.prompt, checklist=CODE_ONLY)
    assert pick.response == GOOD and pick.chosen == 1
    assert "flaky" in pick.candidates[0]["error"]


def test_best_of_n_raises_when_every_sample_fails():
    def script(request: Request) -> str:
        raise RuntimeError("down")

    dspy.configure(lm=scripted_lm(script))
    with pytest.raises(Exception, match="down"):
        ChecklistBestOfN(Generator(), BinaryJudge(), n=2)(prompt=ROW.prompt, checklist=CODE_ONLY)


def test_stop_at_pass_draws_no_sample_after_the_first_that_passes():
    lm = scripted_lm(stick_script(samples=[BAD, HALF, GOOD, GOOD + " Yes."]))
    dspy.configure(lm=lm)
    pick = ChecklistBestOfN(Generator(), BinaryJudge(), n=4, stop_at_pass=True)(prompt=ROW.prompt, checklist=CODE_ONLY)
    assert pick.response == GOOD and pick.chosen == 2
    assert [c["passed"] for c in pick.candidates] == [False, False, True]
    assert kinds(lm.engine).count("generate") == 3


def test_a_passing_sample_is_chosen_over_one_that_scored_as_high_on_part_of_its_checks():
    """Without stop-at-pass too: a card scored on its answered questions only (partial) never beats a pass."""
    from bineval_dspy.core.schema import Scorecard
    from bineval_dspy.programs.refine import passes

    card = Scorecard(dimension_scores={}, overall=1.0, verdicts=[], unanswered=1, partial=True)
    assert not passes(card) and not passes(None)
    assert passes(card.model_copy(update={"unanswered": 0, "partial": False}))


def test_selection_stats_count_pass_at_k_samples_and_efficiency():
    from bineval_dspy.programs.records import Selection, SelectionStats

    def drawn(*passed: bool, chosen: int, stop: bool = False) -> Selection:
        return Selection(n=4, candidates=[{"passed": p} for p in passed], chosen=chosen, stop_at_pass=stop)

    stats = SelectionStats.of([
        drawn(False, True, chosen=1, stop=True),  # passes at its 2nd sample
        drawn(False, False, False, False, chosen=0, stop=True),  # never passes
        drawn(True, chosen=0, stop=True),  # at its 1st
        drawn(False, False, True, chosen=2, stop=True),  # at its 3rd
    ])
    assert stats is not None and stats.pass_at == [0.25, 0.5, 0.75, 0.75]
    assert stats.mean_samples == 2.5 and stats.efficiency == 1.0 and stats.stop_at_pass
    missed = SelectionStats.of([drawn(True, False, False, False, chosen=1), drawn(False, False, False, False, chosen=0)])
    assert missed is not None and missed.efficiency == 0.0 and not missed.stop_at_pass  # a pass was drawn, not picked
    assert SelectionStats.of([]) is None
    assert "pass@4 0.750" in stats.text()


def test_best_of_n_seeds_each_sample_by_its_rollout_and_draws_them_together():
    lm = scripted_lm(stick_script(samples=[BAD, HALF, GOOD, GOOD + " Yes."]))
    dspy.configure(lm=lm)
    pick = ChecklistBestOfN(Generator(), BinaryJudge(), n=4, seed=0)(prompt=ROW.prompt, checklist=CODE_ONLY)
    sampled = [r for r in lm.engine.requests if r.config.temperature]
    assert sorted(r.config.seed for r in sampled) == [0, 1, 2, 3]  # the same command draws the same samples
    assert pick.response == GOOD and [c["rollout_id"] for c in pick.candidates] == [0, 1, 2, 3]


def test_stop_at_pass_keeps_the_first_pass_whatever_the_round_size():
    picks = {}
    for per_round in (1, 2, 4):
        lm = scripted_lm(stick_script(samples=[BAD, GOOD + " Yes.", GOOD, HALF]))
        dspy.configure(lm=lm)
        best = ChecklistBestOfN(Generator(), BinaryJudge(), n=4, stop_at_pass=True, per_round=per_round)
        picks[per_round] = best(prompt=ROW.prompt, checklist=CODE_ONLY)
    assert {p.response for p in picks.values()} == {GOOD + " Yes."} and {p.chosen for p in picks.values()} == {1}
    assert [len(picks[k].candidates) for k in (1, 2, 4)] == [2, 2, 4]  # a round is drawn whole: the rest are counted
    with pytest.raises(ValueError, match="per_round"):
        ChecklistBestOfN(Generator(), BinaryJudge(), n=4, per_round=0)
