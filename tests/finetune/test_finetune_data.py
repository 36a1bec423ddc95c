"""Training data from checklist verdicts: which samples become SFT examples and DPO pairs, and the resumable,
fail-closed sample file. The student is scripted (our own logic under test); the checks are the real verifiers."""

from __future__ import annotations

import json

import dspy
import pytest

from bineval_dspy.checklists.hybrid import hybrid_checklist
from bineval_dspy.core.errors import InputError, RunError
from bineval_dspy.finetune.data import SAMPLES_FILE, PromptSamples, Sample, collect, preference_pairs, sft_examples
from bineval_dspy.finetune.settings import FinetuneSettings
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.optimize.metric import bineval_metric
from bineval_dspy.suites.rows import SuiteRow

LOWER = {"instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]}


def _example(key: str) -> dspy.Example:
    return SuiteRow(key=key, prompt=f"Describe item {key} in lowercase.", **LOWER).to_example()


def _metric():
    return bineval_metric(BinaryJudge(), lambda ex: hybrid_checklist(SuiteRow.from_example(ex), n_llm_questions=(0, 0)))


class Scripted(dspy.Module):
    """Replies by rollout: greedy (no rollout) and each rollout id from a table; a reply may be an exception."""

    def __init__(self, replies: dict[int | None, str | Exception]) -> None:
        super().__init__()
        self.replies = replies
        self.calls = 0

    def forward(self, prompt: str, config: dict | None = None) -> dspy.Prediction:
        self.calls += 1
        reply = self.replies[(config or {}).get("rollout_id")]
        if isinstance(reply, Exception):
            raise reply
        return dspy.Prediction(response=reply)


def _sample(rollout, response, score, passed):
    return Sample(rollout=rollout, response=response, score=score, passed=passed, failed=[] if passed else ["q"])


def test_sft_keeps_passing_samples_only_distinct_and_at_most_keep_per_prompt():
    record = PromptSamples(key="k", prompt="p", samples=[
        _sample(None, "good", 1.0, True), _sample(0, "good", 1.0, True), _sample(1, "also good", 1.0, True),
        _sample(2, "third", 1.0, True), _sample(3, "bad", 0.0, False), _sample(4, "  ", 1.0, True),
    ])
    kept = sft_examples([record], FinetuneSettings(keep_per_prompt=2))
    assert [ex.response for ex in kept] == ["good", "also good"]


def test_dpo_pairs_passing_with_failing_at_a_margin():
    record = PromptSamples(key="k", prompt="p", samples=[
        _sample(None, "best", 1.0, True), _sample(0, "close", 0.9, False), _sample(1, "worst", 0.0, False),
        _sample(2, "fine", 1.0, True),
    ])
    pairs = preference_pairs([record], FinetuneSettings(margin=0.25, keep_per_prompt=2))
    assert [(p.chosen, p.rejected) for p in pairs] == [("best", "worst")]  # "fine" vs "close": 0.1 apart, no pair
    assert pairs[0].rejected_failed == ["q"] and pairs[0].chosen_score - pairs[0].rejected_score == 1.0
    only_failing = PromptSamples(key="f", prompt="p", samples=[_sample(0, "a", 0.5, False), _sample(1, "b", 0.0, False)])
    assert preference_pairs([only_failing], FinetuneSettings(margin=0.0)) == []  # a pair needs a passing sample


def test_samples_are_scored_by_the_verifiers_and_resume(tmp_path):
    metric, examples = _metric(), [_example("a"), _example("b")]
    student = Scripted({None: "all lowercase here", 0: "Has Capitals", 1: "fine and lower"})
    settings = FinetuneSettings(samples=2)
    records = collect(student, metric, examples, settings, tmp_path, {"run": "1"})
    assert [[(s.rollout, s.passed) for s in r.samples] for r in records] == [[(None, True), (0, False), (1, True)]] * 2
    assert records[0].samples[1].failed and records[0].samples[1].score == 0.0
    calls = student.calls
    again = collect(student, metric, examples, settings, tmp_path, {"run": "1"})
    assert student.calls == calls and again == records  # resumed from samples.jsonl: nothing sampled twice
    with pytest.raises(InputError, match="other settings") as refused:
        collect(student, metric, examples, settings, tmp_path, {"run": "2"})
    assert f"; remove {tmp_path} or use a new run_dir" in str(refused.value)  # finetune and experiment have no `overwrite`
    assert "overwrite" not in str(refused.value)
    lines = (tmp_path / SAMPLES_FILE).read_text().splitlines()
    (tmp_path / SAMPLES_FILE).write_text(lines[0] + '\n{"key": "b"}\n')  # a damaged row: one located line, no traceback
    with pytest.raises(InputError, match=rf"{SAMPLES_FILE}:2: required fields missing: 'prompt', 'samples'; remove .+ or use a new run_dir$"):
        collect(student, metric, examples, settings, tmp_path, {"run": "1"})


def test_a_failed_sample_stops_the_run_and_its_prompt_is_not_written(tmp_path):
    metric = _metric()
    student = Scripted({None: "this reply is written in plain english words", 0: RuntimeError("server down")})
    with pytest.raises(RunError, match="could not be sampled"):
        collect(student, metric, [_example("a")], FinetuneSettings(samples=1), tmp_path, {})
    assert (tmp_path / SAMPLES_FILE).read_text() == ""  # nothing half-known is kept: a rerun retries the prompt
    student.replies[0] = "this reply is also written in plain english words"
    records = collect(student, metric, [_example("a")], FinetuneSettings(samples=1), tmp_path, {})
    assert [s.passed for s in records[0].samples] == [True, True]
    assert [json.loads(line)["key"] for line in (tmp_path / SAMPLES_FILE).read_text().splitlines()] == ["a"]


def test_reference_verdicts_balance_keeps_as_many_of_each_answer_and_refuse_a_missing_one():
    from bineval_dspy.finetune.data import reference_verdicts

    examples = [dspy.Example(question_id=f"q{i}", reference=r) for i, r in enumerate(["yes", "yes", "no", "yes", "no", "yes"])]
    assert [a for _, a in reference_verdicts(examples, balance=False)] == ["yes", "yes", "no", "yes", "no", "yes"]
    balanced = reference_verdicts(examples, balance=True)
    assert [ex.question_id for ex, _ in balanced] == ["q0", "q1", "q2", "q4"]  # in order: the first two of each
    assert reference_verdicts([examples[0]], balance=True) == []  # no "no" at all: nothing balanced to learn
    with pytest.raises(InputError, match="field 'reference'"):
        reference_verdicts([dspy.Example(question_id="q", reference="maybe")], balance=False)
