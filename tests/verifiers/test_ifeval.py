"""Unit tests for the IFEval verifiers and their text helpers."""

from __future__ import annotations

import pytest

from bineval_dspy.verifiers import ifeval
from bineval_dspy.verifiers.registry import VerifierError, build_check, follows, known_instruction_ids

IFEVAL_IDS = [
    "change_case:capital_word_frequency",
    "change_case:english_capital",
    "change_case:english_lowercase",
    "combination:repeat_prompt",
    "combination:two_responses",
    "detectable_content:number_placeholders",
    "detectable_content:postscript",
    "detectable_format:constrained_response",
    "detectable_format:json_format",
    "detectable_format:multiple_sections",
    "detectable_format:number_bullet_lists",
    "detectable_format:number_highlighted_sections",
    "detectable_format:title",
    "keywords:existence",
    "keywords:forbidden_words",
    "keywords:frequency",
    "keywords:letter_frequency",
    "language:response_language",
    "length_constraints:nth_paragraph_first_word",
    "length_constraints:number_paragraphs",
    "length_constraints:number_sentences",
    "length_constraints:number_words",
    "punctuation:no_comma",
    "startend:end_checker",
    "startend:quotation",
]

ENGLISH = "The quick brown fox jumps over the lazy dog and runs away into the forest."
FRENCH = "Le renard brun rapide saute par-dessus le chien paresseux et court dans la forêt."


def passes(instruction_id: str, response: str, **kwargs: object) -> bool:
    """Run one verifier in strict mode on ``response``."""
    return follows(build_check(instruction_id, kwargs), response)


def test_all_ifeval_ids_are_registered() -> None:
    assert set(IFEVAL_IDS) <= set(known_instruction_ids())


# --------------------------------------------------------------------------- text helpers


def test_detect_language_is_seeded_and_reports_undetectable_text() -> None:
    assert ifeval._detect_language(ENGLISH) == "en"
    assert ifeval._detect_language(FRENCH) == "fr"
    assert ifeval._detect_language("12345 !!! ???") is None


# --------------------------------------------------------------------------- change_case


def test_capital_word_frequency() -> None:
    response = "THE BIG dog and NASA."  # THE, BIG, NASA
    assert passes("change_case:capital_word_frequency", response, capital_frequency=3, capital_relation="at least")
    assert not passes("change_case:capital_word_frequency", response, capital_frequency=4, capital_relation="at least")
    assert passes("change_case:capital_word_frequency", response, capital_frequency=4, capital_relation="less than")
    assert not passes("change_case:capital_word_frequency", response, capital_frequency=3, capital_relation="less than")


def test_capital_word_frequency_counts_tokens_not_whitespace_words() -> None:
    # NLTK splits clitics and '&': DO + N'T and AT + T are two capital words each.
    assert passes("change_case:capital_word_frequency", "DON'T", capital_frequency=2, capital_relation="at least")
    assert passes("change_case:capital_word_frequency", "AT&T", capital_frequency=2, capital_relation="at least")
    # Hyphenated words stay whole; a mixed-case one is not all capitals.
    assert not passes(
        "change_case:capital_word_frequency", "AI-powered", capital_frequency=1, capital_relation="at least"
    )
    assert passes("change_case:capital_word_frequency", "COVID-19 A", capital_frequency=2, capital_relation="at least")


def test_english_capital() -> None:
    assert passes("change_case:english_capital", ENGLISH.upper())
    assert not passes("change_case:english_capital", ENGLISH)  # not all capitals
    assert not passes("change_case:english_capital", FRENCH.upper())  # capitals, but not English
    # Cased text langdetect cannot classify (Roman numerals) counts as English, as in IFEval.
    assert passes("change_case:english_capital", "Ⅻ 123")


def test_english_lowercase() -> None:
    assert passes("change_case:english_lowercase", ENGLISH.lower())
    assert not passes("change_case:english_lowercase", ENGLISH)  # one capital letter is enough to fail
    assert not passes("change_case:english_lowercase", FRENCH.lower())
    assert not passes("change_case:english_lowercase", "12345 !!!")  # no cased letter: str.islower() is False
    assert passes("change_case:english_lowercase", "ⅻ 123")  # cased but undetectable counts as English


# --------------------------------------------------------------------------- combination


def test_repeat_prompt() -> None:
    prompt = "Write a poem about the sea."
    assert passes("combination:repeat_prompt", "  write a POEM about the sea. Waves...", prompt_to_repeat=prompt)
    assert not passes("combination:repeat_prompt", "Sure! Write a poem about the sea.", prompt_to_repeat=prompt)
    assert not passes("combination:repeat_prompt", "Write a poem about the sea", prompt_to_repeat=prompt)


