"""Record/replay LMs: a recorded run replays identically, new requests fail loudly, cassettes and keys are stable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

import dspy
import pytest
from dspy.lm15 import Config, Message, Request, Response, TokenLogprob, TopLogprob, Usage
from dspy.utils.exceptions import LMError

from bineval_dspy.testing import (
    CassetteEntry,
    CassetteMiss,
    RecordedRequest,
    ReplayEngine,
    load_cassette,
    recording_lm,
    replay_lm,
    save_cassette,
    scripted_lm,
)


class Grade(dspy.Signature):
    """Grade the answer to the question."""

    question: str = dspy.InputField()
    answer: str = dspy.InputField()
    verdict: Literal["pass", "fail"] = dspy.OutputField()
    reason: str = dspy.OutputField()


QUESTIONS = [("2 + 2?", "4"), ("Capital of France?", "Lyon"), ("Largest planet?", "Jupiter")]


def grader(request: Request) -> str:
    """Passes an answer unless it is Lyon."""
    wrong = "Lyon" in request.messages[-1].text
    return json.dumps({"verdict": "fail" if wrong else "pass", "reason": "checked"})


def grade_all(lm: dspy.LM) -> list[dict]:
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        return [dict(dspy.Predict(Grade)(question=q, answer=a)) for q, a in QUESTIONS]


def request(system: str | None = "You grade answers.", **config) -> Request:
    return Request(model="custom/scripted", system=system, messages=(Message.user("2 + 2?"),), config=Config(**config))


def miss_of(error: pytest.ExceptionInfo) -> CassetteMiss:
    """DSPy wraps an engine's exception in an LMError; the miss is its cause."""
    assert isinstance(error.value.__cause__, CassetteMiss)
    return error.value.__cause__


@pytest.fixture
def cassette(tmp_path: Path) -> Path:
    path = tmp_path / "grade.jsonl"
    grade_all(recording_lm(scripted_lm(grader), path))
    return path


def test_a_recorded_run_replays_with_identical_predictions(tmp_path):
    path = tmp_path / "grade.jsonl"
    live_lm = scripted_lm(grader)
    live = grade_all(recording_lm(live_lm, path))
    assert [p["verdict"] for p in live] == ["pass", "fail", "pass"]
    assert len(live_lm.engine.requests) == 3

    replayed = grade_all(replay_lm(path))
    assert replayed == live
    assert len(live_lm.engine.requests) == 3  # the script was not asked again
    # the replay engine declares the schema support seen while recording, so JSONAdapter built the same requests
    entries = load_cassette(path).values()
    assert {e.request.config.response_format["type"] for e in entries} == {"json_schema"}


def test_a_request_not_recorded_raises_naming_its_key_and_prompt(cassette):
    with pytest.raises(LMError) as error, dspy.context(lm=replay_lm(cassette), adapter=dspy.JSONAdapter()):
        dspy.Predict(Grade)(question="Smallest prime?", answer="2")
    miss = miss_of(error)
    assert miss.key == miss.request.key() and miss.key not in load_cassette(cassette)
    message = str(miss)
    assert f"request {miss.key} is not in the cassette" in message
    assert "system: Your input fields are:" in message and "Smallest prime?" in message


def test_a_miss_names_the_settings_that_differ_from_a_recorded_prompt(cassette):
    with (
        pytest.raises(LMError) as error,
        dspy.context(lm=replay_lm(cassette, temperature=0.7), adapter=dspy.JSONAdapter()),
    ):
        dspy.Predict(Grade)(question="2 + 2?", answer="4")
    assert "other settings (temperature: None -> 0.7)" in str(miss_of(error))


def test_a_fallback_script_answers_what_the_cassette_does_not(cassette):
    lm = replay_lm(cassette, fallback=lambda request: json.dumps({"verdict": "fail", "reason": "new"}))
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        new = dspy.Predict(Grade)(question="Smallest prime?", answer="2")
        recorded = dspy.Predict(Grade)(question="2 + 2?", answer="4")
    assert (new.reason, recorded.reason) == ("new", "checked")
    assert len(lm.engine.fallback.requests) == 1
    assert len(load_cassette(cassette)) == 3  # replaying never writes


