"""The checklist screen: unfit questions, short checklists and uncovered dimensions are caught before writing; the
writer is asked again (bounded, counted in usage); what passed is written and the run exits 1 naming what is left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dspy.lm15 import Request

from bineval_dspy import cli
from bineval_dspy.checklists.screen import MAX_WORDS, RETRIES, json_debris, question_problem, screen, write_screened
from bineval_dspy.checklists.writers import ChecklistUsage
from bineval_dspy.core.schema import Checklist, Question
from tests.conftest import route_cli_lm


@pytest.mark.parametrize("text, problem", [
    ("Does the poem have three lines?", None),
    ("In the response, is the tone formal?", "is not a yes/no question"),
    ("Is it a haiku? I am a haiku. I am a haiku. I am a haiku.", "repeats itself ("),
    ("Describe the autumn imagery.", "is not a yes/no question"),
    ("Does it rhyme? Does it have three lines?", "asks more than one question"),
    ("Does it " + "mention one more leaf and " * 9 + "stop?", f"is too long (48 words; at most {MAX_WORDS})"),
    # issue 33: what the embedded writer put in the quickstart's first checklist
    ("Does the yes/no question for this task meet the requirement of 1 yes/no question for this task?", "asks about the checklist"),
    ("Is every item of the checklist answered?", "asks about the checklist"),
    ("Is it lowercase_lowercase_lowercase_lowercase_lowercase_?", "repeats itself ('lowercase_' 5 times in a row)"),
    ("Does the response answer the user's question with yes or no?", None),
    # issue 57, item 4: questions to the reader, not about the response (paraphrases of "Are you sure you're on the deadline?")
    ("Are you certain the deadline is met?", "is addressed to the reader"),
    ("Do you know when the report is due?", "is addressed to the reader"),
    ("Is the schedule something you're confident about?", "is addressed to the reader"),
    ("Haven't we agreed on the date already?", "is addressed to the reader"),
    ("Can I trust the figures?", "is addressed to the reader"),
    ("Does the reply thank the customer with 'we are grateful you're here'?", None),  # quoted: the response's voice
    ("Does the email address the reader as \"you\"?", None),
    ("Does your summary stay under 25 words?", None),
])
def test_question_problem_names_what_is_wrong(text, problem):
    found = question_problem(text)
    assert (found is None) if problem is None else (found is not None and found.startswith(problem)), found


def checklist(*texts: str, dimension: str = "form") -> Checklist:
    return Checklist(task="t", dimensions=[dimension], questions=[Question(text=t, dimension=dimension) for t in texts])


def test_screen_names_short_checklists_and_dimensions_without_a_question():
    found = screen(checklist("Does it have three lines?"), ["form", "content"], minimum=2)
    assert found == ["1 question(s); the method promises at least 2", "dimension 'content' has no question"]


def test_write_screened_retries_keeps_what_passed_and_stops_at_its_bound():
    calls: list[int] = []

    def write(attempt: int) -> Checklist:
        calls.append(attempt)
        return checklist("Does it have three lines?", "I am a haiku I am a haiku I am a haiku")

    result = write_screened(write, ["form"], minimum=2)
    assert calls == list(range(RETRIES + 1))
    assert [q.text for q in result.checklist.questions] == ["Does it have three lines?"]
    assert result.problems == ["1 question(s); the method promises at least 2"] and len(result.dropped) == 1


def test_a_stuttering_no_example_is_cleared_and_empty_dimensions_go():
    """Issue 33: the quickstart's checklist kept a no_example of 'no_no_no_...' and two dimensions with no question."""
    written = Checklist(task="t", dimensions=["item", "form", "item_name"], questions=[
        Question(text="Does it have three lines?", dimension="form", no_example="no_" * 40),
        Question(text="Is it about autumn?", dimension="form", no_example="A poem about the sea."),
    ])
    result = write_screened(lambda attempt: written, ["form"], minimum=1)
    assert result.checklist.dimensions == ["form"] and result.problems == [] and result.attempts == 1  # a field left out: no retry
    assert [q.no_example for q in result.checklist.questions] == ["", "A poem about the sea."]


@pytest.mark.parametrize("text, name, debris", [
    ('"100 },', True, True),  # issue 57, item 4: what the writer kept as a dimension
    ("42 ],", True, True),
    ("}", False, True),
    ('"no_example": "A reply of', False, True),
    ('summary": "too long', False, True),
    ("12", True, True),  # a dimension needs a word
    ("12", False, False),  # a no_example or a count may be a number
    ("", False, False),
    ("tone", True, False),
    ('{"summary": "A reply of forty words that rambles on."}', False, False),  # a whole JSON "no" for a JSON task
    ("The summary runs to three sentences.", False, False),
])
def test_json_debris_tells_fragments_of_the_writers_json_from_words(text, name, debris):
    assert (json_debris(text, name=name) is not None) is debris


