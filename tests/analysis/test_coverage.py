"""Coverage and Uniqueness (Qworld) of generated checklists against a gold one: embeddings and an LLM judge."""

from __future__ import annotations

import json
import math

import dspy
import numpy as np
import pytest
from dspy.lm15 import Request

from bineval_dspy.analysis.coverage import LLMMatcher, coverage, embedding_matcher
from bineval_dspy.core.schema import Checklist, Question
from tests.conftest import scripted_lm
from tests.meta.fixtures import field_of


def checklist(*texts: str) -> Checklist:
    return Checklist(task="Summarize.", dimensions=["d"], questions=[Question(id=f"q{k}", text=t, dimension="d") for k, t in enumerate(texts)])


def axis(k: int, scale: float = 1.0) -> np.ndarray:
    v = np.zeros(10)
    v[k] = scale
    return v


# Gold questions G0..G3 lie on axes 0..3; each generated one at a known cosine to them.
VECTORS = {
    "G0": axis(0),
    "G1": axis(1),
    "G2": axis(2),
    "G3": axis(3),
    "A": 0.9 * axis(0) + math.sqrt(1 - 0.81) * axis(4),  # cos 0.9 to G0
    "B": 3.0 * (0.75 * axis(1) + math.sqrt(1 - 0.5625) * axis(5)),  # cos 0.75 to G1 (not unit length)
    "C": axis(6),  # like no gold question
    "D": 0.8 * axis(0) + 0.6 * axis(7),  # cos 0.8 to G0
}
GOLD = checklist("G0", "G1", "G2", "G3")
GENERATED = checklist("A", "B", "C", "D")


def fake_embed(texts: list[str]) -> np.ndarray:
    return np.array([VECTORS[t] for t in texts])


@pytest.mark.parametrize(
    ("threshold", "covered", "unique"),
    [
        (0.7, 2 / 4, 1 / 4),  # A, D -> G0; B -> G1; C alone; G2, G3 missed
        (0.85, 1 / 4, 3 / 4),  # only A -> G0
        (0.05, 2 / 4, 1 / 4),  # orthogonal vectors (cos 0) still do not match
    ],
)
def test_coverage_and_uniqueness_by_embedding_against_hand_counts(threshold, covered, unique):
    result = coverage(GENERATED, GOLD, embedding_matcher(fake_embed, threshold), name="gen")
    assert result.coverage == pytest.approx(covered)
    assert result.uniqueness == pytest.approx(unique)
    assert (result.questions, result.gold_questions, result.unanswered) == (4, 4, 0)


def test_the_matches_missed_and_unique_questions_are_listed_with_similarities():
    result = coverage(GENERATED, GOLD, embedding_matcher(fake_embed, 0.7))
    assert {(m.generated, m.gold): m.similarity for m in result.matches} == pytest.approx({("q0", "q0"): 0.9, ("q1", "q1"): 0.75, ("q3", "q0"): 0.8})
    assert result.missed == ["q2", "q3"]
    assert result.unique == ["q2"]
    ci = result.coverage_interval  # half the gold questions covered: resampling them moves the share both ways
    assert ci is not None and ci.estimate == 0.5 and ci.low is not None and ci.high is not None and ci.low < 0.5 < ci.high


def test_a_checklist_covers_itself_fully_and_adds_nothing():
    result = coverage(GOLD, GOLD, embedding_matcher(fake_embed))
    assert (result.coverage, result.uniqueness) == (1.0, 0.0)
    assert result.coverage_interval is not None and (result.coverage_interval.low, result.coverage_interval.high) == (1.0, 1.0)


def test_a_bad_threshold_is_refused():
    with pytest.raises(ValueError):
        embedding_matcher(fake_embed, 1.5)


SAME = {("A", "G0"), ("D", "G0"), ("B", "G1")}


def llm_script(request: Request) -> str:
    a, b = field_of(request, "question_a"), field_of(request, "question_b")
    if a == "C" and b == "G3":
        return "no idea"  # unparseable: the pair stays unanswered, never a match
    return json.dumps({"same": (a, b) in SAME})


def test_llm_matching_asks_once_per_pair_and_counts_unparseable_answers():
    lm = scripted_lm(llm_script)
    with dspy.context(lm=lm):
        result = coverage(GENERATED, GOLD, LLMMatcher(), name="gen")
    assert len(lm.engine.requests) == 16
    assert (result.coverage, result.uniqueness) == (2 / 4, 1 / 4)
    assert result.unanswered == 1
    assert {(m.generated, m.gold) for m in result.matches} == {("q0", "q0"), ("q3", "q0"), ("q1", "q1")}
    assert all(m.similarity is None for m in result.matches)


def test_llm_matching_in_threads_gives_the_same_answers():
    with dspy.context(lm=scripted_lm(llm_script)):
        one = coverage(GENERATED, GOLD, LLMMatcher())
        four = coverage(GENERATED, GOLD, LLMMatcher(threads=4))
    assert one == four
