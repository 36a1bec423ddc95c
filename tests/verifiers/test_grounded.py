"""Unit tests for the input-grounded (``grounded:*``) and text-shape (``text:*``) verifiers."""

from __future__ import annotations

import json
from importlib.resources import files

import dspy
import pytest
from dspy.lm15 import Request

from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.verifiers.registry import VerifierError, build_check, follows, known_instruction_ids
from tests.conftest import scripted_lm

DEMO = json.loads(files("bineval_dspy").joinpath("data/demo.json").read_text(encoding="utf-8"))
ARTICLE: str = DEMO["article"]
SUMMARIES: dict[str, str] = {summary["label"]: summary["text"] for summary in DEMO["summaries"]}

# The demo's checks: the two-or-three sentence task, and a word range every demo summary meets.
DEMO_CHECKS: dict[str, dict[str, object]] = {
    "grounded:numbers": {},
    "grounded:entities": {},
    "text:sentence_count": {"min_sentences": 2, "max_sentences": 3},
    "text:word_count": {"min_words": 20, "max_words": 80},
    "text:sentence_capitals": {},
    "text:no_repeated_words": {},
}


def passes(instruction_id: str, response: str, prompt: str = "", **kwargs: object) -> bool:
    """Run one verifier in strict mode on ``response``, judged against the input ``prompt``."""
    return follows(build_check(instruction_id, kwargs, prompt=prompt), response)


def failed_checks(summary: str) -> set[str]:
    """The demo checks ``summary`` fails against the demo article."""
    return {check for check, kwargs in DEMO_CHECKS.items() if not passes(check, summary, ARTICLE, **kwargs)}


def test_all_ids_are_registered() -> None:
    assert set(DEMO_CHECKS) <= set(known_instruction_ids())


# --------------------------------------------------------------------------- the demo


def test_good_summary_passes_every_check() -> None:
    assert failed_checks(SUMMARIES["good"]) == set()


def test_mediocre_summary_fails_only_the_sentence_count() -> None:
    assert failed_checks(SUMMARIES["mediocre"]) == {"text:sentence_count"}  # four sentences


def test_bad_summary_fails_numbers_sentences_capitals_and_repeats() -> None:
    # 42 million for 4.2 million, one sentence, a lower-case start, "roads roads"; it names no entity.
    assert failed_checks(SUMMARIES["bad"]) == {
        "grounded:numbers",
        "text:sentence_count",
        "text:sentence_capitals",
        "text:no_repeated_words",
    }


def test_demo_through_the_judge_answers_every_question_by_code() -> None:
    def no_lm(request: Request) -> str:
        raise AssertionError("a code-verified question reached the LM")

    lm = scripted_lm(no_lm)
    dspy.configure(lm=lm)
    checklist = Checklist(
        task=DEMO["task"],
        dimensions=["consistency", "fluency"],
        questions=[
            Question(
                id=check,
                text=f"Does the summary pass {check}?",
                dimension="consistency" if check.startswith("grounded:") else "fluency",
                verifier=check,
                verifier_kwargs=kwargs or None,
            )
            for check, kwargs in DEMO_CHECKS.items()
        ],
    )
    card = BinaryJudge()(input=ARTICLE, output=SUMMARIES["bad"], checklist=checklist)
    assert lm.engine.requests == []
    assert {verdict.question_id: verdict.judge for verdict in card.verdicts} == {
        check: f"code:{check}" for check in DEMO_CHECKS
    }
    answers = {verdict.question_id: verdict.answer for verdict in card.verdicts}
    assert answers == {
        "grounded:numbers": "no",
        "grounded:entities": "yes",
        "text:sentence_count": "no",
        "text:word_count": "yes",
        "text:sentence_capitals": "no",
        "text:no_repeated_words": "no",
    }
    assert card.unanswered == 0


# --------------------------------------------------------------------------- grounded:numbers


def test_numbers_match_by_value_across_separators_and_scale_words() -> None:
    assert passes("grounded:numbers", "About 120000 people live there.", "It has 120,000 residents.")
    assert passes("grounded:numbers", "It has 120,000 residents.", "About 120000 people live there.")
    assert passes("grounded:numbers", "It cost 4,200,000 dollars.", "It cost 4.2 million dollars.")
    assert passes("grounded:numbers", "It cost 4.2 million dollars.", "It cost 4,200,000 dollars.")
    assert passes("grounded:numbers", "It cost $4.2m.", "It cost 4.2 million dollars.")  # the bare 4.2
    assert passes("grounded:numbers", "It grew by 4.20 points.", "It grew by 4.2 points.")
    assert passes("grounded:numbers", "Two hundred came.", "200 came.")


