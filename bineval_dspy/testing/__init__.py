"""Test DSPy programs offline: scripted LMs, and LMs that record a run into a cassette and replay it.

Record once (from a script, as here, or from a real ``dspy.LM``), then replay without any LM::

    import dspy
    from bineval_dspy.testing import recording_lm, replay_lm, scripted_lm

    dspy.configure(adapter=dspy.JSONAdapter())
    with dspy.context(lm=recording_lm(scripted_lm(lambda request: '{"answer": "4"}'), "qa.jsonl")):
        dspy.Predict("question -> answer")(question="2 + 2?")  # the script answers; recorded into qa.jsonl
    with dspy.context(lm=replay_lm("qa.jsonl")):
        assert dspy.Predict("question -> answer")(question="2 + 2?").answer == "4"  # no LM; a new question raises

Commit the cassette next to the test; record it again when the program's prompts change.
"""

from bineval_dspy.testing.assertions import BinevalAssertionError, assert_passes
from bineval_dspy.testing.replay import (
    CassetteEntry,
    CassetteMiss,
    CompletionEngine,
    RecordedRequest,
    RecordedResponse,
    RecordingEngine,
    ReplayEngine,
    load_cassette,
    recording_lm,
    replay_lm,
    save_cassette,
)
from bineval_dspy.testing.scripted import Script, ScriptedEngine, prompt_fields, question_of, scripted_lm, verdict_json

__all__ = [
    "BinevalAssertionError",
    "CassetteEntry",
    "CassetteMiss",
    "CompletionEngine",
    "RecordedRequest",
    "RecordedResponse",
    "RecordingEngine",
    "ReplayEngine",
    "Script",
    "ScriptedEngine",
    "assert_passes",
    "load_cassette",
    "prompt_fields",
    "question_of",
    "recording_lm",
    "replay_lm",
    "save_cassette",
    "scripted_lm",
    "verdict_json",
]
