"""Lessons: note-taking and prompt edits with scripted LMs; the lesson bank with a fake and the real embedder."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable

import dspy
import numpy as np
import pytest
from dspy.lm15 import Request

from bineval_dspy.core.embeddings import minilm_embedder
from bineval_dspy.optimize.edits import Edit, PromptUpdater
from bineval_dspy.optimize.lessons import DEFAULT_THRESHOLD, Failure, Lesson, LessonBank, lesson_id
from bineval_dspy.optimize.notes import NoteTaker, NoteTakingError
from tests.conftest import ScriptedEngine, prompt_fields

FAILURE = Failure(
    id="ex1:q-bullets",
    example_id="ex1",
    question="Does the response contain exactly 3 bullet points?",
    dimension="format",
    input="List three fruits as bullet points.",
    output="- apple\n- pear\n- plum\n- fig",
    explanation="The response has 4 bullet points, not 3.",
    got="no",
)
DISAGREEMENT = FAILURE.model_copy(
    update={"id": "ex1:q-tone", "got": "no", "expected": "yes", "explanation": "Too casual."}
)
LESSON = Lesson(text="Use exactly the number of bullet points the user asks for.", sources=["ex1:q"])


def scripted(reply: str | Callable[[Request], str]) -> tuple[dspy.LM, ScriptedEngine]:
    engine = ScriptedEngine(reply if callable(reply) else lambda request: reply)
    return dspy.LM("custom/scripted", engine=engine, cache=False, num_retries=0), engine


def block(request: Request, field: str) -> str:
    """The value of one input field in the user message."""
    return prompt_fields(request)[field]


def lesson_reply(text: str) -> str:
    return json.dumps({"lesson": {"text": text}})


def edit_reply(target: str, rewrite: str) -> str:
    return json.dumps({"edit": {"target": target, "rewrite": rewrite}})


# --- NoteTaker ---------------------------------------------------------------------------------------------------


def test_note_taker_builds_lesson_from_self_update_failure():
    lm, engine = scripted(lesson_reply("  Give exactly as many bullet points\nas the user requests. "))
    dspy.configure(lm=lm)
    long_failure = FAILURE.model_copy(update={"input": "word " * 2000})
    lesson = NoteTaker()(failure=long_failure, instructions="Answer the user.")
    assert lesson.text == "Give exactly as many bullet points as the user requests."
    assert lesson.id == lesson_id("give exactly as many bullet points as the user requests")
    assert (lesson.dimension, lesson.sources, lesson.support) == ("format", ["ex1:q-bullets"], 1)
    (request,) = engine.requests
    assert block(request, "question") == FAILURE.question
    assert block(request, "explanation") == FAILURE.explanation
    assert block(request, "current_instructions") == "Answer the user."
    assert "- fig" in block(request, "output")
    assert len(block(request, "input")) < 1600  # the long input was cut
    assert "reference_answer" not in request.messages[-1].text


def test_note_taker_shows_expected_and_given_answer_in_cross_model():
    lm, engine = scripted(lesson_reply("Do not penalize a friendly tone unless the task asks for formality."))
    dspy.configure(lm=lm)
    lesson = NoteTaker()(failure=DISAGREEMENT, instructions="You are a strict evaluator.")
    assert lesson.sources == ["ex1:q-tone"]
    (request,) = engine.requests
    assert block(request, "evaluator_answer") == "no"
    assert block(request, "reference_answer") == "yes"
    assert block(request, "explanation") == "Too casual."
    assert block(request, "question") == DISAGREEMENT.question
    assert block(request, "current_instructions") == "You are a strict evaluator."


@pytest.mark.parametrize(
    "reply",
    [
        "I think the model should use fewer bullets.",  # not JSON
        lesson_reply("   "),  # blank lesson
        lesson_reply("x" * 201),  # over the bound
        json.dumps({"lesson": "Use fewer bullets."}),  # wrong shape
    ],
)
def test_note_taker_raises_a_clear_error_on_an_unusable_reply(reply):
    lm, _ = scripted(reply)
    dspy.configure(lm=lm)
    with pytest.raises(NoteTakingError, match="ex1:q-bullets"):
        NoteTaker()(failure=FAILURE, instructions="Answer the user.")


# --- LessonBank --------------------------------------------------------------------------------------------------


class BagOfWords:
    """A fake embedder: hashed word counts; records every text it embeds."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        out = np.zeros((len(texts), 512))
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                out[row, zlib.crc32(word.encode()) % 512] += 1.0
        return out


def refuse(texts: list[str]) -> np.ndarray:
    raise AssertionError("embedder must not be called")