def test_numbers_read_tokenized_text_whose_separators_are_spaced_out() -> None:
    # UniEval's QAGS-CNN/DM articles are PTB-tokenized ("3 , 800 km"), its summaries are not ("3,800 km")
    assert passes("grounded:numbers", "It lies about 3 , 800 km from moscow .", "It lies about 3,800 km from Moscow.")
    assert passes("grounded:numbers", "It lies about 3,800 km from Moscow.", "it lies about 3 , 800 km from moscow .")
    assert passes("grounded:numbers", "It cost 1 , 200 , 000 dollars .", "It cost 1.2 million dollars.")
    assert passes("grounded:numbers", "It was right in 98 . 7 per cent of cases .", "It was right in 98.7 per cent of cases.")
    assert not passes("grounded:numbers", "It was right in 98 . 7 per cent of cases .", "It was right in 98 per cent of cases.")
    # a list stays a list: only a group of exactly three digits joins
    assert not passes("grounded:numbers", "They scored 3 , 80 and 8 .", "They scored 380.")
    assert not passes("grounded:numbers", "They scored 3 , 8000 .", "They scored 38,000.")


def test_numbers_reject_other_values() -> None:
    assert not passes("grounded:numbers", "It cost 42 million dollars.", "It cost 4.2 million dollars.")
    assert not passes("grounded:numbers", "It cost 4.2 billion dollars.", "It cost 4.2 million dollars.")
    assert not passes("grounded:numbers", "It cost 4.2 dollars.", "It cost 4,200,000 dollars.")
    assert not passes("grounded:numbers", "Built in 1892.", "Built in 1891.")
    # Commas group thousands only in threes: "4,2" is the numbers 4 and 2, not 4.2.
    assert not passes("grounded:numbers", "It grew by 4,2 points.", "It grew by 4.2 points.")


def test_numbers_keep_percentages_apart_from_counts() -> None:
    assert passes("grounded:numbers", "Turnout was 30 percent.", "Turnout was 30%.")
    assert passes("grounded:numbers", "Turnout was 30 %.", "Turnout was 30 per cent.")
    assert passes("grounded:numbers", "Of those, 30 voted.", "Turnout was 30%.")  # the bare 30
    assert not passes("grounded:numbers", "Turnout was 30%.", "Some 30 people voted.")


def test_numbers_read_number_words_two_to_twelve() -> None:
    assert passes("grounded:numbers", "Two councillors objected.", "The vote was 7 to 2.")
    assert passes("grounded:numbers", "2 councillors objected.", "Two councillors objected.")
    assert not passes("grounded:numbers", "Three councillors objected.", "The vote was 7 to 2.")
    # "one" is too often a pronoun; compound and hyphenated words are not read as their parts.
    assert passes("grounded:numbers", "No one objected to one of the plans.", "The vote was 7 to 2.")
    assert passes("grounded:numbers", "Twenty-two people and two-thirds of members came.", "Everyone came.")


def test_numbers_pass_a_response_without_numbers_and_fail_an_empty_one() -> None:
    assert passes("grounded:numbers", "The council approved the plan.", ARTICLE)
    assert passes("grounded:numbers", "The council approved the plan.")  # no input needed for no numbers
    assert not passes("grounded:numbers", "The vote was 7 to 2.")  # no input supports any number
    assert not passes("grounded:numbers", "", ARTICLE)


# --------------------------------------------------------------------------- grounded:entities


def test_entities_must_occur_in_the_input() -> None:
    assert passes("grounded:entities", "The new library opens on Elm Street in March.", ARTICLE)
    assert not passes("grounded:entities", "The new library opens on Oak Street in March.", ARTICLE)
    assert not passes("grounded:entities", "The mayor, Ana Lopez, backed the plan.", ARTICLE)
    assert not passes("grounded:entities", "The plan was backed by NASA.", ARTICLE)


def test_entities_match_case_insensitively_and_word_by_word() -> None:
    assert passes("grounded:entities", "The council backed the Library plan.", ARTICLE)  # "library" is in it
    assert passes("grounded:entities", "The plan was backed by Mayor Ruiz.", ARTICLE)  # "Mayor Ana Ruiz"
    assert passes("grounded:entities", "The council of Millbrook's town voted.", ARTICLE)  # possessive


def test_entities_skip_words_that_open_a_sentence_line_or_quotation() -> None:
    assert passes("grounded:entities", "Yesterday the council voted. Afterwards it met.", ARTICLE)
    assert passes("grounded:entities", "Summary\nWork begins in March.", ARTICLE)
    assert passes("grounded:entities", "She said: \"Wonderful news\" and 'Splendid' too.", ARTICLE)
    assert passes("grounded:entities", "I think I'll visit the library.", ARTICLE)  # the pronoun is no name


