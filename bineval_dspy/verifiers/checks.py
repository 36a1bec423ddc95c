"""``check:*``: parameterized checks for any task (a pattern, a text, valid JSON, a JSON Schema, a length), so a
checklist question can ask for one without a verifier module of its own.

Each is a function ``(response, **kwargs) -> Finding`` with a pydantic model of its kwargs (``register_typed``).
Texts are compared as given: surrounding whitespace of the response is ignored where it begins or ends.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, field_validator

from bineval_dspy.verifiers.registry import Finding, plural, quote, register_typed

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


class _Kwargs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RegexArgs(_Kwargs):
    pattern: str = Field(min_length=1, description="a Python regular expression, searched for anywhere in the response")
    must_match: bool = Field(default=True, description="false: the response must hold no match")
    flags: str = Field(default="", pattern="^[imsx]*$", description="letters of Python's inline flags: i, m, s, x")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a regular expression ({exc})") from None
        return pattern


def _regex_rule(pattern: str, must_match: bool = True, flags: str = "") -> str:
    case = " (any case)" if "i" in flags else ""
    return f"The response must {'' if must_match else 'not '}contain a match for the regular expression /{pattern}/{case}."


@register_typed("check:regex", rule=_regex_rule, kwargs=RegexArgs)
def regex(response: str, pattern: str, must_match: bool, flags: str) -> Finding:
    """A match anywhere in the response (``re.search``), or none with ``must_match`` false."""
    found = re.search(pattern, response, sum(_FLAGS[letter] for letter in set(flags)))
    if found is None:
        return Finding(not must_match, f"no match for /{quote(pattern, 40)[1:-1]}/")
    return Finding(must_match, f"matched {quote(found.group(0))} at character {found.start()}")


class TextArgs(_Kwargs):
    text: str = Field(min_length=1, description="the text, as it must appear")
    case_sensitive: bool = Field(default=True, description="false: any case matches")


def _folded(response: str, text: str, case_sensitive: bool) -> tuple[str, str]:
    return (response, text) if case_sensitive else (response.casefold(), text.casefold())


def _located(response: str, text: str, case_sensitive: bool) -> tuple[bool, str]:
    """Whether ``text`` is in the response, and where (or that it does not appear)."""
    haystack, needle = _folded(response, text, case_sensitive)
    at = haystack.find(needle)
    return at >= 0, f"found {quote(text)} at character {at}" if at >= 0 else f"{quote(text)} does not appear"


def _any_case(case_sensitive: bool) -> str:
    return "" if case_sensitive else " (in any case)"


@register_typed(
    "check:contains",
    rule=lambda text, case_sensitive=True: f"Include the text {quote(text, 60)}{_any_case(case_sensitive)}.",
    kwargs=TextArgs,
)
def contains(response: str, text: str, case_sensitive: bool) -> Finding:
    """``text`` somewhere in the response."""
    found, detail = _located(response, text, case_sensitive)
    return Finding(found, detail)


@register_typed(
    "check:not_contains",
    rule=lambda text, case_sensitive=True: f"Do not include the text {quote(text, 60)}{_any_case(case_sensitive)}.",
    kwargs=TextArgs,
)
def not_contains(response: str, text: str, case_sensitive: bool) -> Finding:
    """``text`` nowhere in the response."""
    found, detail = _located(response, text, case_sensitive)
    return Finding(not found, detail)


@register_typed(
    "check:starts_with",
    rule=lambda text, case_sensitive=True: f"Begin the response with {quote(text, 60)}{_any_case(case_sensitive)}.",
    kwargs=TextArgs,
)
def starts_with(response: str, text: str, case_sensitive: bool) -> Finding:
    """The response, leading whitespace aside, opens with ``text``."""
    haystack, needle = _folded(response.lstrip(), text, case_sensitive)
    return Finding(haystack.startswith(needle), f"begins with {quote(response.lstrip(), len(text) + 10)}")


@register_typed(
    "check:ends_with",
    rule=lambda text, case_sensitive=True: f"End the response with {quote(text, 60)}{_any_case(case_sensitive)}.",
    kwargs=TextArgs,
)
def ends_with(response: str, text: str, case_sensitive: bool) -> Finding:
    """The response, trailing whitespace aside, closes with ``text``."""
    haystack, needle = _folded(response.rstrip(), text, case_sensitive)
    tail = response.rstrip()[-(len(text) + 10) :]
    return Finding(haystack.endswith(needle), f"ends with {quote(tail, len(text) + 10)}")


class MaxCharsArgs(_Kwargs):
    n: int = Field(ge=1, description="the most characters the response may have")


@register_typed("check:max_chars", rule="Answer in at most {n} characters.", kwargs=MaxCharsArgs)
def max_chars(response: str, n: int) -> Finding:
    """At most ``n`` characters, surrounding whitespace aside."""
    length = len(response.strip())
    return Finding(length <= n, f"{plural(length, 'character')}")


def _parsed(response: str) -> tuple[Any, str]:
    """The response as JSON, or why it is none ("line 1 column 5: Expecting value")."""
    try:
        return json.loads(response), ""
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"


@register_typed("check:is_json", rule="Answer with only valid JSON, nothing before or after it.")
def is_json(response: str) -> Finding:
    """The whole response parses as one JSON value."""
    value, error = _parsed(response)
    return Finding(not error, error or f"valid JSON ({type(value).__name__})")


class JsonSchemaArgs(_Kwargs):
    json_schema: dict[str, Any] = Field(alias="schema", description="a JSON Schema object the response must match")

    @field_validator("json_schema")
    @classmethod
    def _a_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"not a JSON Schema: {exc.message}") from None
        return schema


def _json_path(path: Any) -> str:
    return "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


@register_typed(
    "check:json_schema",
    rule=lambda schema: f"Answer with only JSON that matches this JSON Schema: {json.dumps(schema, sort_keys=True)}.",
    kwargs=JsonSchemaArgs,
)
def json_schema(response: str, json_schema: dict[str, Any]) -> Finding:
    """The whole response parses as JSON and the schema finds no error in it (the most relevant one is named)."""
    value, error = _parsed(response)
    if error:
        return Finding(False, error)
    worst = jsonschema.exceptions.best_match(jsonschema.validators.validator_for(json_schema)(json_schema).iter_errors(value))
    if worst is None:
        return Finding(True, "valid JSON that matches the schema")
    return Finding(False, f"at {_json_path(worst.absolute_path)}: {worst.message[:120]}")
