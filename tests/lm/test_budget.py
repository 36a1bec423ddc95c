"""Budgets: a unit of work starts only when the run's spending, plus an estimate for it and for the units in flight,
stays within ``--max-cost`` / ``--max-calls``; a stop lets the units in flight finish and says what is left."""

from __future__ import annotations

import dspy
import pytest

from bineval_dspy.core.errors import BudgetExhausted
from bineval_dspy.lm.budget import Budget, BudgetMeter, metered_map
from bineval_dspy.lm.usage import Cost
from bineval_dspy.testing import scripted_lm


def test_a_unit_starts_only_when_its_estimate_fits():
    meter = BudgetMeter(Budget(max_calls=5))
    for _ in range(2):  # the first unit has no estimate and starts; the second is estimated at 2 calls: 2 + 2 <= 5
        assert meter.decide("row") == "start"
        meter.begin("row")
        meter.end("row", Cost(lm_calls=2))
    assert meter.decide("row") == "stop"  # 4 + 2 > 5
    assert meter.decide("checklist") == "start"  # a kind with no estimate starts while the budget is not reached
    meter.begin("checklist")
    assert meter.decide("row") == "wait"  # a unit without an estimate is in flight: wait for what it spends
    meter.end("checklist", Cost(lm_calls=1))
    assert meter.decide("checklist") == "stop"  # 5 + 1 > 5
    assert BudgetMeter().decide("row") == "start"  # no budget: always


def test_a_dollar_budget_counts_dollars():
    meter = BudgetMeter(Budget(max_cost=1.0))
    meter.begin("row")
    meter.end("row", Cost(lm_calls=1, usd=0.5))
    assert meter.decide("row") == "start"  # 0.5 + 0.5 <= 1, exactly at the budget
    meter.begin("row")
    meter.end("row", Cost(lm_calls=1, usd=0.5))
    assert meter.decide("row") == "stop"
    assert Budget(max_cost=1.0, max_calls=9).share(2) == Budget(max_cost=0.5, max_calls=4)


@pytest.mark.parametrize("threads", [1, 3])
def test_metered_map_stops_before_the_budget_and_yields_what_finished(threads):
    lm = scripted_lm(lambda r: '{"answer": "ok"}')
    predict = dspy.Predict("question -> answer")

    def unit(n: int) -> int:
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            predict(question=f"a{n}")
            predict(question=f"b{n}")
        return n

    meter = BudgetMeter(Budget(max_calls=7))
    done = []
    with pytest.raises(BudgetExhausted) as stop:
        for n, cost in metered_map(unit, list(range(6)), "units", threads=threads, meter=meter, kind="row", what="row(s)"):
            done.append((n, cost.lm_calls))
    assert done == [(0, 2), (1, 2), (2, 2)]  # in order; a fourth unit would have made 8 calls
    assert meter.spent.lm_calls == len(lm.engine.requests) == 6
    message = str(stop.value)
    assert "`max_calls` 7" in message and "3 of 6 row(s) not started" in message and "rerun the same command" in message
    assert "\n" not in message


def test_metered_map_without_a_budget_runs_everything():
    assert [n for n, _ in metered_map(lambda n: n * 2, [1, 2, 3], "units", threads=2)] == [2, 4, 6]


def test_a_stop_request_finishes_the_units_in_flight_then_interrupts():
    """What a first Ctrl-C asks (``lm.stopping``): no new unit starts, the ones in flight are yielded (to be saved)."""
    import threading

    from bineval_dspy.lm import stopping

    assert stopping.request_stop() is None  # no loop runs: nothing to finish, the caller interrupts at once
    asked = threading.Event()

    def unit(item: int) -> int:
        if item == 0:  # in flight while the stop is asked
            assert asked.wait(timeout=10)
        if item == 1:
            assert stopping.request_stop() == 0  # no LM call is open in these units
            asked.set()
        return item

    yielded = []
    try:
        with pytest.raises(KeyboardInterrupt):
            for result, _ in metered_map(unit, list(range(6)), "units", threads=2, show=False):
                yielded.append(result)
    finally:
        stopping.reset()
    assert yielded == [0, 1]
    assert [r for r, _ in metered_map(unit, [5], "units", show=False)] == [5]  # reset: the next command runs


@pytest.mark.parametrize("threads", [1, 2])
def test_a_map_inside_a_unit_finishes_on_a_stop_as_its_unit_does(threads):
    """The questions of a row, the samples of a prompt: a Ctrl-C asked mid-row lets the row's own map run whole,
    so the row is saved complete; the outer map then starts no new row."""
    from bineval_dspy.lm import stopping

    def part(item: tuple[int, int]) -> int:
        row, k = item
        if row == 0 and k == 0:
            assert stopping.request_stop() == 0
        return k

    def row(n: int) -> list[int]:
        return [k for k, _ in metered_map(part, [(n, k) for k in range(4)], "parts", threads=threads, show=False)]

    yielded = []
    try:
        with pytest.raises(KeyboardInterrupt):
            for result, _ in metered_map(row, list(range(3)), "rows", show=False):
                yielded.append(result)
    finally:
        stopping.reset()
    assert yielded == [[0, 1, 2, 3]]


def test_the_units_keep_no_dspy_history():
    """Over a long run DSPy's history would hold every prompt and reply (``metered_map``'s docstring)."""
    lm = scripted_lm(lambda r: '{"answer": "ok"}')
    predict = dspy.Predict("question -> answer")

    def unit(n: int) -> None:
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            predict(question=f"q{n}")

    list(metered_map(unit, list(range(3)), "units", threads=2, show=False))
    assert len(lm.engine.requests) == 3 and lm.history == []
