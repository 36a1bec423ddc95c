"""The built-in parameterized ``check:*`` verifiers: each one's pass and fail, its rule, and kwargs it refuses."""

from __future__ import annotations

import pytest

from bineval_dspy.verifiers import Finding, VerifierError, build_check, describe, diagnose
from bineval_dspy.verifiers.registry import catalog

PERSON = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}


def finding(instruction_id: str, response: str, **kwargs: object) -> Finding:
    return diagnose(build_check(instruction_id, kwargs), response)


@pytest.mark.parametrize("instruction_id, kwargs, passing, failing", [
    ("check:regex", {"pattern": r"\b\d{4}-\d{2}-\d{2}\b"}, "Due 2024-05-01.", "Due in May."),
    ("check:regex", {"pattern": r"TODO", "must_match": False}, "All done.", "TODO: finish"),
    ("check:regex", {"pattern": r"^hello", "flags": "im"}, "Hi\nHELLO there", "Hi\nsay hello"),
    ("check:contains", {"text": "Paris"}, "It is Paris.", "It is paris."),
    ("check:contains", {"text": "Paris", "case_sensitive": False}, "It is paris.", "It is Rome."),
    ("check:not_contains", {"text": "as an AI"}, "Sure, here it is.", "Well, as an AI, I cannot."),
    ("check:not_contains", {"text": "sorry", "case_sensitive": False}, "Here it is.", "Sorry, no."),
    ("check:starts_with", {"text": "Dear"}, "  Dear Sir,", "Hello Sir,"),
    ("check:starts_with", {"text": "dear", "case_sensitive": False}, "DEAR Sir,", "Hi"),
    ("check:ends_with", {"text": "Thanks."}, "See you. Thanks.\n", "Thanks. See you."),
    ("check:ends_with", {"text": "THANKS.", "case_sensitive": False}, "ok thanks.", "ok"),
    ("check:max_chars", {"n": 10}, "  short  ", "far too long for ten"),
    ("check:is_json", {}, '{"a": [1, 2]}', "{'a': 1}"),
    ("check:json_schema", {"schema": PERSON}, '{"name": "Ada", "age": 36}', '{"name": "Ada", "age": "36"}'),
])  # fmt: skip
def test_each_check_passes_and_fails_with_a_detail(instruction_id, kwargs, passing, failing):
    assert finding(instruction_id, passing, **kwargs).passed, passing
    failed = finding(instruction_id, failing, **kwargs)
    assert not failed.passed and failed.detail.strip() and len(failed.detail) <= 160
    rule = describe(instruction_id, kwargs)
    assert rule[0].isupper() and rule.endswith(".") and "None" not in rule


def test_details_say_what_was_found():
    assert finding("check:regex", "Due 2024-05-01.", pattern=r"\d{4}") == Finding(True, "matched '2024' at character 4")
    assert finding("check:regex", "TODO: x", pattern="TODO", must_match=False) == Finding(False, "matched 'TODO' at character 0")
    assert finding("check:contains", "It is Rome.", text="Paris") == Finding(False, "'Paris' does not appear")
    assert finding("check:max_chars", "abcdef", n=5) == Finding(False, "6 characters")
    assert finding("check:is_json", "{'a': 1}").detail.startswith("not valid JSON: line 1 column 2")
    assert finding("check:json_schema", '{"age": 3}', schema=PERSON) == Finding(False, "at $: 'name' is a required property")
    assert finding("check:json_schema", '{"name": "A", "tags": [1, "x"]}', schema={"properties": {"tags": {"items": {"type": "integer"}}}}) == Finding(
        False, "at $.tags[1]: 'x' is not of type 'integer'"
    )
    assert finding("check:json_schema", "nope", schema=PERSON).detail.startswith("not valid JSON")


def test_rules_name_their_kwargs():
    assert describe("check:regex", {"pattern": "^A", "flags": "i"}) == "The response must contain a match for the regular expression /^A/ (any case)."
    assert describe("check:regex", {"pattern": "x", "must_match": False}) == "The response must not contain a match for the regular expression /x/."
    assert describe("check:contains", {"text": "Paris", "case_sensitive": False}) == "Include the text 'Paris' (in any case)."
    assert describe("check:max_chars", {"n": 280}) == "Answer in at most 280 characters."
    assert describe("check:json_schema", {"schema": {"type": "array"}}) == 'Answer with only JSON that matches this JSON Schema: {"type": "array"}.'


@pytest.mark.parametrize("instruction_id, kwargs, message", [
    ("check:regex", {"pattern": "("}, "field 'pattern': Value error, not a regular expression"),
    ("check:regex", {"pattern": "a", "flags": "q"}, "field 'flags'"),
    ("check:contains", {"text": ""}, "field 'text'"),
    ("check:contains", {}, "field 'text': Field required"),
    ("check:max_chars", {"n": 0}, "field 'n'"),
    ("check:json_schema", {"schema": {"type": "blob"}}, "field 'schema': Value error, not a JSON Schema"),
    ("check:json_schema", {"schema": "object"}, "field 'schema'"),
])  # fmt: skip
def test_bad_kwargs_are_one_line(instruction_id, kwargs, message):
    with pytest.raises(VerifierError, match="bad kwargs") as bad:
        build_check(instruction_id, kwargs)
    assert message in str(bad.value) and "\n" not in str(bad.value)
    with pytest.raises(VerifierError, match="unexpected kwargs typo"):
        build_check(instruction_id, {**kwargs, "typo": 1})


def test_the_catalogue_lists_them_with_their_kwargs():
    listed = {info.instruction_id: info for info in catalog("check:")}
    assert set(listed) == {
        "check:regex", "check:contains", "check:not_contains", "check:is_json", "check:json_schema",
        "check:starts_with", "check:ends_with", "check:max_chars",
    }  # fmt: skip
    assert listed["check:regex"].kwargs == {"pattern": "required", "must_match": "True", "flags": "''"}
    assert listed["check:json_schema"].kwargs == {"schema": "required"} and listed["check:is_json"].kwargs == {}
    assert listed["check:contains"].rule == "Include the text '{text}'."
