"""The embedded engine's batch scheduler on its own (no model): batches across callers, results to their callers,
and how many rows the judging runner keeps in flight for an engine that batches."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from bineval_dspy.judges.runner import parallelism
from bineval_dspy.lm._batching import Batcher, Expectation


class Recorder:
    """A ``run`` that answers each request with its double and records the batches it was given; a request
    of -1 fails alone."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.release = threading.Event()

    def __call__(self, requests: list[int]) -> list[int | BaseException]:
        self.batches.append(list(requests))
        self.release.wait(timeout=30)
        return [ValueError(f"bad {r}") if r < 0 else 2 * r for r in requests]


def test_calls_of_several_callers_waiting_together_form_one_batch():
    run = Recorder()
    batcher: Batcher[int, int] = Batcher(run, max_size=8)
    with ThreadPoolExecutor(max_workers=7) as pool:
        first = pool.submit(batcher.submit, 0)  # leads a batch of one, held open until released
        while not run.batches:
            threading.Event().wait(0.01)
        rest = [pool.submit(batcher.submit, r) for r in range(1, 7)]  # two "rows" of three, waiting meanwhile
        while len(batcher.pending) < 6:
            threading.Event().wait(0.01)
        run.release.set()
        assert first.result() == 0
        assert [f.result() for f in rest] == [2, 4, 6, 8, 10, 12]
    assert run.batches[0] == [0]
    assert sorted(run.batches[1]) == [1, 2, 3, 4, 5, 6]  # everything that waited, in one batch
    assert len(run.batches) == 2


def test_a_failing_request_fails_alone_and_batches_never_exceed_their_size():
    run = Recorder()
    run.release.set()
    batcher: Batcher[int, int] = Batcher(run, max_size=3)
    with Expectation(batcher, 5), ThreadPoolExecutor(max_workers=5) as pool:
        futures = [pool.submit(batcher.submit, r) for r in (1, 2, -1, 4, 5)]
        with pytest.raises(ValueError, match="bad -1"):
            futures[2].result()
        assert [futures[i].result() for i in (0, 1, 3, 4)] == [2, 4, 8, 10]
    assert sorted(r for batch in run.batches for r in batch) == [-1, 1, 2, 4, 5]
    assert max(map(len, run.batches)) <= 3


def local_lm(parallel_sequences: int) -> SimpleNamespace:
    return SimpleNamespace(engine=SimpleNamespace(in_process=True, parallel_sequences=parallel_sequences))


@pytest.mark.parametrize(
    ("batched", "asked", "rows"),
    [(16, 12, 3), (16, 4, 5), (16, 16, 2), (16, 0, 1), (1, 12, 1)],
)
def test_rows_in_flight_fill_the_engines_batches(batched, asked, rows):
    plan = parallelism(local_lm(batched), asked)  # type: ignore[arg-type]
    assert (plan.rows, plan.questions) == (rows, None)


def test_a_batch_runs_its_calls_in_call_order_whatever_order_their_threads_arrive_in():
    """Questions of one output reach the batcher in thread order; the batch decodes them in checklist order, the
    order one call at a time would take (a request reuses its predecessor's KV cells), groups kept apart."""
    from contextvars import copy_context

    from bineval_dspy.lm._batching import call_order

    run = Recorder()
    batcher: Batcher[int, int] = Batcher(run, max_size=8)
    row_a, row_b = object(), object()

    def ask(group: object, index: int, request: int) -> int:
        with call_order(group, index):
            return batcher.submit(request)

    with ThreadPoolExecutor(max_workers=7) as pool:
        first = pool.submit(batcher.submit, 0)  # holds the batcher busy while the others gather
        while not run.batches:
            threading.Event().wait(0.01)
        arrivals = [(row_a, 2, 12), (row_b, 1, 21), (row_a, 0, 10), (row_b, 0, 20), (row_a, 1, 11)]
        futures = []
        for group, index, request in arrivals:  # one at a time, so the arrival order is the one written here
            waiting = len(batcher.pending)
            futures.append(pool.submit(copy_context().run, ask, group, index, request))
            while len(batcher.pending) == waiting:
                threading.Event().wait(0.01)
        run.release.set()
        assert first.result() == 0
        assert [f.result() for f in futures] == [24, 42, 20, 40, 22]
    assert run.batches == [[0], [10, 11, 12, 20, 21]]  # row a (first to arrive) in call order, then row b