def test_repeated_requests_are_answered_in_recorded_order_then_raise(tmp_path):
    path = tmp_path / "samples.jsonl"
    samples = iter(["first", "second"])
    recorder = recording_lm(scripted_lm(lambda request: next(samples)), path)
    assert [recorder(request()).text for _ in range(2)] == ["first", "second"]
    (entry,) = load_cassette(path).values()  # one request, two answers
    assert [r.text for r in entry.responses] == ["first", "second"]

    replayer = replay_lm(path)
    assert [replayer(request()).text for _ in range(2)] == ["first", "second"]
    with pytest.raises(LMError) as error:
        replayer(request())
    assert "was recorded 2 time(s) and is now asked once more" in str(miss_of(error))


class LogprobEngine:
    """Answers 'yes' with first-token logprobs, like the llama engine does when asked."""

    def complete(self, request: Request) -> Response:
        top = (TopLogprob(token="yes", logprob=-0.1), TopLogprob(token="no", logprob=-2.4))
        return Response(
            id="lp1",
            model=request.model,
            message=Message.assistant("yes"),
            finish_reason="length",
            usage=Usage(input_tokens=12, output_tokens=1),
            logprobs=(TokenLogprob(token="yes", logprob=-0.1, top=top),),
        )


def test_logprobs_usage_and_finish_reason_replay(tmp_path):
    path = tmp_path / "logprobs.jsonl"
    ask = Request(model="local/judge", messages=(Message.user("Is it?"),), config=Config(max_tokens=1, logprobs=2))
    live = recording_lm(LogprobEngine(), path, model="local/judge")(ask)
    replayed = replay_lm(path)(ask)
    assert replayed.logprobs == live.logprobs
    assert (replayed.text, replayed.finish_reason, replayed.usage) == ("yes", "length", live.usage)


def test_recording_a_provider_lm_keeps_its_generation_settings_not_its_connection(tmp_path):
    provider = dspy.LM("openai/gpt-4o-mini", api_key="sk-test", api_base="http://127.0.0.1:9", temperature=0.3)
    recorder = recording_lm(provider, tmp_path / "provider.jsonl")  # nothing is called here
    assert recorder.model == "openai/gpt-4o-mini"
    assert recorder.kwargs["temperature"] == 0.3 and "api_key" not in recorder.kwargs


def test_the_cassette_round_trips_sorted_by_key(cassette, tmp_path):
    entries = load_cassette(cassette)
    lines = cassette.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["key"] for line in lines] == sorted(entries)
    copy = tmp_path / "copy.jsonl"
    save_cassette(copy, reversed(list(entries.values())))
    assert copy.read_bytes() == cassette.read_bytes()
    assert load_cassette(copy) == entries


def test_an_entry_whose_request_was_edited_is_refused(cassette):
    line = json.loads(cassette.read_text(encoding="utf-8").splitlines()[0])
    line["request"]["system"] = "Edited."
    with pytest.raises(ValueError, match="does not match its request"):
        CassetteEntry.model_validate(line)


def test_keys_are_stable_across_processes():
    code = (
        "from dspy.lm15 import Config, Message, Request\n"
        "from bineval_dspy.testing import RecordedRequest\n"
        "r = Request(model='custom/scripted', system='You grade answers.', messages=(Message.user('2 + 2?'),),"
        " config=Config())\n"
        "print(RecordedRequest.of(r).key())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    other = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    key = RecordedRequest.of(request()).key()
    assert other.stdout.strip() == key
    assert key == "a4554056322fb6b2"  # a new value here means every recorded cassette goes stale


@pytest.mark.parametrize(
    "changed",
    [
        request(temperature=0.7),
        request(system="You grade answers strictly."),
        request(system=None),
        request(max_tokens=5),
        request(seed=1),
        request(logprobs=3),
        request(response_format={"type": "json_object"}),
    ],
)
def test_keys_differ_when_an_answer_changing_field_differs(changed):
    assert RecordedRequest.of(changed).key() != RecordedRequest.of(request()).key()


def test_settings_that_do_not_change_the_answer_keep_the_key():
    assert RecordedRequest.of(request(user_id="someone")).key() == RecordedRequest.of(request()).key()


def test_a_missing_cassette_fails_at_construction(tmp_path):
    with pytest.raises(FileNotFoundError):
        ReplayEngine(tmp_path / "missing.jsonl")