def test_two_responses() -> None:
    assert passes("combination:two_responses", "First answer.\n******\nSecond answer.")
    assert passes("combination:two_responses", "******\nFirst.\n******\nSecond.\n******")  # outer empties ignored
    assert not passes("combination:two_responses", "Same.\n******\nSame.")
    assert not passes("combination:two_responses", "One.\n******\n\n******\nTwo.")  # empty middle answer
    assert not passes("combination:two_responses", "One.\n******\nTwo.\n******\nThree.")
    assert not passes("combination:two_responses", "One.\n*****\nTwo.")  # five asterisks is no separator


# --------------------------------------------------------------------------- detectable_content


def test_number_placeholders() -> None:
    response = "Dear [name], see you at [address] on []."
    assert passes("detectable_content:number_placeholders", response, num_placeholders=3)
    assert not passes("detectable_content:number_placeholders", response, num_placeholders=4)
    assert not passes("detectable_content:number_placeholders", "A [multi\nline] bracket", num_placeholders=1)


def test_postscript() -> None:
    assert passes("detectable_content:postscript", "Body.\n\nP.S. Call me.", postscript_marker="P.S.")
    assert passes("detectable_content:postscript", "Body.\n\np. s. lowercase works", postscript_marker="P.S.")
    assert not passes("detectable_content:postscript", "Body.\n\nPS Call me.", postscript_marker="P.S.")
    assert passes("detectable_content:postscript", "Body.\nP.P.S more", postscript_marker="P.P.S")
    assert not passes("detectable_content:postscript", "Body.\nP.S. more", postscript_marker="P.P.S")
    # Other markers are matched literally and case-insensitively.
    assert passes("detectable_content:postscript", "Body.\nnote: extra", postscript_marker="Note:")
    assert not passes("detectable_content:postscript", "Body.\nNoteX extra", postscript_marker="Note.")


# --------------------------------------------------------------------------- detectable_format


def test_constrained_response() -> None:
    assert passes("detectable_format:constrained_response", "Well... My answer is maybe.")
    assert not passes("detectable_format:constrained_response", "My answer is yes")  # the period is required
    assert not passes("detectable_format:constrained_response", "my answer is no.")  # case-sensitive


def test_json_format() -> None:
    assert passes("detectable_format:json_format", '{"a": [1, 2]}')
    assert passes("detectable_format:json_format", '```json\n{"a": 1}\n```')
    assert passes("detectable_format:json_format", "```JSON\n[1, 2]\n```")
    assert not passes("detectable_format:json_format", 'Here it is: {"a": 1}')
    assert not passes("detectable_format:json_format", "```python\n{'a': 1}\n```")


def test_multiple_sections() -> None:
    response = "Section 1\nIntro\nSection 2\nBody\nSECTION 3\nEnd"
    assert passes("detectable_format:multiple_sections", response, section_spliter="Section", num_sections=2)
    assert not passes("detectable_format:multiple_sections", response, section_spliter="Section", num_sections=3)
    assert passes("detectable_format:multiple_sections", response, section_spliter=" SECTION ", num_sections=1)
    assert not passes(
        "detectable_format:multiple_sections", "Section one\nSection two", section_spliter="Section", num_sections=1
    )


def test_number_bullet_lists() -> None:
    response = "Intro\n* one\n* two\n- three\n  - nested four\n**bold** is not a bullet"
    assert passes("detectable_format:number_bullet_lists", response, num_bullets=4)
    assert not passes("detectable_format:number_bullet_lists", response, num_bullets=3)
    assert not passes("detectable_format:number_bullet_lists", response, num_bullets=5)
    assert passes("detectable_format:number_bullet_lists", "1. numbered\n2. list", num_bullets=0)


def test_number_highlighted_sections() -> None:
    assert passes("detectable_format:number_highlighted_sections", "*one* and **two**", num_highlights=2)
    assert not passes("detectable_format:number_highlighted_sections", "*one* and **two**", num_highlights=3)
    assert not passes("detectable_format:number_highlighted_sections", "** ** and * *", num_highlights=1)
    assert not passes("detectable_format:number_highlighted_sections", "*across\nlines*", num_highlights=1)


def test_title() -> None:
    assert passes("detectable_format:title", "<<Poem of Joy>>\nLines...")
    assert not passes("detectable_format:title", "<< >> no title")
    assert not passes("detectable_format:title", "<<Broken\ntitle>>")
    assert not passes("detectable_format:title", "<Single brackets>")


# --------------------------------------------------------------------------- keywords


def test_existence() -> None:
    assert passes("keywords:existence", "The OCEAN is blue.", keywords=["ocean", "blue"])
    assert passes("keywords:existence", "Oceans everywhere", keywords=["ocean"])  # substring match
    assert not passes("keywords:existence", "The ocean is green.", keywords=["ocean", "blue"])
    assert not passes("keywords:existence", "Dr Who", keywords=["Dr."])  # matched literally, not as a regex


