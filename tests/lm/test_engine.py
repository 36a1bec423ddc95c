"""What an engine can do is read through one protocol (`lm.engine`), not probed attribute by attribute (issue 34)."""

from __future__ import annotations

from contextlib import nullcontext

import dspy

from bineval_dspy.judges.runner import parallelism
from bineval_dspy.lm.engine import Engine, EngineBase, engine_of
from bineval_dspy.lm.llama_engine import LlamaCppEngine
from bineval_dspy.lm.remote import RemoteEngine
from bineval_dspy.lm.specs import is_local


class Capped(EngineBase):
    def __init__(self) -> None:
        self.cap: int | None = None

    def limit_in_flight(self, most: int | None) -> bool:
        self.cap = most
        return True

    def complete(self, request: object) -> object:
        raise AssertionError("not called")


def test_our_engines_are_engines_and_the_rest_get_defaults_or_what_they_declare():
    assert issubclass(LlamaCppEngine, EngineBase) and issubclass(RemoteEngine, EngineBase)
    assert isinstance(Capped(), Engine)
    provider = dspy.LM("openai/gpt-4o-mini")
    assert engine_of(provider).in_process is False and engine_of(provider).parallel_sequences == 1
    partial = dspy.LM("local/x", engine=type("E", (), {"in_process": True, "complete": lambda self, r: None})())
    assert is_local(partial) and engine_of(partial).supports_prefill is False
    assert isinstance(engine_of(partial).expect(3), nullcontext)


def test_an_engine_that_caps_requests_sets_the_rows_in_flight():
    engine = Capped()
    plan = parallelism(dspy.LM("openai/m", engine=engine), 4, concurrency=16)
    assert engine.cap == 16 and plan.rows == 2 * 4 and plan.questions == 4
    uncapped = parallelism(dspy.LM("openai/m"), 4, concurrency=16)
    assert uncapped.rows == 4  # no engine holds the cap: never more than 16 open
