"""BinEvalOptimizer with scripted LMs: accepted edits, rollbacks, the length budget, dedup, resume, cross-model."""

from __future__ import annotations

import json

import dspy
import pytest
from dspy.lm15 import Request

from bineval_dspy.checklists.hybrid import hybrid_checklist
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.optimize.feedback import CrossModelFeedback, SelfUpdateFeedback
from bineval_dspy.optimize.lessons import LessonBank
from bineval_dspy.optimize.metric import bineval_metric
from bineval_dspy.optimize.optimizer import BinEvalOptimizer
from bineval_dspy.programs.generator import Generator
from bineval_dspy.programs.state import instructions_of
from bineval_dspy.suites.rows import SuiteRow
from bineval_dspy.verifiers import describe
from tests.conftest import bag_of_words, prompt_fields, scripted_lm, verdict_json

START = "Answer the request."


class World:
    """One scripted LM playing generator, note-taker and updater; knobs decide what each says."""

    def __init__(self, lesson: str = "Use bullet points for every list.", rewrite: str = "Use bullet points.") -> None:
        self.lesson = lesson
        self.rewrite = rewrite
        self.generator_calls = 0
        self.interrupt_updates = 0
        self.updates = 0  # calls to the PromptUpdater
        self.notes = 0  # calls to the NoteTaker

    def __call__(self, request: Request) -> str:
        user = request.messages[-1].text
        if "lesson" in prompt_fields(request):  # the PromptUpdater
            self.updates += 1
            if self.interrupt_updates:
                self.interrupt_updates -= 1
                raise KeyboardInterrupt
            return json.dumps({"edit": {"target": "", "rewrite": self.rewrite}})
        if "explanation" in prompt_fields(request):  # the NoteTaker
            self.notes += 1
            lesson = self.lesson(user) if callable(self.lesson) else self.lesson
            return json.dumps({"lesson": {"text": lesson}})
        self.generator_calls += 1
        system = (request.system or "").lower() if isinstance(request.system, str) else ""
        if "harm" in system:
            return "no"
        return "* one\n* two" if "bullet" in system else "one and two"


def rows(n: int) -> list[dspy.Example]:
    return [
        dspy.Example(key=str(i), prompt=f"List two fruits ({i}).", instruction_id_list=["detectable_format:number_bullet_lists"], kwargs=[{"num_bullets": 2}]).with_inputs("prompt")
        for i in range(n)
    ]


def checklist_for(example: dspy.Example):
    row = SuiteRow(key=example.key, prompt=example.prompt, instruction_id_list=example.instruction_id_list, kwargs=example.kwargs)
    return hybrid_checklist(row, n_llm_questions=(0, 0))


def optimizer(world: World, tmp_path=None, **kwargs) -> BinEvalOptimizer:
    dspy.configure(lm=scripted_lm(world))
    feedback = bineval_metric(BinaryJudge(), checklist_for)
    return BinEvalOptimizer(feedback, bank=LessonBank(embed=bag_of_words), run_dir=tmp_path, **kwargs)


def test_accepted_edit_improves_held_out_and_student_is_untouched(tmp_path):
    world = World()
    student = Generator(START)
    opt = optimizer(world, tmp_path / "run")
    program = opt.compile(student, trainset=rows(3), valset=rows(2))
    assert instructions_of(student) == {"generate": START}
    assert instructions_of(program)["generate"] == START + "\nUse bullet points."
    audit = opt.audit.model_dump()
    assert audit["start"]["val"]["score"] == 0.0 and audit["best"]["val_score"] == 1.0
    first = audit["iterations"][0]
    assert first["decision"]["accepted"] is True
    assert first["edits"] == [{"lesson_id": first["selected"][0], "before": "", "after": "Use bullet points.", "appended": True}]
    assert len(first["failures"]) == 3 and first["lm_calls"] > 0
    assert audit["stopped"] == "no failures left on the trainset"
    assert (tmp_path / "run" / "audit.json").exists() and (tmp_path / "run" / "program.json").exists()


