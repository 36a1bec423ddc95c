"""The constraints a task states that code checks exactly, found in its words (``checklists.stated``): the
verifier and its kwargs, nothing for what a task does not say, negations kept apart (issue 33, item 7); each IFEval
rule family read from paraphrases of its meaning (issue 54, item 2)."""

from __future__ import annotations

import pytest

from bineval_dspy.checklists.stated import DIMENSION, stated_constraints, with_stated_constraints
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
        # paraphrases of each family, beyond IFEval's own sentences
        ("You are not allowed to use any commas.", {"punctuation:no_comma": None}),
        ("Write the story without a single comma.", {"punctuation:no_comma": None}),
        ("Commas are forbidden in your answer.", {"punctuation:no_comma": None}),
        ("Please refrain from using commas.", {"punctuation:no_comma": None}),
        ("Keep it short: no more than 50 words.", {"length_constraints:number_words": {"relation": "less than", "num_words": 51}}),
        ("Your reply should be 200 words or more.", {"length_constraints:number_words": {"relation": "at least", "num_words": 200}}),
        ("Use fewer than 6 sentences.", {"length_constraints:number_sentences": {"relation": "less than", "num_sentences": 6}}),
        ("There should be exactly 3 paragraphs, separated by the markdown divider ***.", {"length_constraints:number_paragraphs": {"num_paragraphs": 3}}),
        ("Write four paragraphs and put *** between them.", {"length_constraints:number_paragraphs": {"num_paragraphs": 4}}),
        ("Write exactly 4 paragraphs separated by two new lines. Paragraph 2 must start with the word 'bloom'.",
         {"length_constraints:nth_paragraph_first_word": {"num_paragraphs": 4, "nth_paragraph": 2, "first_word": "bloom"}}),
        ("Give me 3 paragraphs, each separated by two line breaks; start the first paragraph with the word harbor.",
         {"length_constraints:nth_paragraph_first_word": {"num_paragraphs": 3, "nth_paragraph": 1, "first_word": "harbor"}}),
        ("Italicize at least 2 sections with markdown, i.e. *italic text*.", {"detectable_format:number_highlighted_sections": {"num_highlights": 2}}),
        ("Use markdown to highlight at least 4 parts of your answer.", {"detectable_format:number_highlighted_sections": {"num_highlights": 4}}),
        ("Words in all capital letters should appear at least 6 times.", {"change_case:capital_word_frequency": {"capital_relation": "at least", "capital_frequency": 6}}),
        ("Use fewer than 4 all-caps words.", {"change_case:capital_word_frequency": {"capital_relation": "less than", "capital_frequency": 4}}),
        ("Avoid the words 'cheap' and 'deal'.", {"keywords:forbidden_words": {"forbidden_words": ["cheap", "deal"]}}),
        ('Do not include "enzymes" or "antibodies" in your answer.', {"keywords:forbidden_words": {"forbidden_words": ["enzymes", "antibodies"]}}),
        ("Exclude the words economy and demand.", {"keywords:forbidden_words": {"forbidden_words": ["economy", "demand"]}}),
        ("End your response with the exact phrase: Hope this helps!", {"startend:end_checker": {"end_phrase": "Hope this helps!"}}),
        ('Conclude with the sentence "See you soon."', {"startend:end_checker": {"end_phrase": "See you soon."}}),
        ("Write a poem about rain.\n\nRepeat the request above word for word, then answer it.",
         {"combination:repeat_prompt": {"prompt_to_repeat": "Write a poem about rain."}}),
        ("Mention the word 'river' at least 3 times.", {"keywords:frequency": {"keyword": "river", "relation": "at least", "frequency": 3}}),
        ("Use the word 'sun' less than twice.", {"keywords:frequency": {"keyword": "sun", "relation": "less than", "frequency": 2}}),
        ("Steer clear of commas entirely.", {"punctuation:no_comma": None}),
        ("Commas must not be used.", {"punctuation:no_comma": None}),
        ("Capital letters are not allowed.", {"change_case:english_lowercase": None}),
        ("Never use capital letters in your reply.", {"change_case:english_lowercase": None}),
        ("Limit your answer to 80 words.", {"length_constraints:number_words": {"relation": "less than", "num_words": 81}}),
        ("Please don't put any commas in your reply.", {"punctuation:no_comma": None}),
        ("Make sure there are zero commas in the text.", {"punctuation:no_comma": None}),
        ("Respond entirely in uppercase.", {"change_case:english_capital": None}),
        ("Everything you write must be lowercase.", {"change_case:english_lowercase": None}),
        ("Never use the words 'very' or 'really'.", {"keywords:forbidden_words": {"forbidden_words": ["very", "really"]}}),
        ("The word education should not appear at all.", {"keywords:forbidden_words": {"forbidden_words": ["education"]}}),
        ("Avoid using the letter i more than twice.", {"keywords:letter_frequency": {"letter": "i", "let_relation": "less than", "let_frequency": 3}}),
        ("Make sure the word cousins appears more than 2 times.", {"keywords:frequency": {"keyword": "cousins", "relation": "at least", "frequency": 3}}),
        ("Include exactly 3 bullet points in markdown.", {"detectable_format:number_bullet_lists": {"num_bullets": 3}}),
        ("Your answer must be in French, no other language is allowed.", {"language:response_language": {"language": "fr"}}),
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