def test_debris_dimensions_drop_the_question_and_debris_fields_are_left_out_with_a_line():
    """Issue 57, item 4: a dimension named '"100 },', a no_example and a lineage value of JSON debris were kept."""
    written = Checklist(task="t", dimensions=["form", '"100 },'], questions=[
        Question(text="Does it have three lines?", dimension="form", no_example='"}, {"text":', lineage={"requirement": "3 lines", "scenario": "],"}),
        Question(text="Is it about autumn?", dimension='"100 },'),
        Question(text="Does it name a season?", dimension="form", no_example="A poem about nothing.", lineage={"support": "3"}),
    ])
    result = write_screened(lambda attempt: written, ["form"], minimum=1)
    assert result.attempts == 2  # a question left out is worth one retry
    kept = result.checklist
    assert kept.dimensions == ["form"] and [q.text for q in kept.questions] == ["Does it have three lines?", "Does it name a season?"]
    assert kept.questions[0].no_example == "" and kept.questions[0].lineage == {"requirement": "3 lines"}
    assert kept.questions[1].no_example == "A poem about nothing." and kept.questions[1].lineage == {"support": "3"}
    lines = " ".join(result.dropped)
    assert "'Is it about autumn?' has a dimension that is JSON debris" in lines
    assert "the no_example" in lines and "the lineage scenario=']," in lines
    [problem] = screen(written, ["form"], minimum=1)
    assert problem.startswith("question ") and "has a dimension that is JSON debris (unpaired brackets or quotes)" in problem


TASK = "Write a haiku about autumn."
GOOD = ["Does the poem have three lines?", "Does the poem mention autumn?"]


def tick_script(replies: list[list[str]]):
    """TICK answers in turn (the last one repeated), and which attempt asked."""
    asked: list[Request] = []

    def script(request: Request) -> str:
        asked.append(request)
        return json.dumps({"questions": {"items": replies[min(len(asked), len(replies)) - 1]}})

    return script, asked


def run_checklist(tmp_path: Path, monkeypatch, replies: list[list[str]], *extra: str) -> tuple[int, Path, list[Request]]:
    script, asked = tick_script(replies)
    route_cli_lm(monkeypatch, script)
    out = tmp_path / "c.json"
    return cli.main(["checklist", "--task", TASK, "--method", "tick", "-o", str(out), *extra]), out, asked


def test_a_short_tick_list_is_asked_again_and_the_retry_counts_in_usage(tmp_path, monkeypatch, capsys):
    code, out, asked = run_checklist(tmp_path, monkeypatch, [["Is it true that the sky is blue?"], GOOD])  # TICK promises 2-8
    assert code == 0, capsys.readouterr().err
    assert len(asked) == 2
    assert [q.text for q in Checklist.model_validate_json(out.read_text()).questions] == GOOD
    usage = ChecklistUsage.model_validate_json((tmp_path / "c.json.usage.json").read_text())
    assert (usage.attempts, usage.usage.lm_calls) == (2, 2)
    err = " ".join(capsys.readouterr().err.split())
    assert "2 attempts: the screen asked again" in err and "attempt 1 gave no usable checklist: tick: the LM gave no usable questions" in err


def test_what_passed_is_written_and_each_problem_named_with_exit_1(tmp_path, monkeypatch, capsys):
    haiku = "Is it a haiku, I am a haiku, I am a haiku, I am a haiku?"
    code, out, asked = run_checklist(tmp_path, monkeypatch, [[haiku, GOOD[0]]])
    assert code == 1 and len(asked) == RETRIES + 1
    assert [q.text for q in Checklist.model_validate_json(out.read_text()).questions] == [GOOD[0]]
    err = " ".join(capsys.readouterr().err.split())
    assert "left out: 'Is it a haiku, I am a haiku" in err and "repeats itself" in err
    assert "problem: 1 question(s); the method promises at least 2" in err
    assert "1 problem(s) left after 3 attempt(s)" in err


def test_a_requested_dimension_without_a_question_is_a_problem(tmp_path, monkeypatch, capsys):
    def script(request: Request) -> str:
        about_form = "aspect only: form" in request.messages[-1].text
        return json.dumps({"questions": {"items": GOOD if about_form else ["Describe the mood.", "List the seasons."]}})

    route_cli_lm(monkeypatch, script)
    out = tmp_path / "c.json"
    assert cli.main(["checklist", "--task", TASK, "--method", "tick", "--dimensions", "form,content", "-o", str(out)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "problem: dimension 'content' has no question" in err  # its answers were no yes/no questions: none parsed
    assert {q.dimension for q in Checklist.model_validate_json(out.read_text()).questions} == {"form"}


def test_only_code_questions_left_is_said_in_the_last_line(tmp_path, monkeypatch, capsys):
    """Issue 47, item 6: every LM question screened out, the task's constraint kept as code: the last line says so and
    points to `bineval checklist --example`."""
    script, _ = tick_script([["Is it a haiku, I am a haiku, I am a haiku, I am a haiku?", "Does this checklist have five questions?"]])
    route_cli_lm(monkeypatch, script)
    out = tmp_path / "c.json"
    code = cli.main(["checklist", "--task", "Write a haiku about autumn, all in lowercase letters.", "--method", "tick", "-o", str(out)])
    assert code == 1
    assert all(q.verifier for q in Checklist.model_validate_json(out.read_text()).questions)
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "only code-checked questions" in last and "bineval checklist --example" in last
