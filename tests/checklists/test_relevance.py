"""The relevance screen with the real all-MiniLM-L6-v2 (offline): made-up questions a small writer produces are
left out, questions about the task or fair of any response are kept; and the quickstart's first checklist, written
by a scripted LM that makes up a question, comes out with the task's lowercase verifier (issue 33, item 7)."""

from __future__ import annotations

import json

import pytest

from bineval_dspy import cli
from bineval_dspy.checklists.relevance import Relevance
from bineval_dspy.core.schema import Checklist
from tests.conftest import prompt_fields, route_cli_lm

HAIKU = "Write a haiku about autumn, all in lowercase letters."


@pytest.fixture(scope="module")
def haiku() -> Relevance:
    return Relevance(HAIKU)


@pytest.mark.parametrize("question", ["Is it true that the sky is blue?", "Is the capital of France Paris?", "Is the item name valid?", "Does it matter how many questions you answer, you can answer them all?"])
def test_a_made_up_question_is_left_out(haiku, question):
    assert "is unrelated to the task" in (haiku.problem(question) or "")


@pytest.mark.parametrize("question", ["Is the poem about autumn?", "Does the poem have three lines?", "Is the whole response in lowercase letters?", "Is the text grammatical?", "Does the haiku use vivid imagery?"])
def test_a_question_about_the_task_or_fair_of_any_response_is_kept(haiku, question):
    assert haiku.problem(question) is None


def test_the_same_question_in_other_words_is_a_duplicate(haiku):
    assert haiku.duplicate("Is the whole response in lowercase letters?", "Is the response written entirely in lowercase letters?")
    assert not haiku.duplicate("Is the whole response in lowercase letters?", "Is the poem about autumn?")


def test_the_quickstart_checklist_has_the_lowercase_verifier_and_says_what_it_left_out(tmp_path, monkeypatch, capsys):
    def writer(request) -> str:  # the bineval writer's two steps, making up a requirement and its question
        if "requirement" in prompt_fields(request):
            return json.dumps({"questions": {"items": [{"question": "Is it true that the sky is blue?", "no_example": "no"}]}})
        return json.dumps({"requirements": {"items": [{"requirement": "The sky is blue.", "dimension": "item"}]}})

    route_cli_lm(monkeypatch, writer)
    out = tmp_path / "haiku.json"
    code = cli.main(["checklist", "--task", HAIKU, "-o", str(out)])
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    checklist = Checklist.model_validate_json(out.read_text())
    assert code == 0 and [(q.verifier, q.dimension) for q in checklist.questions] == [("change_case:english_lowercase", "constraints")]
    assert "left out: '" in err and "sky is blue?' is unrelated to the task" in err and "wrote 1 question to" in " ".join(captured.out.split())
    assert "Loading weights" not in err  # MiniLM loads quietly
