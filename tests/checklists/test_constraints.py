"""The constraints a task states that code checks exactly, found in its words (``checklists.constraints``): the
verifier and its kwargs, nothing for what a task does not say, negations kept apart (issue 33, item 7)."""

from __future__ import annotations

import pytest

from bineval_dspy.checklists.constraints import DIMENSION, stated_constraints, with_stated_constraints
from bineval_dspy.core.schema import Checklist, Question


def found(task: str) -> dict[str, dict | None]:
    return {q.verifier: q.verifier_kwargs for q in stated_constraints(task)}


@pytest.mark.parametrize(
    "task, expected",
    [
        ("Write a haiku about autumn, all in lowercase letters.", {"change_case:english_lowercase": None}),
        ("Write a 300+ word summary. Do not use any commas.", {"length_constraints:number_words": {"relation": "at least", "num_words": 300}, "punctuation:no_comma": None}),
        ("Answer in at most 5 sentences.", {"length_constraints:number_sentences": {"relation": "less than", "num_sentences": 6}}),
        ("Use less than 100 words.", {"length_constraints:number_words": {"relation": "less than", "num_words": 100}}),
        ("Wrap your entire response with double quotation marks.", {"startend:quotation": None}),
        ('Finish your response with the exact phrase "Any other questions?".', {"startend:end_checker": {"end_phrase": "Any other questions?"}}),
        ("Highlight at least three sections with markdown.", {"detectable_format:number_highlighted_sections": {"num_highlights": 3}}),
        ('Make sure the word "ocean" appears at least 4 times.', {"keywords:frequency": {"keyword": "ocean", "relation": "at least", "frequency": 4}}),
        ("The letter q should appear less than 2 times.", {"keywords:letter_frequency": {"letter": "q", "let_relation": "less than", "let_frequency": 2}}),
        ("Please respond using only the Kannada language, no other language is allowed.", {"language:response_language": {"language": "kn"}}),
        ("Your entire response should be in English, and in all capital letters.", {"change_case:english_capital": None}),
        ("Include at least 15 words in all capital letters.", {"change_case:capital_word_frequency": {"capital_relation": "at least", "capital_frequency": 15}}),
        ('Don\'t include the keywords "DuPage" and "Dade" in your response.', {"keywords:forbidden_words": {"forbidden_words": ["DuPage", "Dade"]}}),
        ('The email must include the keywords "correlated" and "experiencing".', {"keywords:existence": {"keywords": ["correlated", "experiencing"]}}),
        ("At the end of your response, please add a postscript starting with P.S.", {"detectable_content:postscript": {"postscript_marker": "P.S."}}),
        ("Write a blog post about trains.\nFirst repeat the sentence above word for word without change, then give your answer.",
         {"combination:repeat_prompt": {"prompt_to_repeat": "Write a blog post about trains."}}),
        ("First repeat the request below, word for word, then give your answer.\n\nWrite a story about a man. Do not use any commas.",
         {"combination:repeat_prompt": {"prompt_to_repeat": "Write a story about a man. Do not use any commas."}, "punctuation:no_comma": None}),
        ("Write a poem about the sea.", {}),
        ("Explain in two paragraphs why the sky is blue.", {}),
    ],
)
def test_a_stated_constraint_gets_its_verifier_and_kwargs(task, expected):
    assert found(task) == expected


def test_found_questions_lead_and_replace_a_written_question_that_asks_the_same():
    written = Checklist(task="t", dimensions=["style"], questions=[
        Question(id="q1", text="Is it all lowercase?", dimension="style"), Question(id="q2", text="Is it about autumn?", dimension="style"),
    ])  # fmt: skip
    constraints = stated_constraints("Write a haiku about autumn, all in lowercase letters.")
    merged = with_stated_constraints("t", written, constraints, lambda a, b: "lowercase" in a)
    assert merged is not None and with_stated_constraints("t", None, [], lambda a, b: False) is None
    assert [(q.id, q.verifier) for q in merged.questions] == [("q1", "change_case:english_lowercase"), ("q2", None)]
    assert merged.dimensions == ["style", DIMENSION] and merged.questions[1].text == "Is it about autumn?"