def test_duplicate_lessons_merge_with_support(tmp_path):
    world = World(lesson=lambda user: "Use bullet points for every list." if "(0)" in user else "use bullet points for every list")
    opt = optimizer(world)
    opt.compile(Generator(START), trainset=rows(3), valset=rows(2))
    first = opt.audit.model_dump()["iterations"][0]
    assert len(first["lessons_new"]) == 3 and len(first["lessons_after_dedup"]) == 1
    (lesson,) = opt.lesson_bank.lessons
    assert lesson.support == 3 and len(lesson.sources) == 3 and lesson.applied


def test_harmful_edit_is_rolled_back_and_lessons_retired():
    world = World(lesson="Answer in as few words as possible.", rewrite="HARM: answer no.")
    student = Generator("Use bullet points sometimes.")  # starts at held-out 1.0 only if outputs have bullets
    opt = optimizer(world, max_iterations=3, patience=1)
    trainset = rows(2)
    # the start already passes; force failures on train by judging a stricter checklist there
    program = opt.compile(student, trainset=trainset, valset=rows(2))
    assert opt.audit.model_dump()["stopped"] == "no failures left on the trainset"  # nothing to fix: no edit at all

    world2 = World(lesson="Keep bullet points short.", rewrite="HARM")  # names the constraint: the LM edits
    opt2 = optimizer(world2, max_iterations=3, patience=1)
    strict = lambda ex: hybrid_checklist(SuiteRow(key=ex.key, prompt=ex.prompt, instruction_id_list=["detectable_format:number_bullet_lists"], kwargs=[{"num_bullets": 3}]), n_llm_questions=(0, 0))  # noqa: E731
    opt2.feedback = SelfUpdateFeedback(bineval_metric(BinaryJudge(), lambda ex: strict(ex) if ex.key.startswith("t") else checklist_for(ex)))
    train = [ex.copy(key="t" + ex.key) for ex in rows(2)]
    program = opt2.compile(student, trainset=train, valset=rows(2))
    it = opt2.audit.model_dump()["iterations"][0]
    assert it["decision"]["accepted"] is False and "below min_delta" in it["decision"]["reason"]
    assert it["val"]["score"] == 0.0  # the edit broke the held-out outputs
    assert instructions_of(program) == instructions_of(student)  # rolled back
    assert opt2.audit.model_dump()["best"]["val_score"] == opt2.audit.model_dump()["start"]["val"]["score"] == 1.0
    assert all(lesson.retired for lesson in opt2.lesson_bank.lessons)
    assert opt2.audit.model_dump()["stopped"] == "patience 1 exhausted"


def test_without_the_bloat_guard_a_harmful_edit_is_kept():
    world = World(rewrite="HARM")
    opt = optimizer(world, max_iterations=1, bloat_guard=False)
    program = opt.compile(Generator(START), trainset=rows(2), valset=rows(2))
    assert "HARM" in instructions_of(program)["generate"]
    assert opt.audit.model_dump()["iterations"][0]["decision"]["accepted"] is True


def test_length_budget_rejects_a_helpful_but_bloated_edit():
    world = World(rewrite="Use bullet points. " + "Be thorough and careful. " * 25)
    opt = optimizer(world, max_chars=200, max_iterations=2, patience=2)
    program = opt.compile(Generator(START), trainset=rows(2), valset=rows(2))
    first = opt.audit.model_dump()["iterations"][0]
    assert first["val"]["score"] == 1.0  # it would have helped
    assert first["decision"]["accepted"] is False and "over budget 200" in first["decision"]["reason"]
    assert instructions_of(program)["generate"] == START
    assert len(instructions_of(program)["generate"]) <= 200