def test_forbidden_words() -> None:
    assert passes("keywords:forbidden_words", "Cats are nice.", forbidden_words=["cat"])  # whole words only
    assert not passes("keywords:forbidden_words", "A CAT sat.", forbidden_words=["dog", "cat"])
    assert passes("keywords:forbidden_words", "A dog sat.", forbidden_words=["do"])


def test_keyword_frequency() -> None:
    response = "Cat, cat and category."  # three case-insensitive substring hits
    assert passes("keywords:frequency", response, keyword="cat", frequency=3, relation="at least")
    assert not passes("keywords:frequency", response, keyword="cat", frequency=4, relation="at least")
    assert passes("keywords:frequency", response, keyword="cat", frequency=4, relation="less than")
    assert not passes("keywords:frequency", response, keyword="cat", frequency=3, relation="less than")


def test_letter_frequency() -> None:
    response = "Banana AND apple"  # five a/A
    assert passes("keywords:letter_frequency", response, letter="A", let_frequency=5, let_relation="at least")
    assert not passes("keywords:letter_frequency", response, letter="a", let_frequency=6, let_relation="at least")
    assert passes("keywords:letter_frequency", response, letter="a", let_frequency=6, let_relation="less than")
    assert not passes("keywords:letter_frequency", response, letter="a", let_frequency=5, let_relation="less than")


# --------------------------------------------------------------------------- language


def test_response_language_accepts_every_ifeval_language_code() -> None:
    codes = "en es pt ar hi fr ru de ja it bn uk th ur ta te bg ko pl he fa vi ne sw kn mr gu pa ml fi".split()
    for code in codes:
        finding = build_check("language:response_language", {"language": code})("12345 !!!")
        assert finding.passed and finding.detail.startswith("asked for ")  # built, and checks a response
    with pytest.raises(VerifierError, match="langdetect language code"):
        build_check("language:response_language", {"language": "xx"})


def test_response_language() -> None:
    assert passes("language:response_language", FRENCH, language="fr")
    assert not passes("language:response_language", ENGLISH, language="fr")
    assert passes("language:response_language", "12345 !!!", language="fr")  # undetectable counts as followed


# --------------------------------------------------------------------------- length_constraints


def test_nth_paragraph_first_word() -> None:
    response = 'Intro text.\n\n"Second," she said.\n\nThird one.'
    kwargs = {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "second"}
    assert passes("length_constraints:nth_paragraph_first_word", response, **kwargs)
    assert passes("length_constraints:nth_paragraph_first_word", response, **{**kwargs, "first_word": "SECOND"})
    assert not passes("length_constraints:nth_paragraph_first_word", response, **{**kwargs, "num_paragraphs": 2})
    assert not passes("length_constraints:nth_paragraph_first_word", response, **{**kwargs, "first_word": "intro"})
    assert not passes("length_constraints:nth_paragraph_first_word", "One\nTwo", **{**kwargs, "num_paragraphs": 2})


def test_nth_paragraph_first_word_looks_up_blank_pieces_like_ifeval() -> None:
    # A blank piece is not counted as a paragraph, but it still occupies its index.
    response = "First\n\n\n\nSecond"  # pieces: "First", "", "Second" -> 2 paragraphs
    kwargs = {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "second"}
    assert not passes("length_constraints:nth_paragraph_first_word", response, **kwargs)
    assert passes("length_constraints:nth_paragraph_first_word", "First\n\nSecond", **kwargs)


def test_number_paragraphs() -> None:
    response = "One\n***\nTwo\n***\nThree"
    assert passes("length_constraints:number_paragraphs", response, num_paragraphs=3)
    assert not passes("length_constraints:number_paragraphs", response, num_paragraphs=2)
    assert passes("length_constraints:number_paragraphs", "***\nOne\n***\nTwo\n***", num_paragraphs=2)
    assert not passes("length_constraints:number_paragraphs", "One\n***\n***\nTwo", num_paragraphs=2)
    assert passes("length_constraints:number_paragraphs", "One\n\nstill one", num_paragraphs=1)


def test_number_sentences() -> None:
    response = "Dr. Smith came. He sat down! Did he stay?"  # three sentences
    assert passes("length_constraints:number_sentences", response, num_sentences=3, relation="at least")
    assert not passes("length_constraints:number_sentences", response, num_sentences=4, relation="at least")
    assert passes("length_constraints:number_sentences", response, num_sentences=4, relation="less than")
    assert not passes("length_constraints:number_sentences", response, num_sentences=3, relation="less than")


