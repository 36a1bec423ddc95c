"""A judge's JSON reply read strictly: one object at the start, each key once, nothing after it.

Why: a lenient repair over the whole reply read a refusal that quoted the schema as verdicts, and a reply that gave
two answers for one question as one of them (which one depended on the format). A reply a judge cannot read
exactly is no verdict: every reader in ``judges`` goes through ``check_reply`` before it parses anything.
"""

from __future__ import annotations

import json
import re
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from bineval_dspy.core.errors import BinevalError

ANSWER_KEY = re.compile(r'"answer"\s*:')
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)


class ReplyError(BinevalError, ValueError):
    """The reply is not one JSON object a verdict can be read from exactly; the message says why."""


class _Twice(Exception):
    pass


def _no_key_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _Twice(key)
        seen[key] = value
    return seen


def unfenced(completion: str | None) -> str:
    """The reply without surrounding whitespace or one Markdown code fence around it."""
    text = (completion or "").strip()
    fenced = _FENCE.match(text)
    return fenced.group(1).strip() if fenced else text


def check_reply(completion: str | None, answers: int = 1) -> dict[str, Any] | None:
    """The reply's object when the reply is exactly one JSON object; None when it starts as one but is cut short
    (a token limit or a stop sequence: the caller's lenient reader may take what is there). Raises ``ReplyError``
    for text before the object, text after it, a key given twice, or more than ``answers`` answers."""
    text = unfenced(completion)
    if not text.startswith("{"):
        raise ReplyError("the reply does not start with its JSON object")
    if len(ANSWER_KEY.findall(text)) > answers:
        raise ReplyError(f"the reply gives more than {answers} answer(s)")
    try:
        obj, end = json.JSONDecoder(object_pairs_hook=_no_key_twice).raw_decode(text)
    except _Twice as twice:
        raise ReplyError(f"the reply gives the key {twice.args[0]!r} twice") from None
    except json.JSONDecodeError:
        return None
    if text[end:].strip():
        raise ReplyError("the reply goes on after its JSON object")
    return obj


def parsed_reply(adapter: dspy.Adapter, signature: type[dspy.Signature], completion: str | None, answers: int = 1) -> dict[str, Any] | None:
    """``check_reply`` for an adapter's ``parse``: its refusal raised as DSPy's parse error (an unanswered verdict)."""
    try:
        return check_reply(completion, answers)
    except ReplyError as exc:
        raise AdapterParseError(adapter_name=type(adapter).__name__, signature=signature, lm_response=completion, message=str(exc)) from None