def test_a_killed_run_resumes_from_its_last_finished_step(tmp_path):
    run = tmp_path / "run"
    world = World()
    world.interrupt_updates = 1  # killed while editing: train and lessons steps are already saved
    with pytest.raises(KeyboardInterrupt):
        optimizer(world, run).compile(Generator(START), trainset=rows(3), valset=rows(2))
    saved = json.loads((run / "audit.json").read_text())
    assert {"train", "selected"} <= set(saved["iterations"][0]) and "edits" not in saved["iterations"][0]
    calls_before = world.generator_calls
    opt = optimizer(world, run)
    opt.compile(Generator(START), trainset=rows(3), valset=rows(2))
    # resumed: no re-run of the start or of iteration 1's train evaluation; only the candidate's held-out
    # evaluation (2) and iteration 2's train evaluation (3)
    assert world.generator_calls - calls_before == 2 + 3
    assert opt.audit.model_dump()["iterations"][0]["decision"]["accepted"] is True
    assert len(opt.audit.model_dump()["iterations"]) == 2


def judge_examples(references: list[str]) -> list[dspy.Example]:
    return [
        dspy.Example(input="Write a haiku.", output=f"output {i}", question=f"Is line {i} short?", dimension="Format" if i % 2 else "Content",
                     question_id=f"q{i}", example_id=f"e{i}", reference=ref).with_inputs("input", "output", "question")
        for i, ref in enumerate(references)
    ]


def test_cross_model_aligns_a_lenient_judge_with_a_strict_reference():
    def world(request: Request) -> str:
        if "lesson" in prompt_fields(request):
            return json.dumps({"edit": {"target": "", "rewrite": "Be strict: answer no unless clearly satisfied."}})
        if "reference_answer" in prompt_fields(request):
            asked = prompt_fields(request)
            assert (asked["evaluator_answer"], asked["reference_answer"]) == ("yes", "no")
            return json.dumps({"lesson": {"text": "Answer no unless the requirement is clearly met."}})
        system = request.system if isinstance(request.system, str) else ""
        return verdict_json("no" if "Be strict" in system else "yes")

    dspy.configure(lm=scripted_lm(world))
    opt = BinEvalOptimizer(CrossModelFeedback(), bank=LessonBank(embed=bag_of_words), epsilon=0.05)
    train, val = judge_examples(["no", "no", "yes"]), judge_examples(["no", "no", "no", "no"])
    program = opt.compile(BinaryJudge(), trainset=train, valset=val)
    audit = opt.audit.model_dump()
    assert audit["start"]["val"]["score"] == 0.0
    assert audit["start"]["val"]["dimension_gaps"] == {"Content": 1.0, "Format": 1.0}
    assert audit["best"]["val_score"] == 1.0
    assert audit["stopped"] == "every dimension gap below epsilon 0.05"
    assert "Be strict" in instructions_of(program)["answer"]
    failures = audit["iterations"][0]["failures"]
    assert {(f["got"], f["expected"]) for f in failures} == {("yes", "no")}


def test_gepa_metric_protocol_and_determinism():
    import inspect

    dspy.configure(lm=scripted_lm(World()))
    metric = bineval_metric(BinaryJudge(), checklist_for)
    inspect.signature(metric).bind(None, None, None, None, None)  # GEPA's arity check
    gold = rows(1)[0]
    bad = metric(gold, dspy.Prediction(response="one and two"))
    good = metric(gold, dspy.Prediction(response="* a\n* b"), None, "generate", None)
    assert (bad.score, good.score) == (0.0, 1.0)
    assert "number_bullet_lists" in bad.feedback and "failed" in bad.feedback.lower()
    assert good.feedback == "All checklist questions passed."
    assert bad.objective_scores == {"instruction-following": 0.0}
    assert metric(gold, dspy.Prediction(response="one and two"), None, "generate", None).score == bad.score


