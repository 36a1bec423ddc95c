"""Scripted LMs read a request's input fields as DSPy's adapters laid them out."""

from __future__ import annotations

import json

import dspy
import pytest

from bineval_dspy.testing import prompt_fields, scripted_lm


@pytest.mark.parametrize("adapter", [dspy.ChatAdapter(), dspy.JSONAdapter()], ids=["chat", "json"])
def test_prompt_fields_reads_back_every_input_the_adapter_wrote(adapter):
    lm = scripted_lm(lambda request: json.dumps({"answer": "4"}))
    inputs = {"question": "What is 2 + 2?", "context": "Line one.\n\nLine three, after a blank line."}
    with dspy.context(lm=lm, adapter=adapter):
        assert dspy.Predict("question, context -> answer")(**inputs).answer == "4"
    request = lm.engine.requests[0]  # the chat adapter falls back to JSON on a JSON reply: a second request
    assert prompt_fields(request) == inputs  # the output requirements after the last field are left out
