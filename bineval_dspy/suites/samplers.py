"""The kwargs of each constraint a training suite draws (``synth``): one sampler per instruction id, every value from
the caller's seeded ``random.Random``, from word lists of our own chosen so that the constraints drawn together
stay satisfiable."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from bineval_dspy.verifiers.kwargs import RELATIONS

Sampler = Callable[[random.Random], dict[str, Any]]

# --------------------------------------------------------------------------- word lists (ours)
# Content words hold none of the rare letters j, q, x, z (a "fewer than N 'z'" rule must stay satisfiable next to a
# keyword rule), and none is part of another (keyword counts are substring counts).
CONTENT_WORDS = (
    "anchor", "basket", "beacon", "blossom", "bramble", "candle", "canyon", "cinder", "cobalt", "compass",
    "dolphin", "elbow", "fabric", "falcon", "feather", "fossil", "garnet", "ginger", "glacier", "granite",
    "gravel", "hammock", "harbor", "harvest", "hilltop", "hollow", "island", "ivory", "kettle", "lagoon",
    "lantern", "ledger", "lemon", "mango", "maple", "marble", "meadow", "mirror", "nectar", "needle",
    "nutmeg", "olive", "orchard", "oyster", "parcel", "pebble", "pepper", "pillar", "raven", "ribbon",
    "rocket", "rosemary", "saddle", "saffron", "silver", "summit", "thistle", "thunder", "timber", "tundra",
    "tunnel", "umbrella", "valley", "velvet", "violet", "walnut", "willow",
)  # fmt: skip
FILLER_WORDS = (
    "very", "really", "basically", "actually", "literally", "amazing", "awesome", "nice", "stuff", "things",
    "simply", "totally", "definitely", "great", "good", "obviously", "quite", "lots", "maybe", "perhaps",
)  # fmt: skip
END_PHRASES = (
    "Thank you for reading.", "That is all for today.", "Let me know what you think.", "Those are my thoughts.",
    "Hope this helps.", "See you soon.", "Stay curious.", "Until we meet again.",
)  # fmt: skip
PARAGRAPH_OPENERS = ("today", "however", "first", "finally", "meanwhile", "overall", "still", "sometimes", "besides")
SECTION_MARKERS = ("Section", "Part", "Chapter", "Stage")
POSTSCRIPT_MARKERS = ("P.S.", "P.P.S")
LIST_MARKERS = ("->", "=>", ">>", "~>", "::")
ANSWER_OPTIONS = ("yes/no/maybe", "agree/disagree/unsure", "likely/unlikely", "true/false/partly true")
LANGUAGES = ("ar", "de", "el", "es", "fi", "fr", "hi", "id", "it", "ja", "ko", "nl", "pl", "pt", "ru", "sv", "sw", "tr", "uk", "vi")
COMMON_LETTERS = "etaoinsrhl"  # "at least N" of a letter: plentiful in any English text
RARE_LETTERS = "jqxz"  # "fewer than N" of a letter: avoidable in any English text


# --------------------------------------------------------------------------- samplers
def _nothing(rng: random.Random) -> dict[str, Any]:
    """An instruction without kwargs: nothing to draw."""
    return {}


def _capital_words(rng: random.Random) -> dict[str, Any]:
    relation = rng.choice(RELATIONS)
    return {"capital_relation": relation, "capital_frequency": rng.randint(3, 10) if relation == "less than" else rng.randint(2, 6)}


def _placeholders(rng: random.Random) -> dict[str, Any]:
    return {"num_placeholders": rng.randint(1, 4)}


def _postscript(rng: random.Random) -> dict[str, Any]:
    return {"postscript_marker": rng.choice(POSTSCRIPT_MARKERS)}


def _sections(rng: random.Random) -> dict[str, Any]:
    return {"section_spliter": rng.choice(SECTION_MARKERS), "num_sections": rng.randint(2, 5)}


def _bullets(rng: random.Random) -> dict[str, Any]:
    return {"num_bullets": rng.randint(2, 6)}


def _highlights(rng: random.Random) -> dict[str, Any]:
    return {"num_highlights": rng.randint(1, 4)}


def _keywords(rng: random.Random) -> dict[str, Any]:
    return {"keywords": rng.sample(CONTENT_WORDS, rng.randint(1, 3))}


def _forbidden(rng: random.Random) -> dict[str, Any]:
    return {"forbidden_words": rng.sample(FILLER_WORDS, rng.randint(1, 4))}


def _keyword_frequency(rng: random.Random) -> dict[str, Any]:
    relation = rng.choice(RELATIONS)
    return {"keyword": rng.choice(CONTENT_WORDS), "relation": relation, "frequency": rng.randint(2, 5) if relation == "at least" else rng.randint(2, 4)}


def _letter_frequency(rng: random.Random) -> dict[str, Any]:
    relation = rng.choice(RELATIONS)
    if relation == "at least":
        return {"letter": rng.choice(COMMON_LETTERS), "let_relation": relation, "let_frequency": rng.randint(5, 30)}
    return {"letter": rng.choice(RARE_LETTERS), "let_relation": relation, "let_frequency": rng.randint(2, 6)}


def _language(rng: random.Random) -> dict[str, Any]:
    return {"language": rng.choice(LANGUAGES)}


def _nth_paragraph(rng: random.Random) -> dict[str, Any]:
    paragraphs = rng.randint(2, 5)
    return {"num_paragraphs": paragraphs, "nth_paragraph": rng.randint(1, paragraphs), "first_word": rng.choice(PARAGRAPH_OPENERS)}


def _paragraphs(rng: random.Random) -> dict[str, Any]:
    return {"num_paragraphs": rng.randint(2, 5)}


def _sentences(rng: random.Random) -> dict[str, Any]:
    relation = rng.choice(RELATIONS)
    return {"relation": relation, "num_sentences": rng.randint(3, 10) if relation == "at least" else rng.randint(4, 12)}


def _words(rng: random.Random) -> dict[str, Any]:
    relation = rng.choice(RELATIONS)
    return {"relation": relation, "num_words": rng.randrange(100, 451, 50) if relation == "at least" else rng.randrange(80, 301, 20)}


def _end_phrase(rng: random.Random) -> dict[str, Any]:
    return {"end_phrase": rng.choice(END_PHRASES)}


def _conjunctions(rng: random.Random) -> dict[str, Any]:
    return {"small_n": rng.randint(2, 5)}


def _keywords_multiple(rng: random.Random) -> dict[str, Any]:
    return {f"keyword{i}": word for i, word in enumerate(rng.sample(CONTENT_WORDS, 5), start=1)}


def _numbers(rng: random.Random) -> dict[str, Any]:
    return {"N": rng.randint(1, 8)}


def _pronouns(rng: random.Random) -> dict[str, Any]:
    return {"N": rng.randint(5, 25)}


def _unique_words(rng: random.Random) -> dict[str, Any]:
    return {"N": rng.randrange(30, 151, 10)}


def _word_range(rng: random.Random) -> dict[str, Any]:
    low = rng.randrange(40, 241, 10)
    return {"min_words": low, "max_words": low + rng.randrange(10, 61, 5)}


def _japanese(rng: random.Random) -> dict[str, Any]:
    return {"N": rng.randint(2, 8)}


def _list_marker(rng: random.Random) -> dict[str, Any]:
    return {"sep": rng.choice(LIST_MARKERS)}


def _options(rng: random.Random) -> dict[str, Any]:
    return {"options": rng.choice(ANSWER_OPTIONS)}


def _stop_words(rng: random.Random) -> dict[str, Any]:
    return {"percentage": rng.randrange(25, 51, 5)}


def _increment(rng: random.Random) -> dict[str, Any]:
    return {"small_n": rng.randint(1, 4)}


def _sentence_keyword(rng: random.Random) -> dict[str, Any]:
    return {"word": rng.choice(CONTENT_WORDS), "N": rng.randint(1, 5)}


def _keyword_position(rng: random.Random) -> dict[str, Any]:
    return {"keyword": rng.choice(CONTENT_WORDS), "n": rng.randint(1, 4), "m": rng.randint(1, 8)}


def _repeats(rng: random.Random) -> dict[str, Any]:
    return {"small_n": rng.randint(2, 5)}


def _second_words(rng: random.Random) -> dict[str, Any]:
    return {"keyword": rng.choice(CONTENT_WORDS)}


def _span(rng: random.Random, noun: str, low: tuple[int, int, int], high: tuple[int, int, int]) -> dict[str, Any]:
    """text:* counts: a minimum, a maximum, or both (each bound optional in those verifiers)."""
    shape = rng.choice(("min", "max", "both"))
    if shape == "max":
        return {f"max_{noun}": rng.randrange(*high)}
    minimum = rng.randrange(*low)
    return {f"min_{noun}": minimum} if shape == "min" else {f"min_{noun}": minimum, f"max_{noun}": minimum + rng.randrange(*high)}


def _text_words(rng: random.Random) -> dict[str, Any]:
    return _span(rng, "words", (50, 301, 25), (40, 201, 20))


def _text_sentences(rng: random.Random) -> dict[str, Any]:
    return _span(rng, "sentences", (2, 9, 1), (3, 11, 1))


SAMPLERS: dict[str, Sampler] = {
    # IFEval
    "change_case:capital_word_frequency": _capital_words,
    "change_case:english_capital": _nothing,
    "change_case:english_lowercase": _nothing,
    "combination:two_responses": _nothing,
    "detectable_content:number_placeholders": _placeholders,
    "detectable_content:postscript": _postscript,
    "detectable_format:constrained_response": _nothing,
    "detectable_format:json_format": _nothing,
    "detectable_format:multiple_sections": _sections,
    "detectable_format:number_bullet_lists": _bullets,
    "detectable_format:number_highlighted_sections": _highlights,
    "detectable_format:title": _nothing,
    "keywords:existence": _keywords,
    "keywords:forbidden_words": _forbidden,
    "keywords:frequency": _keyword_frequency,
    "keywords:letter_frequency": _letter_frequency,
    "language:response_language": _language,
    "length_constraints:nth_paragraph_first_word": _nth_paragraph,
    "length_constraints:number_paragraphs": _paragraphs,
    "length_constraints:number_sentences": _sentences,
    "length_constraints:number_words": _words,
    "punctuation:no_comma": _nothing,
    "startend:end_checker": _end_phrase,
    "startend:quotation": _nothing,
    # IFBench
    "count:conjunctions": _conjunctions,
    "count:keywords_multiple": _keywords_multiple,
    "count:numbers": _numbers,
    "count:pronouns": _pronouns,
    "count:punctuation": _nothing,
    "count:unique_word_count": _unique_words,
    "count:word_count_range": _word_range,
    "count:words_japanese": _japanese,
    "format:emoji": _nothing,
    "format:line_indent": _nothing,
    "format:list": _list_marker,
    "format:newline": _nothing,
    "format:no_bullets_bullets": _nothing,
    "format:no_whitespace": _nothing,
    "format:options": _options,
    "format:output_template": _nothing,
    "format:parentheses": _nothing,
    "format:quote_unquote": _nothing,
    "format:quotes": _nothing,
    "format:sub-bullets": _nothing,
    "format:thesis": _nothing,
    "format:title_case": _nothing,
    "ratio:sentence_balance": _nothing,
    "ratio:sentence_type": _nothing,
    "ratio:sentence_words": _nothing,
    "ratio:stop_words": _stop_words,
    "repeat:repeat_simple": _nothing,
    "sentence:alliteration_increment": _nothing,
    "sentence:increment": _increment,
    "sentence:keyword": _sentence_keyword,
    "words:alphabet": _nothing,
    "words:consonants": _nothing,
    "words:keywords_specific_position": _keyword_position,
    "words:last_first": _nothing,
    "words:no_consecutive": _nothing,
    "words:odd_even_syllables": _nothing,
    "words:palindrome": _nothing,
    "words:paragraph_last_first": _nothing,
    "words:prime_lengths": _nothing,
    "words:repeats": _repeats,
    "words:start_verb": _nothing,
    "words:vowel": _nothing,
    "words:words_position": _second_words,
    # bineval's own
    "text:no_repeated_words": _nothing,
    "text:sentence_capitals": _nothing,
    "text:sentence_count": _text_sentences,
    "text:word_count": _text_words,
}