def test_a_lesson_the_prompt_already_states_is_not_applied_again():
    start = START + " Write exactly two points."
    world = World(lesson="Write exactly two points.")  # names the failed constraint, and the start prompt says it
    opt = optimizer(world)
    program = opt.compile(Generator(start), trainset=rows(2), valset=rows(2))
    assert opt.audit.model_dump()["stopped"] == "no new lessons to apply"
    assert instructions_of(program)["generate"] == start


# -- lessons that name their constraint; the verifier's rule as the fallback lesson -------------------------------
def test_a_lesson_that_names_no_constraint_is_discarded_and_the_rule_takes_its_place(tmp_path):
    world = World(lesson="The national symbol of the US is the Eagle.", rewrite="")  # babble, as a 135M note-taker writes
    opt = optimizer(world, tmp_path / "run", max_iterations=1)
    program = opt.compile(Generator(START), trainset=rows(2), valset=rows(2))
    first = opt.audit.iterations[0]
    assert first.lessons_discarded is not None and len(first.lessons_discarded) == 2
    assert {d.reason for d in first.lessons_discarded} == {"names no constraint of the failed check"}
    assert first.rule_lessons == 2 and first.lessons_new is not None
    (rule,) = {lesson.text for lesson in first.lessons_new}  # both failures: the same verifier, the same rule
    assert all(lesson.origin == "rule" for lesson in first.lessons_new)
    assert "bullet" in rule.lower() and "Eagle" not in instructions_of(program)["generate"]
    (banked,) = opt.lesson_bank.lessons
    assert banked.support == 2  # the rule explains two distinct failures
    saved = json.loads((tmp_path / "run" / "audit.json").read_text())
    assert len(saved["iterations"][0]["lessons_discarded"]) == 2


def test_a_rule_lesson_is_added_as_a_line_of_its_own_without_the_lm():
    # the embedded model's edits were babble ("EditDraft.", a repeating "The passage rewritten ..."): a verifier's
    # rule is a clean sentence already, so the updater is never asked
    world = World(lesson="The national symbol of the US is the Eagle.", rewrite="EditDraft. The passage rewritten " * 3)
    opt = optimizer(world, max_iterations=1)
    program = opt.compile(Generator(START), trainset=rows(2), valset=rows(2))
    first = opt.audit.iterations[0]
    (edit,) = first.edits or []
    rule = describe("detectable_format:number_bullet_lists", {"num_bullets": 2})
    assert world.updates == 0 and (edit.before, edit.after, edit.appended) == ("", rule, True)
    assert instructions_of(program)["generate"] == START + "\n" + rule
    assert first.decision is not None and first.decision.accepted


def test_a_rule_the_instructions_already_say_in_other_words_is_skipped_with_its_reason(tmp_path):
    said = "Use exactly 2 bullet points, written as Markdown bullets like '* This is a point!'"  # the rule, reworded
    world = World(lesson="The national symbol of the US is the Eagle.")

    def never_bullets(request: Request) -> str:  # a generator that ignores its instructions
        return world(request) if {"lesson", "explanation"} & set(prompt_fields(request)) else "one and two"

    dspy.configure(lm=scripted_lm(never_bullets))
    opt = BinEvalOptimizer(bineval_metric(BinaryJudge(), checklist_for), bank=LessonBank(embed=bag_of_words), run_dir=tmp_path)
    program = opt.compile(Generator(START + "\n" + said), trainset=rows(2), valset=rows(2))
    first = opt.audit.iterations[0]
    assert opt.audit.stopped == "no new lessons to apply" and first.selected == [] and world.updates == 0
    (skipped,) = first.lessons_skipped or []
    assert skipped.reason == "the instructions say it already" and len(skipped.sources) == 2
    assert instructions_of(program)["generate"] == START + "\n" + said
    saved = json.loads((tmp_path / "audit.json").read_text())
    assert saved["iterations"][0]["lessons_skipped"][0]["reason"] == "the instructions say it already"


