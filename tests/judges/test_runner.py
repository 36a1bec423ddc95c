"""The judging runner's own logic: rows drawn from the stream only as they start, results in input order, typed
rows that round-trip, a summary summed row by row, and a judge rebuilt from its spec. No LM is involved."""

from __future__ import annotations

import json
import threading
import time

from bineval_dspy.core.schema import Checklist, JudgeSpec, Question, Scorecard, Verdict
from bineval_dspy.core.scoring import score
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.rows import JUDGE_KEY, JudgedSummary, JudgeResult, judge_result
from bineval_dspy.lm.budget import metered_map
from bineval_dspy.lm.usage import Cost

CHECKLIST = Checklist(
    task="t", dimensions=["a", "b"],
    questions=[Question(id="a1", text="A?", dimension="a"), Question(id="b1", text="B?", dimension="b"), Question(id="b2", text="Flaw?", dimension="b", weight=-1)],
)


def card(*answers: str) -> Scorecard:
    verdicts = [Verdict(question_id=q.id, answer=a, judge="m") for q, a in zip(CHECKLIST.questions, answers)]  # type: ignore[arg-type]
    return score(CHECKLIST, verdicts)


def test_the_parallel_map_draws_rows_only_as_they_start_and_keeps_input_order():
    drawn = 0

    def stream():
        nonlocal drawn
        for i in range(200):
            drawn += 1
            yield i

    def slow_first(i: int) -> tuple[int, int]:
        time.sleep(0.02 if i % 7 == 0 else 0)  # some rows finish after later ones
        return i, i * i

    seen = []
    for consumed, ((item, result), cost) in enumerate(metered_map(slow_first, stream(), "t", total=200, threads=8), start=1):
        assert drawn - consumed <= 8  # never more than the rows in flight held beyond what was handed on
        assert isinstance(cost, Cost)
        seen.append((item, result))
    assert seen == [(i, i * i) for i in range(200)]


def test_the_parallel_map_runs_rows_together():
    running = most = 0
    lock = threading.Lock()

    def hold(i: int) -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)
        with lock:
            running -= 1

    list(metered_map(hold, iter(range(24)), "t", total=24, threads=6))
    assert most == 6


def test_judge_result_round_trips_and_leaves_unset_fields_out():
    result = judge_result(3, "summary", CHECKLIST, card("yes", "no", "no"), Cost(lm_calls=3))
    row = json.loads(json.dumps(result.row({"input": "x", "output": "summary", "id": 9})))
    assert list(row) == ["input", "output", "id", JUDGE_KEY]
    assert "empty_output" not in row[JUDGE_KEY] and "lineage_scores" not in row[JUDGE_KEY]
    assert JudgeResult.model_validate(row[JUDGE_KEY]) == result
    empty = judge_result(4, "  ", CHECKLIST, card("yes", "yes", "no"), Cost())
    assert empty.row({})[JUDGE_KEY]["empty_output"] is True


def test_summary_sums_rows_one_at_a_time():
    summary = JudgedSummary(CHECKLIST, unread_mark="[unread]")
    cards = [card("yes", "yes", "no"), card("no", "no", "yes"), card("unanswered", "yes", "no"), card("no", "yes", "yes")]
    for line, c in enumerate(cards, start=1):
        summary.add(judge_result(line, "o", CHECKLIST, c, Cost()))
    assert (summary.rows, summary.incomplete, summary.unanswered) == (4, 1, 1)
    assert summary.mean("a") == sum(c.dimension_scores["a"] for c in cards if c.dimension_scores.get("a") is not None) / 3
    assert summary.worst == [("line 2", 3), ("line 4", 2)]  # most failed first; a row that failed nothing is not listed
    assert [(q.id, n) for q, n in summary.most_failed_questions()] == [("a1", 2), ("b2", 2), ("b1", 1)]


def test_from_spec_rebuilds_the_judge_its_spec_describes():
    judge = BinaryJudge(chain_of_thought=True, samples=3, sample_temperature=0.9, verifier_mode="loose", partial=True, explanations="failures")
    assert BinaryJudge.from_spec(judge.spec()).spec() == judge.spec()
    calibrated = BinaryJudge(probability=True, calibration="content_free", thresholds={"a": 0.4})
    assert BinaryJudge.from_spec(calibrated.spec()).spec() == calibrated.spec()
    assert BinaryJudge.from_spec(JudgeSpec(model="m"), threads=5).threads == 5
