"""Rule sentences (``describe``) and concrete diagnoses (``diagnose``) of the code verifiers."""

from __future__ import annotations

import json
import re

import pytest

from bineval_dspy.core.schema import Question
from bineval_dspy.judges.code import make_code_router
from bineval_dspy.verifiers import (
    Finding,
    VerifierError,
    build_check,
    describe,
    diagnose,
    follows,
    known_instruction_ids,
    register,
)
from tests.conftest import SHARED_DATA

IFEVAL_ROWS = SHARED_DATA / "ifeval" / "ifeval_shared.jsonl"
IFBENCH_ROWS = SHARED_DATA / "ifbench" / "ifbench_test_shared.jsonl"
IFBENCH_GRADED = SHARED_DATA / "ifbench" / "ifbench_sample_responses_graded.jsonl"
needs_shared_data = pytest.mark.skipif(
    not (IFEVAL_ROWS.exists() and IFBENCH_ROWS.exists() and IFBENCH_GRADED.exists()),
    reason="shared IFEval/IFBench data not found",
)

ARTICLE = "Sales at Millbrook rose 30% to 4.2 million units in 2023, Mayor Ana Ruiz said."
# Ids no shared row uses, with valid kwargs (and input) of their own.
OWN_EXAMPLES: dict[str, tuple[dict, str]] = {
    "grounded:numbers": ({}, ARTICLE),
    "grounded:entities": ({}, ARTICLE),
    "text:sentence_count": ({"min_sentences": 2, "max_sentences": 5}, ""),
    "text:word_count": ({"max_words": 100}, ""),
    "text:no_repeated_words": ({"allowed_words": ["Bora"]}, ""),
    "text:sentence_capitals": ({}, ""),
    "check:regex": ({"pattern": "^A"}, ""),
    "check:contains": ({"text": "Paris"}, ""),
    "check:not_contains": ({"text": "Paris"}, ""),
    "check:starts_with": ({"text": "Dear"}, ""),
    "check:ends_with": ({"text": "Thanks."}, ""),
    "check:max_chars": ({"n": 280}, ""),
    "check:json_schema": ({"schema": {"type": "object"}}, ""),
}


def _rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _valid_examples() -> dict[str, tuple[dict, str]]:
    """One (kwargs, prompt) per instruction id that its verifier accepts: the first shared row's that builds."""
    examples = dict(OWN_EXAMPLES)
    for row in _rows(IFEVAL_ROWS) + _rows(IFBENCH_ROWS):
        for instruction_id, kwargs in zip(row["instruction_id_list"], row["kwargs"]):
            if instruction_id in examples:
                continue
            try:
                build_check(instruction_id, kwargs, row["prompt"])
            except VerifierError:
                continue  # e.g. IFEval's letter_frequency rows with letter '#'
            examples[instruction_id] = (kwargs, row["prompt"])
    for instruction_id in known_instruction_ids():  # the custom:* and repeat_simple checks take no kwargs
        examples.setdefault(instruction_id, ({}, ""))
    return examples


# --------------------------------------------------------------------------- every verifier


@needs_shared_data
def test_every_verifier_states_its_rule_as_an_instruction() -> None:
    examples = _valid_examples()
    assert set(examples) == set(known_instruction_ids())
    for instruction_id, (kwargs, prompt) in examples.items():
        rule = describe(instruction_id, kwargs, prompt)
        assert rule[0].isupper() and rule.rstrip("'").endswith("."), (instruction_id, rule)
        assert "None" not in rule and not re.search(r"\d\.0\b", rule), (instruction_id, rule)


@needs_shared_data
def test_failures_on_real_responses_say_what_was_found() -> None:
    examples = _valid_examples()
    graded = _rows(IFBENCH_GRADED)
    suite = {row["key"]: row for row in _rows(IFBENCH_ROWS)}
    findings = []
    for row in graded:  # each response against its own instructions, in both modes
        kwargs_list = suite[str(row["key"])]["kwargs"]
        for instruction_id, kwargs in zip(row["instruction_id_list"], kwargs_list):
            check = build_check(instruction_id, kwargs, row["prompt"])
            findings += [(instruction_id, diagnose(check, row["response"], mode)) for mode in ("strict", "loose")]
    for instruction_id, (kwargs, prompt) in examples.items():  # every verifier against a sample of responses
        check = build_check(instruction_id, kwargs, prompt)
        findings += [(instruction_id, diagnose(check, row["response"])) for row in graded[:30]]
    assert any(not finding.passed for _, finding in findings)
    for instruction_id, finding in findings:
        assert finding.detail.strip(), instruction_id
        assert len(finding.detail) <= 160, (instruction_id, finding.detail)


# --------------------------------------------------------------------------- hand-checked diagnoses