def mixed_rows() -> list[dspy.Example]:
    """Three rows ask for 2 bullet points, one for 3: the suite's rows differ, as IFEval's do."""
    return [
        dspy.Example(key=str(i), prompt=f"List fruits ({i}).", instruction_id_list=["detectable_format:number_bullet_lists"], kwargs=[{"num_bullets": n}]).with_inputs("prompt")
        for i, n in enumerate([2, 2, 2, 3])
    ]


def test_a_rule_only_one_row_asks_for_is_no_lesson_for_every_row(tmp_path, capsys):
    world = World(lesson="Always use bullet points.")
    opt = optimizer(world, tmp_path, max_iterations=1)
    opt.compile(Generator(START), trainset=mixed_rows(), valset=rows(2))
    first = opt.audit.iterations[0]
    assert first.failures is not None and len(first.failures) == 4
    assert world.notes == 3  # the row's own constraint never reaches the note-taker
    assert all(source != "3:" and not source.startswith("3:") for lesson in first.lessons_new or [] for source in lesson.sources)
    (skipped,) = first.lessons_skipped or []
    assert skipped.text == describe("detectable_format:number_bullet_lists", {"num_bullets": 3})
    assert skipped.sources == ["3:" + first.failures[3].id.split(":", 1)[1]]
    assert skipped.reason.startswith("only 1 of 4 train rows ask for it (min_rule_share 0.5)")
    assert {(f.rule_rows, f.rows) for f in first.failures} == {(3, 4), (1, 4)}
    from bineval_dspy.cli import main

    assert main(["show", str(tmp_path)]) == 0
    assert "1 lesson(s) not proposed" in capsys.readouterr().out

    # a stated fraction lets a rule a quarter of the rows share become a lesson
    world = World(lesson="Always use bullet points.")
    opt = optimizer(world, max_iterations=1, min_rule_share=0.25)
    opt.compile(Generator(START), trainset=mixed_rows(), valset=rows(2))
    assert world.notes == 4 and not opt.audit.iterations[0].lessons_skipped


def test_a_lesson_that_restates_the_response_is_discarded():
    from bineval_dspy.optimize.lessons import Failure
    from bineval_dspy.optimize.notes import lesson_problem

    failure = Failure(id="k:q", example_id="k", question="Does it use two bullet points?", dimension="format", input="List fruits.",
                      output="Apples and pears grow in the orchard behind the house.", explanation="found 0 bullets", got="no",
                      rule="Use exactly 2 bullet points.")
    assert lesson_problem("Apples and pears grow in the orchard with bullet points.", failure) == "restates the response"
    assert lesson_problem("Always format lists as bullet points.", failure) is None
    assert lesson_problem("Be more helpful.", failure) == "names no constraint of the failed check"


def test_an_unusable_note_falls_back_to_the_rule():
    def broken_notes(request: Request) -> str:
        if "explanation" in prompt_fields(request):
            return "not json at all"
        return World()(request)

    dspy.configure(lm=scripted_lm(broken_notes))
    opt = BinEvalOptimizer(bineval_metric(BinaryJudge(), checklist_for), bank=LessonBank(embed=bag_of_words), max_iterations=1)
    opt.compile(Generator(START), trainset=rows(2), valset=rows(2))
    first = opt.audit.iterations[0]
    assert first.note_errors == 2 and first.rule_lessons == 2 and not first.lessons_discarded
    assert first.failures and all(f.rule and "bullet" in f.rule.lower() for f in first.failures)
    assert all("found" in f.explanation or "bullet" in f.explanation for f in first.failures)  # the verifier's diagnosis


