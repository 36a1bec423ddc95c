"""The word kinds on real-ish partial words: a token is refused as soon as no completion of the word it writes
could hold, a word ends only where it holds, state carried from word to word, text forced where a unit ends."""

from __future__ import annotations

import numpy as np
import pytest

from bineval_dspy.enforce.kinds.letters import OneLine, VowelKinds
from bineval_dspy.enforce.kinds.word_links import KeywordAt, LineEcho, SentenceChain
from bineval_dspy.enforce.kinds.word_places import LeadWord, Palindromes, SecondToLast
from bineval_dspy.enforce.kinds.words import Words, words
from bineval_dspy.enforce.rules import RuleKind, rules
from bineval_dspy.enforce.steering import Conflict, Steering, Structure, merge


class _Reply:
    """The text so far, as the steerer shows it to a rule."""

    def __init__(self, text: str = "", pieces: list[str] | None = None, limit: int = 100, tokens: int = 0) -> None:
        self.text, self.limit, self.tokens = text, limit, tokens
        self.pieces = pieces or [" the", " cat", " sat", "s", ",", "."]
        self.new_word = np.array([p.startswith(" ") for p in self.pieces])


def fresh(kind: RuleKind) -> RuleKind:
    return type(kind).model_validate(kind.model_dump())


@pytest.mark.parametrize(
    ("rule", "text", "piece", "allowed"),
    [
        (words("prime_length"), "The ca", "t", True),  # "cat": 3, prime
        (words("prime_length"), "The cat", " sat", True),
        (words("prime_length"), "The lamp", " is", False),  # "lamp" (4) cannot end
        (words("prime_length"), "The lamp", "s", True),  # "lamps" (5) may
        (words("cluster"), "A", " street", False),  # "a" has no consonant pair
        (words("cluster"), "The", " street", True),
        (words("alphabet"), "Apple", " bold", True),
        (words("alphabet"), "Apple", " cold", False),
        (words("alphabet"), "Apple bold", " c", True),  # a partial word with the right initial
        (words("new_initial"), "Cats", " can", False),
        (words("new_initial"), "Cats", ", dogs", True),
        (words("most_uses", most=1), "the cat and the", " dog", False),  # "the" a second time
        (words("most_uses", most=1), "the cat and the", "ory", True),  # "theory" is another word
        (words("syllable_parity"), "The cat", " sat", False),  # 1, 1, 1
        (words("syllable_parity"), "The", " table", True),  # 1, 2
        (words("prime_length"), "cat,", "dog", False),  # glued words would escape the rule between them
        (words("prime_length"), "cat - -", " so", False),  # marks do not run on between words
    ],
)
def test_a_word_is_refused_as_soon_as_it_cannot_hold(rule: Words, text: str, piece: str, allowed: bool):
    assert fresh(rule).allows(_Reply(text), piece) is allowed


def test_a_word_that_cannot_end_masks_every_token_that_would_end_it():
    rule = fresh(words("prime_length"))
    logits = np.zeros(6, dtype=np.float32)
    rule.mask(logits, _Reply("The lamp"))
    assert not np.isfinite(logits[:3]).any() and np.isfinite(logits[3:]).all()  # only "s", ",", "." continue it
    assert not rule.may_end(_Reply("The lamp")) and rule.may_end(_Reply("The lamps"))
    assert rule.finish("The cat sat on the mat and lamp") == "The cat sat on the mat and"  # cut by the token limit


def test_word_predicates_combine_and_conflict_with_forced_words():
    both = merge(Steering(rules=rules(words("alphabet"))), Steering(rules=rules(words("cluster"))))
    (rule,) = both.rules
    assert [p.name for p in rule.build().predicates] == ["alphabet", "cluster"]
    with pytest.raises(Conflict, match="breaks the word rule alphabet"):
        merge(both, Steering(end_phrase="Thanks."))
    with pytest.raises(Conflict, match="may cut a word"):
        merge(Steering(rules=rules(words("prime_length"))), Steering(structure=Structure(kind="bullets", count=3)))


def test_vowel_kinds_keep_the_vowels_used_so_far():
    rule = VowelKinds(most=3)
    pieces = [" cat", " dog", " tree", " sun", " pit"]
    logits = np.zeros(len(pieces), dtype=np.float32)
    rule.mask(logits, _Reply("A dog", pieces))  # a and o used
    assert [p for p, v in zip(pieces, logits) if np.isfinite(v)] == [" cat", " dog", " tree", " sun", " pit"]
    rule.mask(logits := np.zeros(len(pieces), dtype=np.float32), _Reply("A dog tree", pieces))  # a, o, e
    assert [p for p, v in zip(pieces, logits) if np.isfinite(v)] == [" cat", " dog", " tree"]
    assert OneLine().bans("\n") and not OneLine().bans(" x")
    with pytest.raises(Conflict, match="line breaks"):
        merge(Steering(rules=rules(OneLine())), Steering(title=True))


