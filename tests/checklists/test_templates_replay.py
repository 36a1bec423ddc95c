"""The published template writers on the embedded SmolLM2, replayed from a cassette (recorded with
``BINEVAL_RECORD=1``): each runs through the JSON grammar, and what the small model wrote passes the schema."""

from __future__ import annotations

import os
import re
from pathlib import Path

import dspy
import pytest

from bineval_dspy.checklists.bineval import QuestionText
from bineval_dspy.checklists.writers import make_writer
from bineval_dspy.core.errors import RunError
from bineval_dspy.testing import recording_lm, replay_lm
from tests.conftest import bag_of_words

CASSETTE = Path(__file__).parent / "cassettes" / "smollm2_templates.jsonl"
TASK = "Write a short product description for a stainless steel water bottle that keeps drinks cold for 24 hours."
PARAMS = {
    "checkeval": {"definitions": {"content": "the description states the product facts the task gives"}},
    "rocketeval": {"reference": "A stainless steel bottle that keeps water cold for a full day, with a leak-proof lid."},
    "rlcf": {},
    "rlcf-contrastive": {"candidates": ["This bottle is great. Buy it.", "Our steel bottle keeps drinks ice cold for 24 hours."]},
    "feedback": {"observations": ["It never says how long drinks stay cold.", "No material named.", "Good: names the lid."], "embed": bag_of_words},
}
CALLS = {"checkeval": 3, "rocketeval": 1, "rlcf": 1, "rlcf-contrastive": 1, "feedback": 1}  # one dimension each
PATTERN = re.compile(QuestionText.__metadata__[0].pattern)  # type: ignore[attr-defined]


def template_lm() -> dspy.LM:
    if os.environ.get("BINEVAL_RECORD"):
        from bineval_dspy.lm.specs import make_lm

        return recording_lm(make_lm("smollm2"), CASSETTE)
    return replay_lm(CASSETTE, temperature=0.0, max_tokens=256)  # the settings make_lm records with


@pytest.fixture(scope="module")
def lm() -> dspy.LM:
    return template_lm()


@pytest.mark.parametrize("method", list(PARAMS))
def test_each_published_method_on_the_embedded_lm(lm, method):
    before = len(lm.history)
    with dspy.context(lm=lm):
        try:
            checklist = make_writer(method, code_checks=False, **PARAMS[method])(task=TASK, dimensions=["content"])
        except RunError as exc:  # the small model wrote nothing the schema accepts: said in one line, never made up
            assert f"{method}: the LM gave no usable questions" in str(exc)
            return
    assert len(lm.history) - before == CALLS[method]
    assert checklist.questions and all(PATTERN.match(q.text) for q in checklist.questions)  # the grammar held
    assert all(q.lineage["method"] == method and q.dimension == "content" for q in checklist.questions)
    if method.startswith("rlcf"):
        assert all(1 <= q.weight <= 100 for q in checklist.questions)
