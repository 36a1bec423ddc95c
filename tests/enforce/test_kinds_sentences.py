"""The sentence, shape and verbatim rule kinds on real-ish pieces: a mark refused before a sentence may end and
where Punkt would not break, a new word refused once the count is reached, a keyword that may not be lengthened,
first letters, CSV and date automata, the first word of a repeated request."""

from __future__ import annotations

import numpy as np
import pytest

from bineval_dspy.enforce.kinds.sentences import SentencePlan, alliteration_score, ends_sentence, sentence_words
from bineval_dspy.enforce.kinds.shapes import CsvTable, DateList, QuestionList
from bineval_dspy.enforce.kinds.verbatim import FirstWordChanged, Verbatim
from bineval_dspy.enforce.rules import RuleConflict, rules
from bineval_dspy.enforce.runtime import END, Steerer
from bineval_dspy.enforce.steering import Conflict, Steering, merge
from bineval_dspy.enforce.vocabulary import Vocabulary
from bineval_dspy.verifiers import build_check

PIECES = [
    " The", " cat", " sat", " on", " the", " mat", ".", ". ", "?", " Dr", " 42", "ness", " fleet", " bird", " big",
    " dog", "s", " e.g.", ",", "\n", " Bears", " bring", " blue", " berries", " 17", "1", "7", "6", "9", "0", "3",
    "4", ", ", "-", '"', "&", " Home", " Garden", " Please", " Use", " Us", "Use", " x", "",
]  # fmt: skip
VOCAB = Vocabulary(PIECES, [len(PIECES) - 1])


def steer(steering: Steering, limit: int = 200) -> Steerer:
    steerer = Steerer(steering, VOCAB, limit)
    steerer.start()
    return steerer


def allowed(steerer: Steerer) -> set[str]:
    """The pieces the steerer lets come next (masks, then its checks on the chosen token)."""
    logits = steerer.masked(np.zeros(len(PIECES), dtype=np.float32))
    return {PIECES[i] for i in np.flatnonzero(np.isfinite(logits)) if steerer.allows(int(i)) and PIECES[i]}


def feed(steerer: Steerer, *pieces: str) -> str | None:
    forced = None
    for piece in pieces:
        assert piece in allowed(steerer), (piece, steerer.text)
        forced = steerer.accepted(PIECES.index(piece))
    return forced


def plan(**params: object) -> Steering:
    return Steering(rules=rules(SentencePlan(**params)))  # type: ignore[arg-type]


def test_counts_are_the_verifiers():
    assert sentence_words("Well-known, isn't it - yes.") == 4  # the lone dash is no word
    assert alliteration_score("Big bears bring blue berries; the cat sat.") == 5
    ok = build_check("sentence:increment", {"small_n": 2}, "p")("The cat sat. The big cat sat down.")
    assert ok.passed


def test_a_mark_ends_a_sentence_only_where_punkt_breaks_whatever_follows():
    assert ends_sentence("The cat sat", ".")
    assert not ends_sentence("I met Dr", ".")  # an abbreviation
    assert not ends_sentence("It was 42", ".")  # a number before a lower-case word
    assert ends_sentence("Is it 42", "?")


def test_each_sentence_gets_exactly_step_more_words():
    steerer = steer(plan(step=2))
    assert "." not in allowed(steerer) and " e.g." not in allowed(steerer)  # no mark in a sentence, none too soon
    feed(steerer, " The", " cat", " sat", ".")
    feed(steerer, " The", " big", " cat", " sat")
    assert "." not in allowed(steerer)  # 4 words of the 5 due
    feed(steerer, " on")
    assert {" the", " mat"}.isdisjoint(allowed(steerer)) and "." in allowed(steerer)  # the 5th word may only grow
    assert "s" in allowed(steerer)
    feed(steerer, ".")
    assert build_check("sentence:increment", {"small_n": 2}, "p")(steerer.finish()).passed


def test_no_end_mark_after_an_abbreviation_and_a_space_after_a_bare_mark():
    steerer = steer(plan(step=1))
    feed(steerer, " The", " cat", " Dr")
    assert "." not in allowed(steerer)
    steerer = steer(plan(step=1))
    feed(steerer, " The", " cat", " sat", ".")
    assert "s" not in allowed(steerer) and " The" in allowed(steerer)  # "sat.s" would be one word to Punkt


def test_a_keyword_is_forced_to_open_its_sentence_and_may_not_grow():
    steerer = steer(plan(keywords=((2, "fleet"),)))
    assert feed(steerer, " The", " cat", " sat", ".") == " fleet"
    assert "ness" not in allowed(steerer) and " on" in allowed(steerer)
    feed(steerer, " on")
    assert build_check("sentence:keyword", {"word": "fleet", "N": 2}, "p")(steerer.finish()).passed
    assert plan(keywords=((1, "fleet"),)).rules[0].build().prefix() == "fleet"


def test_first_words_follow_the_letters_and_the_reply_ends_after_the_last():
    steerer = steer(plan(initials="bd"))
    assert allowed(steerer) & {" Bears", " bird", " big", " blue", " bring", " berries"} == allowed(steerer) - {"\n"}
    feed(steerer, " bird", " sat", " on", ".")
    assert " dog" in allowed(steerer) and " cat" not in allowed(steerer)
    assert feed(steerer, " dog", " sat", " on", ".") == END


def test_an_alliterative_run_is_asked_for_once_the_free_words_are_written():
    steerer = steer(plan(alliteration=True))
    feed(steerer, " The", " cat", " sat", ".")  # score 0
    feed(steerer, " The", " big", " cat")
    assert " cat" in allowed(steerer) and "." not in allowed(steerer)  # the run must start on "cat"'s letter
    assert {" dog", " big", " the"}.isdisjoint(allowed(steerer))