def test_a_first_word_from_a_list_then_a_forced_word():
    lead = LeadWord(words=("the", "our"), then=" vibrant")
    reply = _Reply("")
    assert lead.allows(reply, "The") and not lead.allows(reply, "Then") and not lead.allows(reply, "A")
    assert lead.after(_Reply("The"), "The") == " vibrant"
    assert not lead.allows(_Reply("The vibrant"), "ly") and lead.allows(_Reply("The vibrant"), " city")
    with pytest.raises(ValueError, match="begin another"):
        LeadWord(words=("the", "then"), then=" x")
    verb = LeadWord(words=("explore",), refuse_next=("is",))
    assert verb.allows(_Reply("Explore"), " island") and not verb.allows(_Reply("Explore is"), " big")


def test_the_second_to_last_word_is_written_before_the_last():
    assert SecondToLast(keyword="vibrant").finish("A city at night.") == "A city at vibrant night."
    assert SecondToLast(keyword="vibrant").finish("") == "vibrant vibrant"
    assert Palindromes(count=3, least=5).finish("I saw a level road.") == "I saw a level road. radar madam"


def test_a_line_ends_with_its_first_word():
    echo = LineEcho()
    assert not echo.allows(_Reply("Cats are nice"), "\n") and echo.allows(_Reply("Cats are nice cats"), ".\n")
    assert echo.at_end(_Reply("Cats are nice")) == " Cats" and echo.at_end(_Reply("Cats are cats")) is None
    assert not echo.allows(_Reply("Cats,"), " are")  # "cats," could never be the line's last word


def test_a_sentence_begins_with_the_last_word_before_it():
    chain = SentenceChain()
    assert chain.after(_Reply("I like cats."), ".") == " cats"
    assert not chain.allows(_Reply("I like cats. cats"), ".")  # "cats." is another first word
    assert not SentenceChain().allows(_Reply("I like cats."), " Dogs")


def test_a_keyword_at_a_word_of_a_sentence():
    rule = KeywordAt(keyword="giggle", sentence=2, word=3)
    assert rule.allows(_Reply("One. Two"), " three") and not fresh(rule).allows(_Reply("One. Two three"), ".")
    placed = fresh(rule)
    assert placed.after(_Reply("One. Two three", limit=100, tokens=4), " three") == " giggle"
    assert not placed.allows(_Reply("One. Two three giggle"), "s") and placed.may_end(_Reply("One. Two three giggle"))


def test_a_keyword_counts_marks_run_together_as_one_sentence_end():
    # Punkt cuts "eel?!" after the "?" but reads "eel?! Then" as one sentence: the run is one end, not two
    rule = KeywordAt(keyword="giggle", sentence=2, word=2)
    assert rule.allows(_Reply("One eel?"), "!") and rule.allows(_Reply("One eel?!"), " Two")  # the 2nd sentence
    assert rule.after(_Reply("One eel?! Two", limit=100, tokens=6), " Two") == " giggle"


def test_word_links_name_the_rules_they_cannot_live_with():
    from bineval_dspy.enforce.kinds.forced import SentenceEmoji
    from bineval_dspy.enforce.kinds.layout import WordPerLine
    from bineval_dspy.enforce.kinds.sentences import SentencePlan

    with pytest.raises(Conflict, match="chain does not link"):
        merge(Steering(rules=rules(SentenceChain())), Steering(rules=rules(SentenceEmoji())))
    with pytest.raises(Conflict, match="on the line of the word before it"):
        merge(Steering(rules=rules(KeywordAt(keyword="giggle", sentence=2, word=3))), Steering(rules=rules(WordPerLine())))
    with pytest.raises(Conflict, match="closing mark"):
        merge(Steering(rules=rules(Palindromes(count=2, least=5))), Steering(rules=rules(SentenceEmoji())))
    with pytest.raises(Conflict, match="plans the sentences"):
        merge(Steering(rules=rules(LineEcho())), Steering(rules=rules(SentencePlan(step=2))))
    with pytest.raises(Conflict, match="picks words"):
        merge(Steering(rules=rules(words("prime_length"))), Steering(rules=rules(SentencePlan(step=2))))
    with pytest.raises(Conflict, match="begin with given letters"):
        merge(Steering(rules=rules(VowelKinds(most=2))), Steering(rules=rules(SentencePlan(initials="abc"))))
