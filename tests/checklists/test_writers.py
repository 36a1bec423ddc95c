"""TICK as a standalone writer, and the ``make_writer`` registry: every method, its params, bad params in one line."""

from __future__ import annotations

import json

import dspy
import pytest

from bineval_dspy.checklists.base import ChecklistWriter
from bineval_dspy.checklists.bineval import BinEvalWriter
from bineval_dspy.checklists.qworld import QworldWriter
from bineval_dspy.checklists.tick import DEFAULT_DIMENSION, TickWriter
from bineval_dspy.checklists.writers import METHODS, make_writer
from bineval_dspy.core.errors import InputError, RunError
from tests.checklists.qworld_script import fake_embed
from tests.conftest import scripted_lm

TASK = "Write a short poem about the sea that mentions a lighthouse."


def tick_reply(n: int, prefix: str = "Does the poem mention sea detail number") -> str:
    return json.dumps({"questions": {"items": [f"{prefix} {i}?" for i in range(n)]}})


@pytest.mark.parametrize("count, accepted", [(1, False), (2, True), (8, True), (9, False)])
def test_tick_writer_keeps_the_2_to_8_bounds(count, accepted):
    lm = scripted_lm(lambda r: tick_reply(count))
    dspy.configure(lm=lm)
    writer = TickWriter()
    if not accepted:  # out-of-bounds answers are rejected, never truncated, and no question is made up
        with pytest.raises(RunError, match="no usable questions \\(1 unparseable"):
            writer(task=TASK)
        assert writer.fallbacks == 1
        return
    checklist = writer(task=TASK)
    assert len(checklist.questions) == count and len(lm.engine.requests) == 1
    assert checklist.dimensions == [DEFAULT_DIMENSION] and {q.dimension for q in checklist.questions} == {DEFAULT_DIMENSION}
    assert all(q.weight == 1 and q.verifier is None for q in checklist.questions)
    assert TASK in lm.engine.requests[0].messages[-1].text


def test_tick_writer_bounds_can_change_and_reach_the_schema():
    lm = scripted_lm(lambda r: tick_reply(3))
    dspy.configure(lm=lm)
    assert len(TickWriter((3, 4))(task=TASK).questions) == 3
    items = lm.engine.requests[0].config.response_format["schema"]["$defs"]["TickQuestionList"]["properties"]["items"]
    assert (items["minItems"], items["maxItems"]) == (3, 4)


def test_tick_writer_dimensions_one_call_each():
    lm = scripted_lm(lambda r: tick_reply(2, "Is the poem good in aspect" if "aspect only: tone" in r.messages[-1].text else "Does the poem do thing"))
    dspy.configure(lm=lm)
    assert {q.dimension for q in TickWriter()(task=TASK, dimensions=["Content"]).questions} == {"content"}
    lm.engine.requests.clear()
    checklist = TickWriter()(task=TASK, dimensions=["content", "tone"])
    assert len(lm.engine.requests) == 2
    assert [(q.dimension, q.text) for q in checklist.questions] == [
        ("content", "Does the poem do thing 0?"),
        ("content", "Does the poem do thing 1?"),
        ("tone", "Is the poem good in aspect 0?"),
        ("tone", "Is the poem good in aspect 1?"),
    ]


def test_tick_writer_routes_grounded_questions_to_code():
    reply = json.dumps({"questions": {"items": ["Are all numbers in the summary found in the article?", "Is the summary short?"]}})
    dspy.configure(lm=scripted_lm(lambda r: reply))
    first, second = TickWriter()(task="Summarize the article.").questions
    assert (first.verifier, second.verifier) == ("grounded:numbers", None)
    assert TickWriter(code_checks=False)(task="Summarize the article.").questions[0].verifier is None


def test_make_writer_builds_each_method_with_its_params():
    assert METHODS == ("bineval", "tick", "qworld", "checkeval", "rocketeval", "rlcf", "rlcf-contrastive", "feedback")
    for method in METHODS:
        assert isinstance(make_writer(method), ChecklistWriter)
    bineval = make_writer("bineval", max_questions=5, questions_per_requirement=2, code_checks=False)
    assert isinstance(bineval, BinEvalWriter) and (bineval.max_questions, bineval.code_checks) == (5, False)
    bound = bineval.write_questions.signature.output_fields["questions"].annotation.model_json_schema()
    assert bound["properties"]["items"]["maxItems"] == 2
    tick = make_writer("tick", min_questions=3, max_questions=5, dimension="content")
    assert isinstance(tick, TickWriter) and tick.dimension == "content"
    schema = tick.write.write.signature.output_fields["questions"].annotation.model_json_schema()
    assert (schema["properties"]["items"]["minItems"], schema["properties"]["items"]["maxItems"]) == (3, 5)
    qworld = make_writer("qworld", w1=1, w2=2, w3=1, threshold=0.9, criteria_per_call=2, embed=fake_embed, max_tokens=None)
    assert isinstance(qworld, QworldWriter) and qworld.embed is fake_embed
    assert (qworld.config.w1, qworld.config.w2, qworld.config.w3, qworld.config.threshold, qworld.config.max_tokens) == (1, 2, 1, 0.9, 600)


@pytest.mark.parametrize(
    "method, params, message",
    [
        ("gepa", {}, "method: unknown checklist method 'gepa' (choose from bineval, tick, qworld, checkeval, rocketeval, rlcf, rlcf-contrastive, feedback)"),
        ("checkeval", {"definitions": "x"}, "checkeval writer: field 'definitions': Input should be a valid dictionary"),
        ("tick", {"w1": 2}, "tick writer: field 'w1': not a parameter of this method"),
        ("qworld", {"w1": -1}, "qworld writer: field 'w1': Input should be greater than or equal to 0"),
        ("qworld", {"threshold": "high"}, "qworld writer: field 'threshold': Input should be a valid number"),
        ("qworld", {"embed": 3}, "qworld writer: field 'embed': must be a callable"),
        ("bineval", {"max_questions": 0}, "bineval writer: field 'max_questions': Input should be greater than or equal to 1"),
        ("tick", {"max_questions": 1}, "tick writer: field 'max_questions': must be at least min_questions (2), got 1"),
    ],
)
def test_make_writer_bad_input_is_one_line(method, params, message):
    with pytest.raises(InputError) as error:
        make_writer(method, **params)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)
