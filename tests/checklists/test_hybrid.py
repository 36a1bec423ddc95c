"""Hybrid checklists: code-checked constraints never reach the LM; TICK questions are bounded."""

from __future__ import annotations

import json

import dspy
import pytest
from dspy.lm15 import Request

from bineval_dspy.checklists.hybrid import CODE_DIMENSION, LLM_DIMENSION, hybrid_checklist
from bineval_dspy.checklists.tick import TickQuestionWriter
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.code import make_code_router
from bineval_dspy.suites.rows import SuiteRow
from tests.conftest import question_of, scripted_lm, verdict_json

ROW = SuiteRow(
    key="7",
    prompt="Write about the sea. Mention the word ocean. Do not use any commas.",
    instruction_id_list=["keywords:existence", "punctuation:no_comma"],
    kwargs=[{"keywords": ["ocean"], "frequency": None}, {}],
)
TICK = ["Is the response about the sea?", "Does the response describe the sea vividly?"]


def tick_reply(questions: list[str]) -> str:
    return json.dumps({"questions": {"items": questions}})


def is_tick_request(request: Request) -> bool:
    return "`questions`" in request.messages[-1].text


def test_checklist_has_code_questions_then_tick_questions():
    lm = scripted_lm(lambda r: tick_reply(TICK))
    dspy.configure(lm=lm)
    checklist = hybrid_checklist(ROW)
    code, llm = checklist.questions[:2], checklist.questions[2:]
    assert [q.verifier for q in code] == ["keywords:existence", "punctuation:no_comma"]
    assert code[0].verifier_kwargs == {"keywords": ["ocean"]}  # None-valued kwargs dropped
    assert code[0].text == "Does the response satisfy the constraint 'keywords:existence' (keywords=['ocean'])?"
    assert code[1].text == "Does the response satisfy the constraint 'punctuation:no_comma'?"
    assert {q.dimension for q in code} == {CODE_DIMENSION}
    assert [q.text for q in llm] == TICK and {q.dimension for q in llm} == {LLM_DIMENSION}
    assert all(q.verifier is None for q in llm)
    assert checklist.dimensions == [CODE_DIMENSION, LLM_DIMENSION]
    # the writer sees the instruction and is told which constraints code already checks
    prompt = lm.engine.requests[0].messages[-1].text
    assert ROW.prompt in prompt and code[0].text in prompt


@pytest.mark.parametrize("count, accepted", [(1, False), (2, True), (8, True), (9, False)])
def test_tick_question_count_is_bounded(count, accepted):
    questions = [f"Does the response mention sea creature number {i}?" for i in range(count)]
    dspy.configure(lm=scripted_lm(lambda r: tick_reply(questions)))
    writer = TickQuestionWriter()
    checklist = hybrid_checklist(ROW, generator=writer)
    llm = [q for q in checklist.questions if q.verifier is None]
    assert len(llm) == (count if accepted else 0)
    assert writer.fallbacks == (0 if accepted else 1)  # out-of-bounds answers are rejected, not truncated


def test_bounds_reach_the_json_schema_and_can_be_changed():
    schema = TickQuestionWriter((3, 4)).write.signature.output_fields["questions"].annotation.model_json_schema()
    assert (schema["properties"]["items"]["minItems"], schema["properties"]["items"]["maxItems"]) == (3, 4)
    dspy.configure(lm=scripted_lm(lambda r: tick_reply(TICK)))
    assert len(hybrid_checklist(ROW, n_llm_questions=(3, 4)).questions) == 2  # 2 < 3: rejected
    with pytest.raises(ValueError):
        TickQuestionWriter((0, 2))


def test_no_llm_questions_means_no_lm_call():
    lm = scripted_lm(lambda r: pytest.fail("the LM must not be called"))
    dspy.configure(lm=lm)
    checklist = hybrid_checklist(ROW, n_llm_questions=(0, 0))
    assert [q.verifier for q in checklist.questions] == ["keywords:existence", "punctuation:no_comma"]


def test_code_checked_questions_never_call_the_lm():
    def script(request: Request) -> str:
        if is_tick_request(request):
            return tick_reply(TICK)
        return verdict_json("yes", f"judged: {question_of(request)}")

    lm = scripted_lm(script)
    dspy.configure(lm=lm)
    checklist = hybrid_checklist(ROW)
    lm.engine.requests.clear()
    card = BinaryJudge()(input=ROW.prompt, output="The ocean is wide, and deep.", checklist=checklist)
    judged = [question_of(r) for r in lm.engine.requests]
    assert judged == TICK  # only the TICK questions reached the LM
    verdicts = {v.question_id: v for v in card.verdicts}
    by_text = {q.text: verdicts[q.id] for q in checklist.questions}
    keyword, comma = (by_text[q.text] for q in checklist.questions[:2])
    assert (keyword.answer, keyword.judge) == ("yes", "code:keywords:existence")
    assert (comma.answer, comma.judge) == ("no", "code:punctuation:no_comma")
    assert comma.explanation.startswith("Do not use any commas in the response. Not met:") and "found 1 comma" in comma.explanation
    assert " Met:" in keyword.explanation
    assert all(by_text[t].judge == "custom/scripted" for t in TICK)
    assert card.dimension_scores == {CODE_DIMENSION: 0.5, LLM_DIMENSION: 1.0}


def test_router_mode_and_questions_without_verifier():
    question = Question(text="Is there no comma?", dimension="d", verifier="punctuation:no_comma", verifier_kwargs={})
    response = "Sure, here it is:\nno commas at all here\nthe end"
    assert make_code_router()(question, "prompt", response).answer == "no"  # strict
    assert make_code_router("loose")(question, "prompt", response).answer == "yes"  # first line dropped
    assert make_code_router()(Question(text="Is it kind?", dimension="d"), "prompt", response) is None


def test_broken_verifier_is_unanswered_never_yes():
    question = Question(text="Q?", dimension="d", verifier="keywords:existence", verifier_kwargs={"keywords": 5})
    verdict = make_code_router()(question, "prompt", "anything")
    assert verdict.answer == "unanswered" and verdict.judge == "code:keywords:existence"


def test_unknown_constraint_is_an_input_error():
    row = ROW.model_copy(update={"instruction_id_list": ["no:such_thing"], "kwargs": [{}]})
    with pytest.raises(InputError, match="suite row '7'.*no:such_thing"):
        hybrid_checklist(row, n_llm_questions=(0, 0))