# -- demonstrations --------------------------------------------------------------------------------------------
def test_a_demo_candidate_without_held_out_gain_is_rolled_back(tmp_path):
    # two passing train outputs (bullets requested in the prompt) give demos; the held-out outputs never change
    def world(request: Request) -> str:
        user = request.messages[-1].text
        if "lesson" in prompt_fields(request):
            return json.dumps({"edit": {"target": "", "rewrite": "Use lists."}})
        if "explanation" in prompt_fields(request):
            return json.dumps({"lesson": {"text": "Use bullet points for every list."}})
        return "* one\n* two" if "bullets please" in user else "one and two"

    dspy.configure(lm=scripted_lm(world))
    train = rows(3)
    train[0] = train[0].copy(prompt="List two fruits, bullets please.")
    opt = BinEvalOptimizer(bineval_metric(BinaryJudge(), checklist_for), bank=LessonBank(embed=bag_of_words), run_dir=tmp_path / "run",
                           max_iterations=2, patience=3, demos=1, min_allowance=200)
    program = opt.compile(Generator(START), trainset=train, valset=rows(2))
    audit = opt.audit
    first, second = audit.iterations
    assert (first.kind, second.kind) == ("instructions", "demo")
    assert second.candidate.demos == {"generate": [{"prompt": "List two fruits, bullets please.", "response": "* one\n* two"}]}
    assert second.prompt_chars == len(START) + len("List two fruits, bullets please.") + len("* one\n* two")  # demos count
    assert second.val is not None and second.val.score == 0.0 and second.decision is not None and not second.decision.accepted
    assert audit.best.demos == {} and not program.generate.demos  # rolled back: the program shows no demo


def test_a_demo_with_held_out_gain_is_kept_and_shown_to_the_generator():
    def world(request: Request) -> str:
        user = request.messages[-1].text
        if "explanation" in prompt_fields(request):
            return json.dumps({"lesson": {"text": "Use bullet points for every list."}})
        if "lesson" in prompt_fields(request):
            return json.dumps({"edit": {"target": "", "rewrite": "Use lists."}})
        shown = " ".join(m.text for m in request.messages[:-1])
        return "* one\n* two" if "bullets please" in user or "* one" in shown else "one and two"

    dspy.configure(lm=scripted_lm(world))
    train = rows(3)
    train[0] = train[0].copy(prompt="List two fruits, bullets please.")
    opt = BinEvalOptimizer(bineval_metric(BinaryJudge(), checklist_for), bank=LessonBank(embed=bag_of_words),
                           max_iterations=2, patience=3, demos=1, min_allowance=200)
    program = opt.compile(Generator(START), trainset=train, valset=rows(2))
    second = opt.audit.iterations[1]
    assert second.kind == "demo" and second.decision is not None and second.decision.accepted
    assert opt.audit.best.val_score == 1.0 and len(program.generate.demos) == 1


# -- cross-model thresholds ---------------------------------------------------------------------------------------
def test_fit_thresholds_maximizes_agreement_per_dimension():
    from bineval_dspy.optimize.proposers import fit_thresholds

    points = [("a", 0.9, "yes"), ("a", 0.8, "no"), ("a", 0.7, "no"), ("b", 0.3, "yes"), ("b", 0.2, "no")]
    # a: yes only above 0.85 (midpoint of 0.8 and 0.9) agrees 3/3; b: 0.5 agrees 1/2, 0.25 agrees 2/2
    assert fit_thresholds(points) == {"a": 0.85, "b": 0.25}
    assert fit_thresholds([("c", 0.9, "yes"), ("c", 0.6, "yes")]) == {"c": 0.5}  # ties keep the plain decision


def _yes_biased_world(p_yes: dict[str, float]):
    from bineval_dspy.testing.scripted import Reply

    def world(request: Request) -> str | Reply:
        if "lesson" in prompt_fields(request):
            return json.dumps({"edit": {"target": "", "rewrite": "Judge carefully."}})
        if "reference_answer" in prompt_fields(request):
            return json.dumps({"lesson": {"text": "Answer no unless clearly met."}})
        output = prompt_fields(request)["output"]
        return Reply(verdict_json("yes"), p_yes[output])  # always "yes", but less sure about bad outputs

    return world


