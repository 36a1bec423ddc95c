"""Questions a grounded check answers are marked for code; the rest stay with the LM."""

from __future__ import annotations

import json

import dspy
import pytest

from bineval_dspy.checklists.bineval import BinEvalWriter
from bineval_dspy.checklists.routing import code_route, route_to_code
from bineval_dspy.core.schema import Checklist, Question
from tests.conftest import prompt_fields, scripted_lm


@pytest.mark.parametrize(
    "text, verifier",
    [
        ("Are all numbers in the summary found in the article?", "grounded:numbers"),
        ("Do the dates and amounts in the summary match those in the article?", "grounded:numbers"),
        ("Is every named entity in the summary present in the article?", "grounded:entities"),
        ("Does every name in the response appear in the dialogue?", "grounded:entities"),
        ("Does every sentence start with a capital letter?", "text:sentence_capitals"),
        ("Is the summary free of repeated words?", "text:no_repeated_words"),
        ("Are the numbers in the summary correct?", None),  # not asked against the input: the LM judges it
        ("Does the summary state the main event?", None),
    ],
)
def test_code_route(text, verifier):
    assert code_route(text) == verifier


def test_marking_keeps_ids_and_existing_verifiers():
    checklist = Checklist(
        task="t",
        dimensions=["d"],
        questions=[
            Question(text="Are all numbers in the summary found in the article?", dimension="d"),
            Question(text="Is it kind?", dimension="d", verifier="change_case:english_lowercase"),
        ],
    )
    marked = route_to_code(checklist)
    assert [q.id for q in marked.questions] == [q.id for q in checklist.questions]
    assert [q.verifier for q in marked.questions] == ["grounded:numbers", "change_case:english_lowercase"]


def test_the_bineval_writer_marks_what_code_answers():
    def script(request):
        if "requirement" in prompt_fields(request):
            return json.dumps({"questions": {"items": [
                {"question": "Are all numbers in the summary found in the article?", "no_example": "It says 42 where the article says 4.2."},
                {"question": "Does the summary state the main event of the article?", "no_example": "It misses the vote entirely."},
            ]}})
        return json.dumps({"requirements": {"items": [{"requirement": "Keep every fact consistent with the article.", "dimension": "consistency"}]}})

    dspy.configure(lm=scripted_lm(script))
    checklist = BinEvalWriter()(task="Summarize the article.", dimensions=["consistency"])
    assert [q.verifier for q in checklist.questions] == ["grounded:numbers", None]
    plain = BinEvalWriter(code_checks=False)(task="Summarize the article.", dimensions=["consistency"])
    assert [q.verifier for q in plain.questions] == [None, None]
