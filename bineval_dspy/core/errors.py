"""User mistakes, LM failures that stop a run, and the exit codes they map to."""

from __future__ import annotations

from enum import IntEnum


class InputError(ValueError):
    """Bad user input (file, line, field named in the message); never shown as a traceback."""


def one_line(exc: BaseException) -> str:
    """An exception as one short line, for verdict explanations and run records."""
    text = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


class RunError(RuntimeError):
    """A run that cannot go on because its LM gave too little to build on; the CLI exits with ``LM_FAILURE``."""


class BudgetExhausted(RuntimeError):
    """The run stopped at its ``--max-cost`` / ``--max-calls`` budget; finished work is saved, a rerun goes on.

    The message is the one line the CLI prints; the CLI exits with ``BUDGET``.
    """


class ExitCode(IntEnum):
    """The ``bineval`` exit codes (documented in the README)."""

    OK = 0
    INCOMPLETE = 1  # the run finished, but some rows have unanswered verdicts or failed: rerun to retry them
    INPUT = 2  # bad input or arguments: one located line, nothing was done
    LM_FAILURE = 3  # the run stopped because its LM failed too often to give a result
    BUDGET = 4  # the run stopped at its --max-cost or --max-calls budget: finished work is saved, rerun to go on
    INTERRUPTED = 130