def finding(instruction_id: str, response: str, prompt: str = "", **kwargs: object) -> Finding:
    """What one verifier finds in ``response`` in strict mode."""
    return diagnose(build_check(instruction_id, kwargs, prompt), response)


def test_lowercase_names_the_capitalised_words() -> None:
    assert finding("change_case:english_lowercase", "The dog and I saw NASA.") == Finding(
        False, "asked for all lowercase letters; found 3 words with capitals: 'The', 'I', 'NASA'"
    )
    assert describe("change_case:english_lowercase", {}) == (
        "Write the whole response in English and in lowercase letters, with no capitals."
    )


def test_word_counts_give_the_count_found() -> None:
    words = " ".join(["word"] * 212)
    assert finding("length_constraints:number_words", words, num_words=300, relation="at least") == Finding(
        False, "asked for at least 300 words; found 212"
    )
    assert finding(
        "length_constraints:number_words", "one two three four five six", num_words=5, relation="less than"
    ) == (Finding(False, "asked for fewer than 5 words; found 6"))
    assert finding("count:word_count_range", "too short", min_words=50.0, max_words=100.0).detail == (
        "asked for 50 to 100 words; found 2"
    )
    assert describe("length_constraints:number_words", {"num_words": 300, "relation": "at least"}) == (
        "Answer with at least 300 words."
    )


def test_bullet_count_quotes_the_first_bullets() -> None:
    assert finding("detectable_format:number_bullet_lists", "* a\n* b\n* c\n- d\n- e", num_bullets=3) == Finding(
        False, "asked for exactly 3 bullet points; found 5: '* a', '* b', '* c', …"
    )


def test_end_phrase_shows_how_the_response_ends() -> None:
    phrase = "Is there anything else I can help with?"
    response = "Here is my answer. Thanks for reading these last words"
    assert finding("startend:end_checker", response, end_phrase=phrase) == Finding(
        False, f"asked to end with the phrase '{phrase}'; the response ends with '… for reading these last words'"
    )
    assert finding("startend:end_checker", f"Done. {phrase}", end_phrase=phrase).passed