def lesson(text: str, *sources: str, support: int = 1) -> Lesson:
    return Lesson(text=text, sources=list(sources), support=support)


def test_near_duplicates_merge_counting_support_and_sources():
    bank = LessonBank(threshold=0.6, embed=BagOfWords())
    first = bank.add(lesson("Use exactly three bullet points in the answer.", "a:1"))
    merged = bank.add(lesson("Use exactly three bullet points in every answer.", "b:1", "a:1", support=2))
    other = bank.add(lesson("Write in formal English.", "c:1"))
    assert merged is first
    assert first.support == 2  # support counts distinct failures: a:1 was already counted
    assert first.sources == ["a:1", "b:1"]  # a repeated source is listed once
    assert first.text == "Use exactly three bullet points in the answer."  # the bank's wording is kept
    assert other is not first and other.support == 1
    assert [x.id for x in bank.lessons] == [first.id, other.id]


def test_threshold_decides_whether_similar_lessons_merge():
    a, b = "Use exactly three bullet points.", "Use exactly three short bullet points please."
    loose, strict = LessonBank(threshold=0.5, embed=BagOfWords()), LessonBank(threshold=0.95, embed=BagOfWords())
    for bank in (loose, strict):
        bank.add(lesson(a))
        bank.add(lesson(b))
    assert len(loose.lessons) == 1 and loose.lessons[0].support == 2
    assert len(strict.lessons) == 2


def test_exact_duplicates_merge_without_embeddings():
    bank = LessonBank(embed=refuse)
    bank.lessons.append(lesson("Cite the source.", "a:1"))
    merged = bank.add(lesson("  cite THE   source ", "b:1"))
    assert merged.support == 2 and merged.sources == ["a:1", "b:1"]
    assert lesson_id("Cite the source.") == lesson_id("cite the  SOURCE")


def test_each_bank_lesson_is_embedded_once_and_ties_go_to_the_earliest():
    embed = BagOfWords()
    bank = LessonBank(threshold=0.9, embed=embed)
    bank.add(lesson("alpha beta"))
    bank.add(lesson("gamma delta"))
    bank.add(lesson("beta alpha epsilon zeta"))
    assert sorted(embed.seen) == sorted(["alpha beta", "gamma delta", "beta alpha epsilon zeta"])
    tie = LessonBank(threshold=0.5, embed=BagOfWords())
    first = tie.add(lesson("alpha beta"))
    second = tie.add(lesson("delta epsilon"))
    assert second is not first
    assert tie.add(lesson("alpha delta")) is first  # cosine 0.5 with both: the threshold is reached, the earliest wins
    assert tie.add(lesson("beta zeta")) is first  # 0.5 again, reaching the threshold inclusively
    assert tie.add(lesson("zeta eta")) not in (first, second)


def test_invalid_threshold_is_refused():
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match="threshold"):
            LessonBank(threshold=bad, embed=BagOfWords())


def test_active_retire_and_mark_applied():
    bank = LessonBank(threshold=0.99, embed=BagOfWords())
    a = bank.add(lesson("alpha"))
    b = bank.add(lesson("beta", support=3))
    c = bank.add(lesson("gamma"))
    d = bank.add(lesson("delta", support=3))
    assert [x.text for x in bank.active()] == ["beta", "delta", "alpha", "gamma"]
    bank.retire([b.id])
    bank.mark_applied([a.id, c.id])
    assert [x.text for x in bank.active()] == ["delta", "alpha", "gamma"]
    assert (a.applied, b.applied, c.applied, d.applied) == (True, False, True, False)
    assert bank.add(lesson("beta")) is b and b.retired  # a rolled-back rule absorbs its duplicates and stays out
    with pytest.raises(KeyError, match="l-nope"):
        bank.retire(["l-nope"])


def test_json_round_trip_keeps_lessons_and_keeps_merging():
    bank = LessonBank(threshold=0.6, embed=BagOfWords())
    kept = bank.add(lesson("Use exactly three bullet points.", "a:1"))
    bank.add(lesson("Write in formal English.", "b:1"))
    bank.retire([kept.id])
    bank.mark_applied([bank.lessons[1].id])
    data = json.loads(json.dumps(bank.to_json()))
    restored = LessonBank.from_json(data, threshold=0.6, embed=BagOfWords())
    assert restored.to_json() == bank.to_json()
    assert restored.threshold == 0.6
    merged = restored.add(lesson("Use exactly three bullet points please.", "c:1"))
    assert merged.id == kept.id and merged.sources == ["a:1", "c:1"] and merged.retired


