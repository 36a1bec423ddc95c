"""Console output for long runs: a shared stderr console, progress bars, thread policy."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import dspy
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from bineval_dspy.models import is_local

console = Console(stderr=True)
T = TypeVar("T")
R = TypeVar("R")


def progress_map(fn: Callable[[T], R], items: Sequence[T], label: str, threads: int = 1) -> Iterable[R]:
    """Apply ``fn`` to items (in a thread pool when threads > 1), yielding results in order with a progress bar."""
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task(label, total=len(items))
        if threads <= 1:
            for item in items:
                yield fn(item)
                bar.advance(task)
            return
        with ThreadPoolExecutor(max_workers=threads) as pool:
            for result in pool.map(fn, items):
                yield result
                bar.advance(task)


def effective_threads(lm: dspy.LM, threads: int) -> int:
    """An in-process model serializes calls; threads would only interleave prompts and defeat prefix reuse."""
    if is_local(lm) and threads > 1:
        console.print("[yellow]note:[/] the embedded model runs one call at a time; --threads ignored")
        return 1
    return threads