def test_a_threshold_candidate_is_accepted_only_with_held_out_gain():
    # the judge says yes to everything; its P(yes) is 0.9 for outputs the reference accepts and 0.6 for the rest
    references = ["yes", "yes", "no", "no", "yes", "yes", "no", "no"]  # each dimension (i % 2) gets both answers
    train = [ex.copy(output=ex.output + " train") for ex in judge_examples(references)]
    val = judge_examples(references)
    probs = {ex.output: 0.9 if ex.reference == "yes" else 0.6 for ex in train + val}
    dspy.configure(lm=scripted_lm(_yes_biased_world(probs)))
    opt = BinEvalOptimizer(CrossModelFeedback(), bank=LessonBank(embed=bag_of_words), max_iterations=2, patience=3, thresholds=True)
    program = opt.compile(BinaryJudge(probability=True), trainset=train, valset=val)
    first, second = opt.audit.iterations
    assert first.kind == "instructions" and first.decision is not None and not first.decision.accepted  # no gain
    assert second.kind == "thresholds" and second.candidate.thresholds == {"Content": 0.75, "Format": 0.75}
    assert second.decision is not None and second.decision.accepted
    assert opt.audit.start.val.score == 0.5 and opt.audit.best.val_score == 1.0
    assert program.thresholds == {"Content": 0.75, "Format": 0.75}

    # the same fit where P(yes) carries no signal on the held-out outputs (all 0.9): rolled back
    probs.update({ex.output: 0.9 for ex in val})
    dspy.configure(lm=scripted_lm(_yes_biased_world(probs)))
    opt = BinEvalOptimizer(CrossModelFeedback(), bank=LessonBank(embed=bag_of_words), max_iterations=2, patience=3, thresholds=True)
    program = opt.compile(BinaryJudge(probability=True), trainset=train, valset=val)
    second = opt.audit.iterations[1]
    assert second.kind == "thresholds" and second.candidate.thresholds == {"Content": 0.75, "Format": 0.75}
    assert second.decision is not None and not second.decision.accepted
    assert opt.audit.best.thresholds == {} and program.thresholds == {}


class _BulletsProposer:
    """A registered candidate kind for the test: the best state with instructions that ask for bullets."""

    kind = "bullets"

    def propose(self, step):
        return step.keep(instructions={name: "Answer with bullet points." for name in step.audit.best.instructions})


def test_a_registered_candidate_kind_takes_its_turn_and_is_recorded(tmp_path, monkeypatch):
    from pydantic import ValidationError

    from bineval_dspy.optimize.proposers import PROPOSERS
    from bineval_dspy.optimize.settings import OptimizerSettings

    with pytest.raises(ValidationError, match="unknown candidate kind 'bullets' \\(choose from instructions, demo, thresholds\\)"):
        OptimizerSettings(kinds=["bullets"])
    monkeypatch.setitem(PROPOSERS, "bullets", lambda settings, mode, note_taker, updater: _BulletsProposer())
    world = World()
    opt = optimizer(world, tmp_path / "run", max_iterations=1, kinds=["bullets"])
    program = opt.compile(Generator(START), trainset=rows(2), valset=rows(2))
    (only,) = opt.audit.iterations
    assert only.kind == "bullets" and only.candidate is not None and only.candidate.instructions == {"generate": "Answer with bullet points."}
    assert only.decision is not None and only.decision.accepted and instructions_of(program) == {"generate": "Answer with bullet points."}
    calls = world.generator_calls
    resumed = optimizer(world, tmp_path / "run", max_iterations=1, kinds=["bullets"])  # the recorded run: nothing to redo
    resumed.compile(Generator(START), trainset=rows(2), valset=rows(2))
    assert world.generator_calls == calls and resumed.audit.iterations[0].candidate == only.candidate