def test_number_words() -> None:
    response = "It's a well-known fact."  # It s a well known fact
    assert passes("length_constraints:number_words", response, num_words=6, relation="at least")
    assert not passes("length_constraints:number_words", response, num_words=7, relation="at least")
    assert passes("length_constraints:number_words", response, num_words=7, relation="less than")
    assert not passes("length_constraints:number_words", response, num_words=6, relation="less than")


# --------------------------------------------------------------------------- punctuation / startend


def test_no_comma() -> None:
    assert passes("punctuation:no_comma", "No commas here; none at all.")
    assert not passes("punctuation:no_comma", "One, two.")
    assert passes("punctuation:no_comma", "A full-width comma，is not ASCII.")


def test_end_checker() -> None:
    assert passes("startend:end_checker", "Done. Any other questions?  ", end_phrase="Any other questions?")
    assert passes("startend:end_checker", '"Done. any OTHER questions?"', end_phrase="Any other questions?")
    assert not passes("startend:end_checker", "Any other questions? Bye.", end_phrase="Any other questions?")


def test_quotation() -> None:
    assert passes("startend:quotation", '  "Wrapped in quotes."  ')
    assert not passes("startend:quotation", '"Only at the start.')
    assert not passes("startend:quotation", '"')
    assert not passes("startend:quotation", "“Curly quotes do not count.”")


# --------------------------------------------------------------------------- loose mode and kwargs


def test_loose_mode_forgives_a_leading_line() -> None:
    response = "Sure, here it is:\n<<Title>>"
    assert not passes("punctuation:no_comma", response)
    assert follows(build_check("punctuation:no_comma", {}), response, mode="loose")


@pytest.mark.parametrize(
    ("instruction_id", "kwargs"),
    [
        ("length_constraints:number_words", {"num_words": 10, "relation": "at most"}),
        ("length_constraints:number_words", {"num_words": -1, "relation": "at least"}),
        ("length_constraints:number_sentences", {"num_sentences": "3", "relation": "at least"}),
        ("length_constraints:number_sentences", {"relation": "at least"}),
        ("keywords:letter_frequency", {"letter": "ab", "let_frequency": 2, "let_relation": "at least"}),
        ("keywords:letter_frequency", {"letter": "1", "let_frequency": 2, "let_relation": "at least"}),
        ("keywords:existence", {"keywords": []}),
        ("keywords:existence", {"keywords": "ocean"}),
        ("keywords:forbidden_words", {"forbidden_words": ["ok", " "]}),
        ("keywords:frequency", {"keyword": "cat", "frequency": True, "relation": "at least"}),
        ("language:response_language", {"language": "english"}),
        ("length_constraints:nth_paragraph_first_word", {"num_paragraphs": 2, "nth_paragraph": 3, "first_word": "a"}),
        ("length_constraints:nth_paragraph_first_word", {"num_paragraphs": 2, "nth_paragraph": 0, "first_word": "a"}),
        ("detectable_format:multiple_sections", {"section_spliter": "", "num_sections": 2}),
        ("detectable_content:postscript", {"postscript_marker": "  "}),
        ("combination:repeat_prompt", {"prompt_to_repeat": ""}),
        ("startend:end_checker", {"end_phrase": ""}),
        ("punctuation:no_comma", {"unexpected": 1}),
    ],
)
def test_bad_kwargs_are_rejected(instruction_id: str, kwargs: dict[str, object]) -> None:
    with pytest.raises(VerifierError):
        build_check(instruction_id, kwargs)


def test_bad_kwargs_error_names_the_instruction_and_the_kwarg() -> None:
    # The suite layer reports this message as the reason the instruction is ungraded.
    kwargs = {"letter": "#", "let_frequency": 4, "let_relation": "at least"}
    with pytest.raises(VerifierError, match=r"^keywords:letter_frequency: bad kwargs \(letter must be a single letter"):
        build_check("keywords:letter_frequency", kwargs)


def test_counts_may_be_integral_floats_as_in_ifbench_rows() -> None:
    assert passes("length_constraints:number_words", "one two three", num_words=3.0, relation="at least")


def test_language_detection_is_the_same_when_threads_start_it_together():
    """langdetect fills its global factory on first use; threads arriving meanwhile must not detect from half of it."""
    import threading

    import langdetect.detector_factory as factory

    from bineval_dspy.verifiers.ifeval import _detect_language

    texts = ["Ceci est une phrase en français, assez longue pour être reconnue.", "Das ist ein deutscher Satz, lang genug."] * 4
    expected = [_detect_language(t) for t in texts]
    factory._factory = None  # as in a fresh process
    barrier = threading.Barrier(len(texts))
    found: list[str | None] = [None] * len(texts)

    def one(k: int) -> None:
        barrier.wait()
        found[k] = _detect_language(texts[k])

    threads = [threading.Thread(target=one, args=(k,)) for k in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == expected == ["fr", "de"] * 4
