"""The note-taker's real behaviour, recorded once from the embedded SmolLM2 and replayed offline: its drafted
lessons are screened, and a draft that names no constraint gives way to the verifier's rule.

Record again (needs the embedded model, ~1 minute): ``BINEVAL_RECORD=1 pytest tests/optimize/test_notes_replay.py``.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import dspy
import numpy as np
import pytest
from dspy.lm15 import Request

from bineval_dspy.checklists.hybrid import hybrid_checklist
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.optimize.lessons import LessonBank
from bineval_dspy.optimize.metric import bineval_metric
from bineval_dspy.optimize.notes import lesson_problem
from bineval_dspy.optimize.optimizer import BinEvalOptimizer
from bineval_dspy.programs.generator import Generator
from bineval_dspy.suites.rows import SuiteRow
from bineval_dspy.testing import recording_lm, replay_lm, scripted_lm
from bineval_dspy.verifiers import describe
from tests.conftest import prompt_fields

CASSETTE = Path(__file__).parent / "cassettes" / "smollm2_notes.jsonl"
START = "Respond to the user's request."

# IFEval-style prompts with one constraint each, and a response that breaks it (what a 135M generator writes)
CASES = [
    ("c1", "Write a riddle about the moon. Your entire response should be in English, and in all lowercase letters.",
     "change_case:english_lowercase", {}, "The Moon is round. What Is it? It is the Moon."),
    ("c2", "Write a short blog post about a trip to Japan using less than 30 words.",
     "length_constraints:number_words", {"relation": "less than", "num_words": 30},
     "Japan is a beautiful country with many temples, mountains and cities. " * 4),
    ("c3", "Write a riddle for kids about auspices but make sure you don't use any commas.",
     "punctuation:no_comma", {}, "What flies high, sings, and tells the future? A bird, of course."),
    ("c4", "List three fruits. Your answer must contain exactly 3 bullet points in markdown format.",
     "detectable_format:number_bullet_lists", {"num_bullets": 3}, "Apples, pears and plums are fruits."),
    ("c5", "Write a poem about the sea. Finish your response with this exact phrase: Is there anything else I can help with?",
     "startend:end_checker", {"end_phrase": "Is there anything else I can help with?"}, "The sea is blue and deep.\nWaves roll in."),
]
BAD = {prompt: response for _, prompt, _, _, response in CASES}


def examples() -> list[dspy.Example]:
    return [
        SuiteRow(key=key, prompt=prompt, instruction_id_list=[iid], kwargs=[kwargs]).to_example()
        for key, prompt, iid, kwargs, _ in CASES
    ]


def checklist_for(example: dspy.Example):
    return hybrid_checklist(SuiteRow.from_example(example), n_llm_questions=(0, 0))


def generator_and_updater(request: Request) -> str:
    """The generator repeats its bad responses; the updater (not under test here) appends the lesson."""
    user = request.messages[-1].text
    if "lesson" in prompt_fields(request):
        return '{"edit": {"target": "", "rewrite": ""}}'
    return BAD[user.strip()]


def hashed_words(texts: list[str]) -> np.ndarray:
    """A stable bag-of-words embedding (no model): near-duplicate merging is not under test here."""
    vectors = np.zeros((len(texts), 512))
    for row, text in enumerate(texts):
        for word in text.lower().split():
            vectors[row, zlib.crc32(word.encode()) % 512] += 1
    return vectors


def note_lm() -> dspy.LM:
    if os.environ.get("BINEVAL_RECORD"):
        from bineval_dspy.lm.specs import make_lm

        return recording_lm(make_lm("smollm2"), CASSETTE)
    if not CASSETTE.exists():
        pytest.skip(f"{CASSETTE} not recorded")
    return replay_lm(CASSETTE, temperature=0.0, max_tokens=256)  # the settings make_lm records with


def test_the_embedded_note_takers_drafts_are_screened_and_rules_fill_in():
    dspy.configure(lm=scripted_lm(generator_and_updater))
    optimizer = BinEvalOptimizer(
        bineval_metric(BinaryJudge(), checklist_for), bank=LessonBank(embed=hashed_words),
        max_iterations=1, lessons_per_iteration=5,
        min_rule_share=0,  # each row has its own constraint: by default none would reach the note-taker
    )
    optimizer.note_taker.set_lm(note_lm())
    optimizer.compile(Generator(START), trainset=examples(), valset=examples()[:1])
    record = optimizer.audit.iterations[0]
    assert record.failures is not None and len(record.failures) == len(CASES)
    discarded = {d.failure_id: d for d in record.lessons_discarded or []}
    lessons = record.lessons_new or []
    for failure in record.failures:
        # the verifier's rule and its concrete diagnosis reach the note-taker
        key, prompt, iid, kwargs, _ = next(c for c in CASES if c[0] == failure.example_id)
        assert failure.rule == describe(iid, kwargs, prompt=prompt)
        assert "found" in failure.explanation or "ends with" in failure.explanation
        mine = [lesson for lesson in lessons if failure.id in lesson.sources]
        if failure.id in discarded:
            assert lesson_problem(discarded[failure.id].text, failure) == discarded[failure.id].reason
            assert [(x.origin, x.text) for x in mine] == [("rule", failure.rule)]  # the rule took the draft's place
        else:
            assert [x.origin for x in mine] == ["lm"] and lesson_problem(mine[0].text, failure) is None
    # what the recorded 135M note-taker actually did: it copied the response or wrote about the task instead of the
    # constraint in 4 of 5 drafts, and each of those gave way to the verifier's rule
    assert len(discarded) == 4 and record.rule_lessons == 4
    assert {d.reason for d in discarded.values()} == {"names no constraint of the failed check", "restates the response"}
