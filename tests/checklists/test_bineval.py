"""BinEval's two-step checklist generation with scripted LMs."""

from __future__ import annotations

import json

import dspy
import pytest
from dspy.lm15 import Request

from bineval_dspy.checklists.bineval import BinEvalWriter
from bineval_dspy.core.errors import InputError
from tests.conftest import prompt_fields, scripted_lm

STEP1 = {
    "requirements": {
        "items": [
            {"requirement": "States the main event of the article.", "dimension": "relevance"},
            {"requirement": "Every fact agrees with the article.", "dimension": "consistency"},
            {"requirement": "States the main event of the article.", "dimension": "relevance"},
        ]
    }
}


def step2(requirement: str) -> dict:
    return {
        "questions": {
            "items": [
                {"question": f"Does the summary satisfy: {requirement}?", "no_example": "It misses it entirely."},
                {"question": f"Is it true that: {requirement}?", "no_example": "It contradicts it."},
            ]
        }
    }


def script(request: Request) -> str:
    if "requirement" in prompt_fields(request):
        requirement = prompt_fields(request)["requirement"]
        return "not json at all" if "agrees" in requirement else json.dumps(step2(requirement))
    return json.dumps(STEP1)


def test_two_steps_requirements_then_questions():
    lm = scripted_lm(script)
    dspy.configure(lm=lm)
    generator = BinEvalWriter()
    checklist = generator(task="Summarize the article.", dimensions=["Relevance", "consistency", "fluency"])
    assert checklist.dimensions == ["relevance", "consistency", "fluency"]
    texts = [q.text for q in checklist.questions]
    assert texts[:2] == [
        "Does the summary satisfy: States the main event of the article.?",
        "Is it true that: States the main event of the article.?",
    ]
    # step 2 failed to parse for the consistency requirement: the requirement itself became the question
    assert texts[2] == "Does the output meet this requirement: Every fact agrees with the article?"
    assert generator.fallbacks == 1
    assert [q.dimension for q in checklist.questions] == ["relevance", "relevance", "consistency"]
    # the repeated requirement was asked about once: 1 step-1 call, 2 step-2 calls
    assert len(lm.engine.requests) == 3
    schema = json.dumps(lm.engine.requests[0].config.response_format["schema"])
    assert '"enum": ["relevance", "consistency", "fluency"]' in schema  # given dimensions are enforced


def test_dimensions_come_from_the_task_when_not_given():
    step1 = {"requirements": {"items": [{"requirement": "Uses a friendly tone throughout.", "dimension": "Tone"}]}}
    lm = scripted_lm(lambda r: json.dumps(step1) if "requirement" not in prompt_fields(r) else json.dumps(step2("x")))
    dspy.configure(lm=lm)
    checklist = BinEvalWriter()(task="Write a birthday card.")
    assert checklist.dimensions == ["tone"]
    assert "choose 2 to 5" in lm.engine.requests[0].messages[-1].text


def test_max_questions_caps_the_checklist():
    dspy.configure(lm=scripted_lm(lambda r: json.dumps(STEP1) if "requirement" not in prompt_fields(r) else json.dumps(step2("x"))))
    checklist = BinEvalWriter(max_questions=1)(task="t", dimensions=["relevance", "consistency"])
    assert len(checklist.questions) == 1


@pytest.mark.parametrize("task", ["", "   \n"])
def test_empty_task_is_a_clear_error(task):
    with pytest.raises(InputError, match="task description is empty"):
        BinEvalWriter()(task=task)
