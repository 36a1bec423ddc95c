"""The one console (stderr) and progress bars for long runs; imports no LM code, so it loads fast.

Library modules never print: they log through ``logging.getLogger(__name__)`` (as DSPy and Optuna do), so an
application routes or silences them. A command shows them on this console (``show_logs``: the message alone, a
warning in yellow), so its lines on the terminal read as they did when the library printed them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from bineval_dspy.core.errors import redacted
from bineval_dspy.core.terminal import TextConsole

console = TextConsole(stderr=True)  # progress, notes, the cost line; data is printed as text: no markup, no control sequences
shown = TextConsole()  # stdout: what a command found (tables, written paths), so `> file` keeps it
LIBRARY = "bineval_dspy"  # the logger every library module's logger descends from
QUIET_INFO = ("bineval_dspy.optimize",)  # its INFO lines (each iteration's scores) are an application's log; a command prints its own summary
SHOWN_INFO = ("bineval_dspy.optimize.calibrate_steps",)  # but calibrate's phases are the progress its command shows
T = TypeVar("T")
R = TypeVar("R")


@contextmanager
def results_on_stdout() -> Iterator[None]:
    """The block's console output goes to stdout: a command whose whole output is its result (``show``) prints
    through helpers shared with commands that print notes on stderr."""
    import sys

    kept = console._file  # None: rich resolves sys.stderr at each print (kept so, for pytest's capture)
    console.file = sys.stdout
    try:
        yield
    finally:
        console._file = kept


@contextmanager
def progress_bar(label: str, total: int) -> Iterator[Callable[[], None]]:
    """A progress bar on the console for ``total`` items; the block gets the function that advances it by one."""
    columns = (TextColumn(label, markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task(label, total=total)
        yield lambda: bar.advance(task)


def in_caller_context(fn: Callable[[T], R]) -> Callable[[T], R]:
    """Wrap ``fn`` so that, run in another thread, it sees the calling thread's DSPy context overrides."""
    from dspy.dsp.utils.settings import thread_local_overrides

    overrides = thread_local_overrides.get().copy()

    def run(item: T) -> R:
        token = thread_local_overrides.set(overrides.copy())
        try:
            return fn(item)
        finally:
            thread_local_overrides.reset(token)

    return run


TRUNCATED = "LM response was truncated"  # how DSPy's warning on a reply cut at its token limit begins


class _Truncations(logging.Filter):
    """Replies cut at their token limit, counted from DSPy's warning instead of printed with it (a filter on the logger
    that warns, so each record is counted once whatever handlers it reaches): a command says the count once, naming
    its token-limit option (``truncated_replies``)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(TRUNCATED):
            return True
        with self.lock:
            self.count += 1
        return False


_truncations = _Truncations()


def truncated_replies() -> int:
    """How many LM replies this process saw cut at their token limit (a command compares it before and after)."""
    return _truncations.count


class _OnceEach(logging.Filter):
    """Lets each distinct message through once, and nothing below WARNING: GEPA's progress at INFO once per step
    would bury the command's own lines."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[str, object]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.msg)
        if record.levelno < logging.WARNING or key in self.seen:
            return False
        self.seen.add(key)
        return True


class _Redacted(logging.Filter):
    """A record's message with any API key the process holds redacted: an LM error may quote the key."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if redacted(message) != message:
            record.msg, record.args = redacted(message), ()
        return True


def quiet_dspy_logs() -> None:
    """DSPy's log handler (its own, not propagating) shows each warning once per process, no key in it; a reply cut
    at its token limit is counted, not shown (DSPy's warning names its own setting, not the command's)."""
    lm_logger = logging.getLogger("dspy.clients.lm")
    if _truncations not in lm_logger.filters:
        lm_logger.addFilter(_truncations)
    for handler in logging.getLogger("dspy").handlers:
        if not any(isinstance(f, _OnceEach) for f in handler.filters):
            handler.addFilter(_Redacted())
            handler.addFilter(_OnceEach())


class ConsoleHandler(logging.Handler):
    """The library's log records as lines on ``console``: the message alone (through ``console.speak``, so a command
    says its flags), a warning in yellow (an error line is plain, as the command's own ``error:`` lines are)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            console.print(redacted(record.getMessage()), style="yellow" if record.levelno == logging.WARNING else None, soft_wrap=True)
        except Exception:  # a closed stream: logging's own report, never the end of a run
            self.handleError(record)


def show_logs() -> None:
    """Show the library's records from INFO up on the console (a command's notes, progress lines and warnings); once
    per process, however often a command runs in it. An application calling the library decides for itself."""
    logger = logging.getLogger(LIBRARY)
    if not logs_shown():
        logger.addHandler(ConsoleHandler())
    logger.setLevel(logging.INFO)
    for name in QUIET_INFO:
        logging.getLogger(name).setLevel(logging.WARNING)
    for name in SHOWN_INFO:
        logging.getLogger(name).setLevel(logging.INFO)


def logs_shown() -> bool:
    """Whether ``show_logs`` put the library's log on the console in this process (a worker it spawns does the same)."""
    return any(isinstance(handler, ConsoleHandler) for handler in logging.getLogger(LIBRARY).handlers)


def shown_path(path: Path) -> str:
    """A path as a reader knows it: relative to the working folder when inside it (a run's file, a baseline head)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