def test_minilm_merges_paraphrases_but_not_unrelated_lessons():
    bank = LessonBank(embed=minilm_embedder())
    assert bank.threshold == DEFAULT_THRESHOLD
    first = bank.add(lesson("Use exactly the number of bullet points the user asks for.", "a:1"))
    assert bank.add(lesson("Always match the requested count of bullet points.", "b:1")) is first
    other = bank.add(lesson("Write the answer in formal English.", "c:1"))
    assert other is not first
    assert first.support == 2 and other.support == 1


# --- PromptUpdater -----------------------------------------------------------------------------------------------

PROMPT = "Answer the question. Be concise.\nUse bullet points when listing items. Be concise."


def update(reply: str, instructions: str = PROMPT, lesson_: Lesson = LESSON) -> tuple[str, Edit, ScriptedEngine]:
    lm, engine = scripted(reply)
    dspy.configure(lm=lm)
    new, edit = PromptUpdater()(instructions=instructions, lesson=lesson_)
    return new, edit, engine


def test_updater_replaces_only_the_first_occurrence_of_the_chosen_substring():
    new, edit, engine = update(edit_reply("Be concise.", "Be concise; give exactly as many bullets as asked."))
    assert new == (
        "Answer the question. Be concise; give exactly as many bullets as asked.\n"
        "Use bullet points when listing items. Be concise."
    )
    assert (edit.before, edit.appended, edit.lesson_id) == ("Be concise.", False, LESSON.id)
    assert edit.after == "Be concise; give exactly as many bullets as asked."
    (request,) = engine.requests
    assert block(request, "lesson") == LESSON.text
    assert block(request, "current_instructions") == PROMPT


def test_updater_matches_a_target_up_to_whitespace():
    reply = edit_reply("Be concise. Use   bullet points", "Be concise. Use exactly the requested bullet points")
    new, edit, _ = update(reply)
    assert new == (
        "Answer the question. Be concise. Use exactly the requested bullet points when listing items. Be concise."
    )
    assert edit.before == "Be concise.\nUse bullet points" and not edit.appended


def test_updater_keeps_the_line_breaks_around_a_replaced_passage():
    new, edit, _ = update(edit_reply("\nUse bullet points when listing items.", "Use exactly the bullets asked for.\n"))
    assert new == "Answer the question. Be concise.\nUse exactly the bullets asked for. Be concise."
    assert edit.before == "Use bullet points when listing items."


def test_updater_appends_the_rewrite_when_the_target_is_missing():
    new, edit, _ = update(edit_reply("Never use lists.", "Give exactly as many bullet points as the user asks for"))
    assert new == PROMPT + "\nGive exactly as many bullet points as the user asks for."
    assert edit.after == "Give exactly as many bullet points as the user asks for."
    assert (edit.before, edit.appended) == ("", True)
    new, edit, _ = update(edit_reply("", "Match the requested bullet count."))
    assert new == PROMPT + "\nMatch the requested bullet count." and edit.appended


@pytest.mark.parametrize(
    "reply",
    [
        edit_reply("Nowhere in the prompt.", "???"),  # missing target, garbage rewrite
        edit_reply("", ""),  # nothing at all
        edit_reply("Be concise.", "Be concise."),  # rewrite equals target: would change nothing
        edit_reply("Be concise.", ""),  # empty rewrite
        edit_reply("", "Be concise."),  # "new" sentence already in the prompt
        "Sure! I would change the second sentence.",  # unparseable
    ],
)
def test_updater_falls_back_to_appending_the_lesson(reply):
    new, edit, _ = update(reply)
    assert new == PROMPT + "\n" + LESSON.text
    assert (edit.before, edit.after, edit.appended) == ("", LESSON.text, True)


def test_empty_instructions_become_the_lesson_without_an_lm_call():
    new, edit, engine = update(edit_reply("", "unused"), instructions="  \n")
    assert new == LESSON.text and edit.appended and edit.after == LESSON.text
    assert engine.requests == []


def test_a_lesson_rebuilt_from_counted_failures_adds_no_support():
    from bineval_dspy.optimize.lessons import Lesson, LessonBank

    bank = LessonBank(embed=lambda texts: __import__("numpy").eye(len(texts)))
    bank.add(Lesson(text="Use bullets.", sources=["a:1"]))
    merged = bank.add(Lesson(text="use bullets", sources=["a:1"]))
    assert merged.support == 1 and merged.sources == ["a:1"]
    merged = bank.add(Lesson(text="Use bullets.", sources=["b:1"]))
    assert merged.support == 2 and merged.sources == ["a:1", "b:1"]