def test_paragraphs() -> None:
    assert finding("length_constraints:number_paragraphs", "One.\n\nTwo.", num_paragraphs=3).detail == (
        "asked for exactly 3 paragraphs separated by ***; found 1 (no *** divider)"
    )
    assert finding("length_constraints:number_paragraphs", "A *** *** B", num_paragraphs=3).detail == (
        "asked for exactly 3 paragraphs separated by ***; found an empty paragraph between two *** dividers"
    )
    nth = {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"}
    assert finding("length_constraints:nth_paragraph_first_word", "First part.\n\nAfter that, more.", **nth).detail == (
        "asked for 2 paragraphs, the 2nd starting 'then'; the 2nd starts with 'after'"
    )


def test_keywords() -> None:
    assert finding("keywords:existence", "The ocean is calm.", keywords=["ocean", "tide"]).detail == (
        "asked to include 'ocean', 'tide'; missing 'tide'"
    )
    assert finding("keywords:frequency", "A cat and a category.", keyword="cat", frequency=3, relation="at least") == (
        Finding(False, "asked for 'cat' at least 3 times; it occurs 2 times")
    )
    assert finding("keywords:forbidden_words", "It is Very good.", forbidden_words=["very", "really"]).detail == (
        "asked to avoid 'very', 'really'; found 'Very'"
    )
    assert describe("keywords:existence", {"keywords": ["ocean", "tide"]}) == (
        "Include the keywords 'ocean' and 'tide' in the response."
    )


def test_placeholders() -> None:
    assert finding("detectable_content:number_placeholders", "Dear [name], see you.", num_placeholders=2).detail == (
        "asked for at least 2 placeholders in square brackets; found 1: '[name]'"
    )


def test_json_format_says_where_parsing_stops() -> None:
    assert finding("detectable_format:json_format", 'Here: {"a": 1}').detail == (
        "asked for the whole response to be JSON; it does not parse: Expecting value at line 1 column 1, "
        "near 'Here: {\"a\": 1}'"
    )
    assert finding("detectable_format:json_format", "```json\n[1, 2]\n```") == Finding(
        True, "asked for the whole response to be JSON; it parses as an array"
    )


def test_grounded_numbers_quote_the_invented_figures() -> None:
    response = "Sales rose 30% to 5 million in 2023, up 12%."
    assert finding("grounded:numbers", response, prompt=ARTICLE) == Finding(
        False, "asked for numbers from the input only; found 2 numbers not in it: '5 million', '12%'"
    )
    assert finding("grounded:numbers", "Sales rose 30% in 2023.", prompt=ARTICLE).passed


def test_quotation_rule() -> None:
    assert describe("startend:quotation", None) == "Wrap the entire response in double quotation marks."
    assert finding("startend:quotation", '"Hello there.').detail == (
        "asked for the whole response in double quotes; it ends with '\"Hello there.'"
    )


# --------------------------------------------------------------------------- describe


def test_describe_handles_kwargs_like_build_check() -> None:
    # IFBench float counts read as whole numbers; None values are dropped; optional bounds read naturally.
    assert describe("count:word_count_range", {"min_words": 50.0, "max_words": 100.0}) == (
        "Answer with between 50 and 100 words."
    )
    assert describe("length_constraints:number_words", {"num_words": 9, "relation": "less than", "x": None}) == (
        "Answer with fewer than 9 words."
    )
    assert describe("text:word_count", {"max_words": 100}) == "Write at most 100 words."
    assert (
        describe("text:sentence_count", {"min_sentences": 2, "max_sentences": 5}) == "Write between 2 and 5 sentences."
    )
    assert describe("grounded:numbers", {}, prompt=ARTICLE).startswith("Use only numbers that appear in the input")
    with pytest.raises(VerifierError, match="unknown instruction id"):
        describe("no:such_thing", {})
    with pytest.raises(VerifierError, match="bad kwargs"):
        describe("keywords:letter_frequency", {"letter": "#", "let_frequency": 2, "let_relation": "at least"})
    with pytest.raises(VerifierError, match="unexpected kwargs"):
        describe("punctuation:no_comma", {"bogus": 1})


def test_a_rule_must_match_its_factory() -> None:
    with pytest.raises(RuntimeError, match="does not match its kwargs"):
        register("test:typo", rule="Use {nmu} words.")(lambda num: lambda response: Finding(True))
    with pytest.raises(RuntimeError, match="does not match its kwargs"):
        register("test:typo", rule=lambda other: "x")(lambda num: lambda response: Finding(True))
    assert "test:typo" not in known_instruction_ids()


def test_a_failing_finding_needs_a_detail() -> None:
    assert bool(Finding(True)) and not Finding(False, "why")
    with pytest.raises(ValueError):
        Finding(False)


# --------------------------------------------------------------------------- diagnose modes


def test_diagnose_strict_and_loose() -> None:
    check = build_check("punctuation:no_comma", {})
    response = "Sure, here it is:\nno commas at all here\nthe end"
    strict = diagnose(check, response)
    assert strict == Finding(False, "asked for no commas; found 1 comma: 'Sure,'")
    # Loose mode reports the first variant that passes (here: the first line cut).
    assert diagnose(check, response, "loose") == Finding(True, "asked for no commas; found none")
    # When no variant passes, loose mode reports what the unmodified response shows.
    everywhere = "a, b\nc, d\ne, f"
    assert (
        diagnose(check, everywhere, "loose")
        == diagnose(check, everywhere)
        == Finding(False, "asked for no commas; found 3 commas: 'a,', 'c,', 'e,'")
    )
    for mode in ("strict", "loose"):
        assert diagnose(check, " \n ", mode) == Finding(False, "the response is empty")
        assert follows(check, response, mode) is diagnose(check, response, mode).passed


# --------------------------------------------------------------------------- code router


def test_code_router_explains_with_rule_and_detail() -> None:
    question = Question(text="Is there no comma?", dimension="d", verifier="punctuation:no_comma", verifier_kwargs={})
    response = "Sure, here it is:\nno commas at all here\nthe end"
    strict = make_code_router()(question, "prompt", response)
    assert strict is not None and strict.answer == "no"
    assert (
        strict.explanation
        == "Do not use any commas in the response. Not met: asked for no commas; found 1 comma: 'Sure,'"
    )
    loose = make_code_router("loose")(question, "prompt", response)
    assert loose is not None and loose.answer == "yes"
    assert loose.explanation == "Do not use any commas in the response. Met: asked for no commas; found none"

    words = Question(
        text="Long enough?",
        dimension="d",
        verifier="length_constraints:number_words",
        verifier_kwargs={"num_words": 10, "relation": "at least"},
    )
    verdict = make_code_router()(words, "prompt", "Too short.")
    assert (
        verdict is not None
        and verdict.explanation == "Answer with at least 10 words. Not met: asked for at least 10 words; found 2"
    )


def test_the_catalogue_names_kwargs_a_rule_needs_never_a_zero_made_of_none() -> None:
    """`bineval verifiers` said "Write at least 0 sentences." for a check that needs a bound (issue 33, item 15)."""
    from bineval_dspy.verifiers.registry import catalog

    rules = {info.instruction_id: info.rule for info in catalog("count")}
    assert rules["text:sentence_count"] == "Write between {min_sentences} and {max_sentences} sentences."
    assert rules["text:word_count"] == "Write between {min_words} and {max_words} words."
    assert not any(" 0 " in rule for rule in rules.values())