def test_sentence_rules_combine_or_conflict():
    merged = merge(plan(step=2), plan(keywords=((3, "fleet"),)))
    assert merged.rules[0].build() == SentencePlan(step=2, keywords=((3, "fleet"),))
    with pytest.raises(RuleConflict):
        SentencePlan(initials="abc").combine(SentencePlan(keywords=((2, "fleet"),)))  # sentence 2 starts with b
    with pytest.raises(Conflict, match="first word must open"):
        merge(Steering(opening='"'), plan(initials="abc"))
    with pytest.raises(Conflict, match="ceiling"):
        merge(Steering(max_words=50), plan(step=3))


def test_a_csv_table_keeps_its_fields_rows_and_quotes():
    steerer = steer(Steering(rules=rules(CsvTable(header="A,B", delimiter=",", rows=2, fields=2))))
    assert steerer.text == "A,B\n"
    assert "," not in allowed(steerer) and "\n" not in allowed(steerer)  # no empty field
    feed(steerer, "1", ",")
    assert "," not in allowed(steerer) and '"' not in allowed(steerer)
    feed(steerer, " cat")
    assert "," not in allowed(steerer) and "\n" in allowed(steerer)
    feed(steerer, "\n", "7", ",", " dog")
    assert feed(steerer, "\n") == END
    assert build_check("custom:csv_city", {}, "p")("ID,Country,City,Year,Count\n" + "1,a,b,c,d\n" * 7).passed
    quoted = steer(Steering(rules=rules(CsvTable(header="A,B", delimiter=",", rows=1, fields=2, quote="special"))))
    feed(quoted, "1", ",")
    assert quoted.text.endswith(',"')  # the second field's opening quote is forced
    feed(quoted, " Home")
    assert '"' not in allowed(quoted)  # no closing before a special character
    assert feed(quoted, "&", " Garden", '"') == END


def test_dates_keep_their_format_and_range():
    steerer = steer(Steering(rules=rules(DateList(first_year=1769, last_year=1821))))
    assert allowed(steerer) == {"1"}
    feed(steerer, "1")
    assert allowed(steerer) == {"7"}
    assert feed(steerer, "7", "6", "9") == "-"
    feed(steerer, "0", "4", "3")  # April: no 31st
    assert allowed(steerer) == {"0"}
    assert not steerer.may_end()
    feed(steerer, "0")
    assert steerer.may_end() and allowed(steerer) == {",", ", "}
    feed(steerer, ", ", "1")
    assert steerer.finish() == "1769-04-30"  # the date cut short is left out


def test_questions_grow_and_their_labels_are_forced():
    steerer = steer(Steering(rules=rules(QuestionList(count=2, options=1))))
    assert steerer.text == "Question 1: "
    assert feed(steerer, " The", " cat", "?", "\n") == "A) "
    assert feed(steerer, " dog", "\n") == "\nQuestion 2: "
    feed(steerer, " The", " cat")
    assert "\n" not in allowed(steerer)  # not longer than the first question yet
    feed(steerer, " sat", "?", "\n", " big")
    text = steerer.finish()
    assert text == "Question 1:  The cat?\nA)  dog\n\nQuestion 2:  The cat sat?\nA)  big"


def test_a_repeated_request_changes_only_its_first_word():
    steerer = steer(Steering(rules=rules(FirstWordChanged(request="Use Python code: build it."))))
    assert {" Use", "Use", " Us"}.isdisjoint(allowed(steerer)) and " Please" in allowed(steerer)
    assert feed(steerer, " Please") == " Python code: build it."
    assert allowed(steerer) == set() and steerer.may_end()
    kwargs = {"prompt_to_repeat": "Use Python code: build it."}
    assert build_check("repeat:repeat_change", kwargs, "p")(steerer.finish()).passed


def test_a_verbatim_reply_is_its_text_and_nothing_else():
    steerer = steer(Steering(rules=rules(Verbatim(text="14, 21, 28, 35, 42, 49"))))
    assert steerer.text == "14, 21, 28, 35, 42, 49" and allowed(steerer) == set()
    with pytest.raises(Conflict, match="no letters"):
        merge(Steering(case="lower"), Steering(rules=rules(Verbatim(text="14, 21"))))
    with pytest.raises(Conflict, match="fixed shape"):
        merge(Steering(title=True), Steering(rules=rules(Verbatim(text="Only this."))))


def test_a_sentence_floor_short_of_tokens_writes_a_word_then_its_end():
    """Found by the property tests once the vocabulary grew: the floor refused the end but never ended a sentence."""
    steerer = Steerer(Steering(min_sentences=3), VOCAB, 8)
    steerer.start()
    for _ in range(8):
        logits = steerer.masked(np.where(np.arange(len(PIECES)) == PIECES.index(","), 5.0, 0.0).astype(np.float32))
        steerer.accepted(int(np.argmax(logits)))
    assert build_check("length_constraints:number_sentences", {"num_sentences": 3, "relation": "at least"}, "p")(steerer.finish()).passed


def test_an_end_phrase_that_leaves_no_sentence_under_the_ceiling_conflicts():
    with pytest.raises(Conflict, match="end phrase"):
        merge(Steering(max_sentences=2), Steering(end_phrase="Peace."))
    assert merge(Steering(max_sentences=3), Steering(end_phrase="Peace.")).max_sentences == 3


def test_the_steering_codes_digest_reads_the_rule_kinds():
    """Found on the real model: a changed kind replayed the replies cached under the old code."""
    from bineval_dspy import enforce
    from bineval_dspy.core.source import source_files

    assert any(path.parts[-2:] == ("kinds", "sentences.py") for path in source_files(enforce))
