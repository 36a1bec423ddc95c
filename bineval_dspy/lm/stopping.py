"""A graceful first Ctrl-C: the loops that run units of work (``budget.metered_map``: judged rows, generated rows,
scores, evaluated examples) start no new unit, let the units in flight finish and hand them on to be saved, then
raise ``KeyboardInterrupt``; the CLI says how many LM calls are finishing and quits at once on a second Ctrl-C.

Outside such a loop (a model loading, a lesson being written) there is nothing to finish: ``request_stop`` says so
and the caller raises ``KeyboardInterrupt`` itself.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dspy.utils.callback import BaseCallback


class _OpenCalls(BaseCallback):
    """LM calls started and not yet ended, inside the units of the running loops (thread-safe)."""

    def __init__(self) -> None:
        self.open = 0
        self._lock = threading.Lock()

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        with self._lock:
            self.open += 1

    def on_lm_end(self, call_id: str, outputs: Any, exception: Exception | None = None) -> None:
        with self._lock:
            self.open -= 1

    @contextmanager
    def counting(self) -> Iterator[None]:
        """One call open for the block: a call that runs without DSPy's callbacks (the verdict fast path)."""
        self.on_lm_start("", None, {})
        try:
            yield
        finally:
            self.on_lm_end("", None)


OPEN_CALLS = _OpenCalls()  # among the callbacks of every unit a stoppable loop runs
_requested = threading.Event()
_loops = 0  # stoppable loops running now (the main thread's, and any nested in them)
_loops_lock = threading.Lock()


@contextmanager
def stoppable() -> Iterator[None]:
    """A loop that checks ``stop_requested`` before starting each unit, and stops as the module says."""
    global _loops
    with _loops_lock:
        _loops += 1
    try:
        yield
    finally:
        with _loops_lock:
            _loops -= 1


def request_stop() -> int | None:
    """Ask the running loops to finish what is in flight and stop: the LM calls in flight now, or None when no
    loop runs (nothing would stop gracefully)."""
    with _loops_lock:
        if not _loops:
            return None
    _requested.set()
    return max(OPEN_CALLS.open, 0)


def stop_requested() -> bool:
    return _requested.is_set()


def reset() -> None:
    """A new command: no stop is pending."""
    _requested.clear()