def test_entities_pass_a_response_without_entities() -> None:
    assert passes("grounded:entities", "the council voted for a library.")
    assert not passes("grounded:entities", "  ", ARTICLE)


def test_grounded_verifiers_take_no_kwargs() -> None:
    with pytest.raises(VerifierError, match="unexpected kwargs"):
        build_check("grounded:numbers", {"tolerance": 0.1}, prompt=ARTICLE)
    with pytest.raises(VerifierError, match="unexpected kwargs"):
        build_check("grounded:entities", {"case_sensitive": True}, prompt=ARTICLE)


# --------------------------------------------------------------------------- text:sentence_count


def test_sentence_count_bounds() -> None:
    three = "One. Two. Three."
    assert passes("text:sentence_count", three, min_sentences=2, max_sentences=3)
    assert passes("text:sentence_count", three, min_sentences=3, max_sentences=3)
    assert not passes("text:sentence_count", three, min_sentences=4)
    assert not passes("text:sentence_count", three, max_sentences=2)
    assert passes("text:sentence_count", three, min_sentences=3.0)  # suites store counts as floats
    # The shared Punkt splitter: abbreviations do not end a sentence, newlines do not either.
    assert passes("text:sentence_count", "Dr. Ruiz spoke\nThe council listened.", max_sentences=1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"min_sentences": 3, "max_sentences": 2},
        {"min_sentences": 0},
        {"max_sentences": 2.5},
        {"max_sentences": "3"},
    ],
)
def test_sentence_count_rejects_bad_bounds(kwargs: dict[str, object]) -> None:
    with pytest.raises(VerifierError):
        build_check("text:sentence_count", kwargs)


# --------------------------------------------------------------------------- text:word_count


def test_word_count_bounds() -> None:
    response = "Millbrook's library cost 4.2 million."  # Millbrook, s, library, cost, 4, 2, million
    assert passes("text:word_count", response, min_words=7, max_words=7)
    assert passes("text:word_count", response, max_words=10)
    assert not passes("text:word_count", response, min_words=8)
    assert not passes("text:word_count", response, max_words=6)


@pytest.mark.parametrize("kwargs", [{}, {"min_words": 10, "max_words": 5}, {"max_words": -1}, {"min_words": True}])
def test_word_count_rejects_bad_bounds(kwargs: dict[str, object]) -> None:
    with pytest.raises(VerifierError):
        build_check("text:word_count", kwargs)


# --------------------------------------------------------------------------- text:sentence_capitals


def test_sentence_capitals() -> None:
    assert passes("text:sentence_capitals", "The vote was close. Two members objected.")
    assert passes("text:sentence_capitals", "7 members agreed. 'Too beautiful,' she said. (Most agreed.)")
    assert passes("text:sentence_capitals", "東京は大きい。")  # a script without case
    assert not passes("text:sentence_capitals", "The vote was close. two members objected.")
    assert not passes("text:sentence_capitals", "'too beautiful,' she said.")
    assert not passes("text:sentence_capitals", "- the first point.")


# --------------------------------------------------------------------------- text:no_repeated_words


def test_no_repeated_words_flags_immediate_repeats() -> None:
    assert not passes("text:no_repeated_words", "The roads roads need repair.")
    assert not passes("text:no_repeated_words", "Roads, roads everywhere.")  # case and punctuation ignored
    assert not passes("text:no_repeated_words", "It was the — the best plan.")  # a lone dash separates nothing
    assert passes("text:no_repeated_words", "The roads need repair, and roads cost money.")


def test_no_repeated_words_allows_grammar_hyphens_numbers_and_sentence_breaks() -> None:
    assert passes("text:no_repeated_words", "By then she had had enough.")
    assert passes("text:no_repeated_words", "He said that that was fine.")
    assert passes("text:no_repeated_words", "The food was so-so.")
    assert passes("text:no_repeated_words", "Versions 1.1 1.1 and 2 2 match.")
    assert passes("text:no_repeated_words", "We must stop. Stop now.")


def test_no_repeated_words_takes_more_allowed_words() -> None:
    assert not passes("text:no_repeated_words", "We flew to Bora Bora.")
    assert passes("text:no_repeated_words", "We flew to Bora Bora.", allowed_words=["Bora"])
    assert not passes("text:no_repeated_words", "She had had the the flu.", allowed_words=["bora"])
    with pytest.raises(VerifierError):
        build_check("text:no_repeated_words", {"allowed_words": "bora"})  # a string, not a list
    with pytest.raises(VerifierError):
        build_check("text:no_repeated_words", {"allowed_words": [" "]})
