"""The one call every code check goes through (``registry.build_check`` wraps each check it builds in it), so
that nothing a verifier does ends, hangs or passes a run: an exception of any kind (``SystemExit`` from
``sys.exit``, a ``KeyboardInterrupt`` it raises, ``GeneratorExit``, ...) and a check that does not finish within
``check_timeout()`` seconds are one ``VerifierError`` line, which the judge records as an unanswered question,
grading as an ungraded instruction and Best-of-N as a failed sample check.

A check runs on a daemon thread of its own while its caller waits. This is what tells a verifier's
``KeyboardInterrupt`` from the user's Ctrl-C: Python delivers the signal to the main thread alone, so an interrupt
raised on the check's thread is the verifier's own (unanswered), while a Ctrl-C still interrupts the waiting caller
and stops the run as it always does. A check past its timeout cannot be stopped (Python has no way to end a thread):
it is left running on its daemon thread, the process exits without waiting for it, and its question is unanswered.
A verifier that ends the process itself (``os._exit``, a crash in C code) is beyond any guard.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TypeVar

from bineval_dspy.core.errors import BinevalError, one_line

T = TypeVar("T")

TIMEOUT_ENV = "BINEVAL_CHECK_TIMEOUT"  # seconds one call of a code check may take
DEFAULT_TIMEOUT = 60.0


class VerifierError(BinevalError, ValueError):
    """A suite row names an unknown instruction id or gives kwargs its verifier cannot take, or a verifier failed to
    give a verdict (it raised, exited, returned no verdict or did not finish in time)."""


def check_timeout() -> float:
    """Seconds one call of a code check may take: ``BINEVAL_CHECK_TIMEOUT`` when it holds a positive number (at
    most ``threading.TIMEOUT_MAX``), else 60."""
    try:
        seconds = float(os.environ.get(TIMEOUT_ENV, ""))
    except ValueError:
        return DEFAULT_TIMEOUT
    # "inf" (no limit) is the longest wait a thread may take: past ``TIMEOUT_MAX`` every check was an OverflowError
    return min(seconds, threading.TIMEOUT_MAX) if seconds > 0 else DEFAULT_TIMEOUT


def guarded(instruction_id: str, call: Callable[[], T], timeout: float | None = None) -> T:
    """``call()``'s result, computed on a daemon thread; whatever it raises (a ``VerifierError`` as it is, any other
    ``BaseException`` named with ``instruction_id``), or its not finishing within ``timeout`` seconds (default
    ``check_timeout()``), is one ``VerifierError`` here."""
    outcome: list[T] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:  # an exit or an interrupt inside a verifier is the verifier's
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name=f"check {instruction_id}", daemon=True).start()
    limit = check_timeout() if timeout is None else timeout
    if not done.wait(limit):
        raise VerifierError(f"{instruction_id} did not finish within {limit:g} s (`{TIMEOUT_ENV}` sets the limit)")
    if failure:
        exc = failure[0]
        if isinstance(exc, VerifierError):
            raise exc
        raise VerifierError(f"{instruction_id} raised {one_line(exc)}") from exc
    return outcome[0]
