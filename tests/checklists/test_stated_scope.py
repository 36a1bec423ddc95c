"""A constraint only mentioned, asked about or quoted is not stated, and a limit stated for a part of the reply is not
a limit on the whole reply (issue 55, minor: "Is it true that some teachers ask for at least 300 words?" got a
300-word floor; issue 57, item 4: a JSON field's "at most 25 words" became a limit on the whole reply)."""

from __future__ import annotations

import pytest

from bineval_dspy.checklists.stated import enforcement_plan, extracted


def ids(prompt: str) -> set[str]:
    return {instruction_id for instruction_id, _ in extracted(prompt)}


@pytest.mark.parametrize(
    "prompt",
    [
        "Is it true that some teachers ask for at least 300 words? Reply in one sentence.",
        "Why do some editors insist on no commas in headlines?",
        'What does "write at least 300 words" mean in an essay prompt?',
        'My friend said: "Do not use any commas." Was that good advice?',
        "Many professors require at least 500 words for such essays. Tell me why.",
        "Does every sentence need to end with an emoji in a tweet?",
        'Explain the rule "Each word must start with the next letter of the alphabet" to a child.',
        "Summarize the article 'No Commas Allowed: A Style Guide'.",
        "Translate into French: 'Write at least 300 words.'",
        "Describe an essay contest where entries needed at least 500 words.",
        'Draw a logo that adds the word "Records" in small, stylized letters.',
        "Explain why some poets never use capital letters.",
    ],
)
def test_a_constraint_only_mentioned_asked_about_or_quoted_is_not_extracted(prompt):
    assert ids(prompt) & {"length_constraints:number_words", "punctuation:no_comma", "format:emoji", "words:alphabet", "change_case:english_lowercase", "change_case:english_capital"} == set()


def test_the_teacher_question_gets_no_word_floor_in_its_plan():
    plan = enforcement_plan("Is it true that some teachers ask for at least 300 words? Reply in one sentence.", "extracted")
    assert all(d.instruction_id != "length_constraints:number_words" for d in plan.decisions)


def test_a_request_put_as_a_question_is_still_stated():
    assert ids("Could you answer in less than 50 words?") == {"length_constraints:number_words"}
    assert ids("Can you write a poem without using any commas?") == {"punctuation:no_comma"}


@pytest.mark.parametrize(
    "prompt",
    [
        'Reply with a JSON object whose "summary" field is one sentence, at most 25 words.',
        "Give five tips as bullets, each bullet at most 10 words.",
        "Keep the title under 8 words and write the rest freely.",
        "Write a list of 4 items, each at most 12 words.",
        "Use at most 15 words per bullet point.",
        "The subject line must be no more than 6 words.",
        "Every paragraph should have at least 3 sentences.",
        "Write a title of at most 5 words, then the story.",
        "Answer each question in fewer than 20 words.",
        "For every slide, use at most 30 words.",
        "Write a tweet; the hashtag at the end should be all caps.",
    ],
)
def test_a_limit_stated_for_a_part_of_the_reply_is_not_a_limit_on_the_whole(prompt):
    assert ids(prompt) & {"length_constraints:number_words", "length_constraints:number_sentences", "count:word_count_range", "change_case:english_capital"} == set()


@pytest.mark.parametrize(
    "prompt, instruction_id",
    [
        ("Write a story with a title in double angular brackets and at least 300 words.", "length_constraints:number_words"),
        ("Write an essay of at least 300 words.", "length_constraints:number_words"),
        ("The summary must be at most 50 words.", "length_constraints:number_words"),
        ("Write exactly 3 paragraphs about cats. Your whole answer should have fewer than 10 sentences.", "length_constraints:number_sentences"),
    ],
)
def test_a_limit_on_the_reply_itself_is_still_stated(prompt, instruction_id):
    assert instruction_id in ids(prompt)
