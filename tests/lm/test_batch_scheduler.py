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
