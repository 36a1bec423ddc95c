"""User mistakes, LM failures that stop a run, and the exit codes they map to.

Library messages name a parameter as Python spells it, in backticks (``use `overwrite` or a new output path``):
the library speaks its own API. The CLI says its flag instead (``cli.main`` rewrites `overwrite` to --overwrite),
so neither layer speaks the other's language.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from enum import IntEnum
from typing import Any

PARAMETER = re.compile(r"`([a-z][a-z0-9_.]*)`")  # a parameter named in a library message


class BinevalError(Exception):
    """The base of the errors a run ends with on purpose: a message meant for the user, never a traceback."""


class InputError(BinevalError, ValueError):
    """Bad user input (file, line, field named in the message); never shown as a traceback."""


REDACTED = "[redacted]"
SECRET_MIN_CHARS = 8  # shorter values (a keyless server's placeholder "EMPTY") are no key worth hiding, and common words
_secrets: frozenset[str] = frozenset()  # replaced whole, never changed in place: a reader on another thread sees one set


def keep_secret(key: str | None) -> None:
    """Remember an API key this process holds, so ``redacted`` takes it out of any text the process writes: a
    server may echo the key it refused ("Incorrect API key provided: ...") into an error."""
    global _secrets
    if key and len(key) >= SECRET_MIN_CHARS and key not in _secrets:
        _secrets = _secrets | {key}


def redacted(text: str) -> str:
    """``text`` with every key ``keep_secret`` was given replaced by ``REDACTED``; the longest first, so a key that
    holds another goes whole."""
    for key in sorted(_secrets, key=len, reverse=True):
        if key in text:
            text = text.replace(key, REDACTED)
    return text


def redacted_value(value: Any) -> Any:
    """``value`` with ``redacted`` applied to every string inside it (dicts, lists and tuples walked; other objects
    kept): a reply a server echoed a key into is kept in a cache or an output without it."""
    if not _secrets:
        return value
    if isinstance(value, str):
        return redacted(value)
    if isinstance(value, dict):
        return {key: redacted_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redacted_value(item) for item in value)
    return value


def one_line(exc: BaseException) -> str:
    """An exception as one short line, for verdict explanations and run records, without any key the process
    holds (redacted before the line is cut, so no part of a key is left at its end)."""
    text = redacted(f"{type(exc).__name__}: {exc}").splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


class RunError(BinevalError, RuntimeError):
    """A run that cannot go on because its LM gave too little to build on; the CLI exits with ``LM_FAILURE``."""


class BudgetExhausted(BinevalError, RuntimeError):
    """The run stopped at its ``max_cost`` / ``max_calls`` budget; finished work is saved, a rerun goes on.

    The message is the one line the CLI prints; the CLI exits with ``BUDGET``.
    """


class ExitCode(IntEnum):
    """The ``bineval`` exit codes (documented in the README)."""

    OK = 0
    INCOMPLETE = 1  # the run finished, but some rows have unanswered verdicts or failed: rerun to retry them
    INPUT = 2  # bad input or arguments: one located line, nothing was done
    LM_FAILURE = 3  # the run stopped because its LM failed too often to give a result
    BUDGET = 4  # the run stopped at its max_cost or max_calls budget: finished work is saved, rerun to go on
    REGRESSION = 5
    """`compare` with `fail_on_regression`: NEW scored worse than BASE beyond noise (the paired interval of the mean
    difference lies below zero). Apart from 1, so CI tells a worse run from one a rerun would finish."""
    BELOW_GATE = 6
    """`judge` with `fail_under` or `fail_under_question`: the run finished, but its score (or a question's pass rate) is
    under the gate. Apart from 0, since completeness alone says nothing of quality (a judge that answers "yes" to
    everything completes every row)."""
    INTERRUPTED = 130


def spoken(text: str, names: Mapping[str, str] | Callable[[str], str | None]) -> str:
    """``text`` with each parameter it names in backticks said as ``names`` says it (a CLI: its flags); a
    parameter ``names`` does not know keeps its backticks."""
    lookup = names.get if isinstance(names, Mapping) else names
    return PARAMETER.sub(lambda m: lookup(m.group(1)) or m.group(0), text)
