"""Code verifiers for the 25 IFEval instructions, following google-research's
``instruction_following_eval`` semantics without NLTK (punkt and Treebank are mimicked here)."""

from __future__ import annotations

import json
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path

from langdetect import DetectorFactory, detect
from langdetect.detector_factory import PROFILES_DIRECTORY
from langdetect.lang_detect_exception import LangDetectException

from bineval_dspy.verifiers.registry import Check, register

_RELATIONS = ("less than", "at least")
_CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


# --------------------------------------------------------------------------- kwargs


def _count_arg(name: str, value: object, minimum: int = 0) -> int:
    """Validate an integer kwarg, so a bad suite row fails at build time rather than silently."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def _relation_arg(name: str, value: object) -> str:
    """Validate a comparison kwarg; IFEval only knows 'less than' and 'at least'."""
    if value not in _RELATIONS:
        raise ValueError(f"{name} must be one of {_RELATIONS}, got {value!r}")
    return str(value)


def _text_arg(name: str, value: object) -> str:
    """Validate a string kwarg and strip it, as IFEval strips its phrases and markers."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value.strip()


def _words_arg(name: str, value: object) -> list[str]:
    """Validate a list-of-words kwarg (a bare string would otherwise be read as letters)."""
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise ValueError(f"{name} must be a non-empty list of strings, got {value!r}")
    return [_text_arg(name, word) for word in value]


def _compare(actual: int, relation: str, threshold: int) -> bool:
    """IFEval's two relations: 'less than' is strict, 'at least' is inclusive."""
    return actual < threshold if relation == "less than" else actual >= threshold


# --------------------------------------------------------------------------- text helpers


def _count_words(text: str) -> int:
    """IFEval counts words as runs of \\w characters (NLTK's RegexpTokenizer(r'\\w+'))."""
    return len(re.findall(r"\w+", text))


@cache
def _langdetect_languages() -> frozenset[str]:
    """Language codes langdetect ships profiles for, to reject codes that can never match."""
    return frozenset(path.name for path in Path(PROFILES_DIRECTORY).iterdir())


def _detect_language(text: str) -> str | None:
    """langdetect's language code for ``text`` (seeded for determinism); None when undetectable."""
    DetectorFactory.seed = 0
    try:
        return detect(text)
    except LangDetectException:
        return None


# Punkt-style sentence splitting. IFEval counts sentences with NLTK's pretrained English punkt
# model; this reproduces its algorithm with the model's abbreviation and sentence-starter lists.
# The model's orthographic statistics are approximated: a lowercase next word never starts a
# sentence, and a capitalised one does only when it is a frequent sentence starter.

_PUNKT_ABBREVIATIONS = frozenset(
    """
    a.a a.c a.d a.g a.h a.m a.m.e a.s a.t adm ala ariz aug ave b.f b.v bros c c.i.t c.o.m.b
    c.v calif cie co col colo conn corp cos ct d d.c d.h d.w dec dr e e.f e.h e.l e.m f f.g
    f.j feb fla fri ft g g.d g.f g.k ga gen h h.c h.f h.m i.m.s ill inc j.b j.c j.j j.k j.p
    j.r jan jr k kan ky l l.a l.f l.p lt ltd m m.b.a m.d.c m.j maj mg mich minn mr mrs ms n
    n.c n.d n.h n.j n.m n.v n.y nev nov oct ok okla ore p p.a.m p.m pa ph.d prof r r.a r.h
    r.i r.j r.k r.t rep reps s s.a s.a.y s.c s.g s.p.a s.s sen sep sept sr st sw t t.j tenn
    tues u.k u.n u.s u.s.a u.s.s.r v va vs vt w w.c w.r w.va w.w wash wed wis yr
    """.split()
)
_PUNKT_SENTENCE_STARTERS = frozenset(
    """
    according although among both but despite even he however i if in indeed instead it many
    meanwhile moreover most nevertheless nonetheless nor separately similarly since so some
    sales the there these they this though thus under when while yet
    """.split()
)
_PUNKT_NON_WORD = r"""[)";}\]*:@'({\[!?]"""  # characters that never occur inside a punkt word
_PUNKT_MULTI = r"(?:-{2,}|\.{2,}|(?:\.\s){2,}\.)"  # dash runs and ellipses are single tokens
_PUNKT_WORD_RE = re.compile(
    rf"""{_PUNKT_MULTI}
    | (?=[^("`{{\[:;&\#*@)}}\]\-,])\S+?
      (?=\s|$|{_PUNKT_NON_WORD}|{_PUNKT_MULTI}|,(?=$|\s|{_PUNKT_NON_WORD}|{_PUNKT_MULTI}))
    | \S""",
    re.VERBOSE,
)
_PUNKT_CANDIDATE_RE = re.compile(rf"[.?!](?=(?P<after>{_PUNKT_NON_WORD}|\s+(?P<next>\S+)))")
_PUNKT_REALIGN_RE = re.compile(r"""["')\]}]+?(?:\s+|(?=--)|$)""", re.MULTILINE)
_PUNKT_NUMBER_RE = re.compile(r"^-?[.,]?\d[\d,.-]*\.?$")


@dataclass
class _PunktToken:
    """One punkt word with the sentence-break annotations punkt gives it."""

    text: str
    sentbreak: bool = False
    abbreviation: bool = False
    ellipsis: bool = False

    @property
    def kind(self) -> str:
        """Punkt's word type: lowercased, with numbers collapsed to '##number##'."""
        return _PUNKT_NUMBER_RE.sub("##number##", self.text.lower())

    def kind_without_period(self) -> str:
        """The word type without its final period."""
        return self.kind[:-1] if len(self.kind) > 1 and self.kind.endswith(".") else self.kind

    def starts_sentence(self) -> bool | None:
        """Orthographic guess whether this word opens a sentence (None: no evidence)."""
        if self.text in (";", ":", ",", ".", "!", "?") or self.text[0].islower():
            return False
        kind = self.kind_without_period() if self.sentbreak else self.kind
        if self.text[0].isupper() and kind in _PUNKT_SENTENCE_STARTERS:
            return True
        return None


def _punkt_annotate(token: _PunktToken) -> None:
    """Punkt's first pass: decide from the word alone (break, abbreviation or ellipsis)."""
    text = token.text
    if text in (".", "?", "!"):
        token.sentbreak = True
    elif re.match(r"\.\.+$", text):
        token.ellipsis = True
    elif text.endswith(".") and not text.endswith(".."):
        stem = text[:-1].lower()
        if stem in _PUNKT_ABBREVIATIONS or stem.split("-")[-1] in _PUNKT_ABBREVIATIONS:
            token.abbreviation = True
        else:
            token.sentbreak = True


def _punkt_reconsider(token: _PunktToken, following: _PunktToken) -> None:
    """Punkt's second pass: revise a period-final word in the light of the word after it."""
    if not token.text.endswith("."):
        return
    is_number = token.kind_without_period() == "##number##"
    is_initial = re.match(r"[^\W\d]\.$", token.text) is not None
    opens = following.starts_sentence()
    # "in the U.S. The ...": an abbreviation or ellipsis also ends a sentence before a sentence opener.
    if (token.abbreviation or token.ellipsis) and not is_initial and opens:
        token.sentbreak = True
    # "5. apples", "J. Smith": no break before a lowercase word, nor (initials only) before a
    # capitalised word without sentence-start evidence.
    elif (is_initial or is_number) and (
        opens is False or (opens is None and is_initial and following.text[0].isupper())
    ):
        token.sentbreak = False
        token.abbreviation = True


def _punkt_has_break(context: str) -> bool:
    """Whether punkt puts a sentence break inside ``context`` (a word, its end mark, the next word)."""
    tokens = [_PunktToken(word) for line in context.split("\n") for word in _PUNKT_WORD_RE.findall(line)]
    for token in tokens:
        _punkt_annotate(token)
    for token, following in pairwise(tokens):
        _punkt_reconsider(token, following)
    return any(token.sentbreak for token in tokens[:-1])


def _split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences the way NLTK's English punkt model does (IFEval's counter)."""
    groups: list[tuple[int, re.Match[str]]] = []  # (start of the word, its last end mark)
    for match in _PUNKT_CANDIDATE_RE.finditer(text):
        previous_end = groups[-1][1].start() if groups else 0
        gap = text[previous_end : match.start()]
        space = max((i for i, char in enumerate(gap) if char in string.whitespace), default=0)
        if space:  # as in punkt, whitespace at the very start of the text is not looked at
            word_start = previous_end + space + 1
        else:
            word_start = groups[-1][0] if groups else 0
        if groups and word_start < previous_end:
            groups.pop()  # several end marks in one word ("?!", "!!!") are judged together
        groups.append((word_start, match))

    bounds: list[tuple[int, int]] = []
    start = 0
    for word_start, match in groups:
        if _punkt_has_break(text[word_start : match.end()] + match.group("after")):
            bounds.append((start, match.end()))
            start = match.start("next") if match.group("next") else match.end()
    bounds.append((start, len(text.rstrip())))

    sentences: list[str] = []
    shift = 0
    for index, (begin, end) in enumerate(bounds):
        begin += shift
        shift = 0
        if index + 1 < len(bounds):
            next_begin, next_end = bounds[index + 1]
            closing = _PUNKT_REALIGN_RE.match(text[next_begin:next_end])
            if closing:  # closing quotes/brackets after the end mark stay with this sentence
                end = next_begin + len(closing.group(0).rstrip())
                shift = closing.end()
        if text[begin:end]:
            sentences.append(text[begin:end])
    return sentences


# Treebank-style word tokenization (NLTK's word_tokenize, applied sentence by sentence).
_TREEBANK_OPENING = [
    (re.compile(r"([«“‘„]|`+)"), r" \1 "),
    (re.compile(r'^"'), "``"),
    (re.compile(r"(``)"), r" \1 "),
    (re.compile(r"""([ (\[{<])("|'')"""), r"\1 `` "),
    (re.compile(r"(?i)(')(?!re|ve|ll|m|t|s|d|n)(\w)\b"), r"\1 \2"),
]
_TREEBANK_PUNCTUATION = [
    (re.compile(r"""([^.])(\.)([\]\)}>"'»”’ ]*)\s*$"""), r"\1 \2 \3 "),  # sentence-final period
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),  # comma or colon, except inside numbers
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}"), r" \g<0> "),  # ellipsis
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),  # closing single quote
    (re.compile(r"\*"), r" \g<0> "),
    (re.compile(r"[\]\[(){}<>]"), r" \g<0> "),
    (re.compile(r"--"), r" -- "),
]
_TREEBANK_CLOSING = [
    (re.compile(r"([»”’])"), r" \1 "),
    (re.compile(r"''"), " '' "),
    (re.compile(r'"'), " '' "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),  # clitics: John 's, I 'm
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
]
_TREEBANK_COMPOUNDS = [  # words Treebank splits in two: "cannot" -> "can not", "gonna" -> "gon na", ...
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\b(can)(not)\b",
        r"\b(d)('ye)\b",
        r"\b(gim)(me)\b",
        r"\b(gon)(na)\b",
        r"\b(got)(ta)\b",
        r"\b(lem)(me)\b",
        r"\b(more)('n)\b",
        r"\b(wan)(na)(?=\s)",
        r" ('t)(is)\b",
        r" ('t)(was)\b",
    )
]


def _treebank_tokens(sentence: str) -> list[str]:
    """Tokens of one sentence as NLTK's Treebank-style tokenizer splits them (punctuation, clitics)."""
    for pattern, replacement in _TREEBANK_OPENING + _TREEBANK_PUNCTUATION:
        sentence = pattern.sub(replacement, sentence)
    sentence = f" {sentence} "
    for pattern, replacement in _TREEBANK_CLOSING:
        sentence = pattern.sub(replacement, sentence)
    for pattern in _TREEBANK_COMPOUNDS:
        sentence = pattern.sub(r" \1 \2 ", sentence)
    return sentence.split()


def _word_tokens(text: str) -> list[str]:
    """NLTK ``word_tokenize`` equivalent: punkt sentences, then Treebank tokens per sentence."""
    return [token for sentence in _split_sentences(text) for token in _treebank_tokens(sentence)]


def _paragraph_first_word(paragraph: str) -> str:
    """IFEval's first word of a paragraph: leading quotes dropped, cut at the first punctuation."""
    word = paragraph.split()[0].lstrip("'").lstrip('"')
    return re.split(r"""[.,?!'"]""", word, maxsplit=1)[0].lower()


# --------------------------------------------------------------------------- verifiers


@register("change_case:capital_word_frequency")
def capital_word_frequency(capital_frequency: int, capital_relation: str) -> Check:
    threshold = _count_arg("capital_frequency", capital_frequency)
    relation = _relation_arg("capital_relation", capital_relation)

    def check(response: str) -> bool:
        capitals = sum(token.isupper() for token in _word_tokens(response))
        return _compare(capitals, relation, threshold)

    return check


@register("change_case:english_capital")
def english_capital() -> Check:
    def check(response: str) -> bool:
        # Like IFEval, text langdetect cannot classify counts as English.
        return response.isupper() and _detect_language(response) in ("en", None)

    return check


@register("change_case:english_lowercase")
def english_lowercase() -> Check:
    def check(response: str) -> bool:
        return response.islower() and _detect_language(response) in ("en", None)

    return check


@register("combination:repeat_prompt")
def repeat_prompt(prompt_to_repeat: str) -> Check:
    expected = _text_arg("prompt_to_repeat", prompt_to_repeat).lower()

    def check(response: str) -> bool:
        return response.strip().lower().startswith(expected)

    return check


@register("combination:two_responses")
def two_responses() -> Check:
    def check(response: str) -> bool:
        parts = response.split("******")
        answers = []
        for index, part in enumerate(parts):
            if part.strip():
                answers.append(part.strip())
            elif 0 < index < len(parts) - 1:
                return False  # an empty answer between two separators
        return len(answers) == 2 and answers[0] != answers[1]

    return check


@register("detectable_content:number_placeholders")
def number_placeholders(num_placeholders: int) -> Check:
    minimum = _count_arg("num_placeholders", num_placeholders)

    def check(response: str) -> bool:
        return len(re.findall(r"\[.*?\]", response)) >= minimum

    return check


@register("detectable_content:postscript")
def postscript(postscript_marker: str) -> Check:
    marker = _text_arg("postscript_marker", postscript_marker)
    if marker == "P.P.S":
        pattern = re.compile(r"p\.\s?p\.\s?s")
    elif marker == "P.S.":
        pattern = re.compile(r"p\.\s?s\.")
    else:
        pattern = re.compile(re.escape(marker.lower()))

    def check(response: str) -> bool:
        return pattern.search(response.lower()) is not None

    return check


@register("detectable_format:constrained_response")
def constrained_response() -> Check:
    def check(response: str) -> bool:
        return any(option in response for option in _CONSTRAINED_OPTIONS)

    return check


@register("detectable_format:json_format")
def json_format() -> Check:
    def check(response: str) -> bool:
        text = response.strip()
        for fence in ("```json", "```Json", "```JSON", "```"):
            text = text.removeprefix(fence)
        try:
            json.loads(text.removesuffix("```").strip())
        except ValueError:
            return False
        return True

    return check


@register("detectable_format:multiple_sections")
def multiple_sections(section_spliter: str, num_sections: int) -> Check:
    header = re.compile(r"\s?" + re.escape(_text_arg("section_spliter", section_spliter)) + r"\s?\d+\s?")
    minimum = _count_arg("num_sections", num_sections)

    def check(response: str) -> bool:
        return len(header.findall(response)) >= minimum

    return check


@register("detectable_format:number_bullet_lists")
def number_bullet_lists(num_bullets: int) -> Check:
    expected = _count_arg("num_bullets", num_bullets)
    # As in IFEval, "\s*" may run over blank lines and "[^*]" may be the line's newline.
    star_items = re.compile(r"^\s*\*[^*].*$", re.MULTILINE)
    dash_items = re.compile(r"^\s*-.*$", re.MULTILINE)

    def check(response: str) -> bool:
        return len(star_items.findall(response)) + len(dash_items.findall(response)) == expected

    return check


@register("detectable_format:number_highlighted_sections")
def number_highlighted_sections(num_highlights: int) -> Check:
    minimum = _count_arg("num_highlights", num_highlights)

    def check(response: str) -> bool:
        # IFEval counts *italic* and **bold** spans separately, so "**x**" counts once
        # (its single-star reading, "**", is empty) and "*x*" counts once.
        italic = [span for span in re.findall(r"\*[^\n*]*\*", response) if span.strip("*").strip()]
        bold = [span for span in re.findall(r"\*\*[^\n*]*\*\*", response) if span[2:-2].strip()]
        return len(italic) + len(bold) >= minimum

    return check


@register("detectable_format:title")
def title() -> Check:
    def check(response: str) -> bool:
        titles = re.findall(r"<<[^\n]+>>", response)
        return any(found.lstrip("<").rstrip(">").strip() for found in titles)

    return check


@register("keywords:existence")
def existence(keywords: list[str]) -> Check:
    patterns = [re.compile(re.escape(word), re.IGNORECASE) for word in _words_arg("keywords", keywords)]

    def check(response: str) -> bool:
        return all(pattern.search(response) for pattern in patterns)

    return check


@register("keywords:forbidden_words")
def forbidden_words(forbidden_words: list[str]) -> Check:
    patterns = [
        re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE) for word in _words_arg("forbidden_words", forbidden_words)
    ]

    def check(response: str) -> bool:
        return not any(pattern.search(response) for pattern in patterns)

    return check


@register("keywords:frequency")
def keyword_frequency(keyword: str, frequency: int, relation: str) -> Check:
    # Substring occurrences, case-insensitive, as in IFEval ("cat" counts inside "category").
    pattern = re.compile(re.escape(_text_arg("keyword", keyword)), re.IGNORECASE)
    threshold = _count_arg("frequency", frequency)
    relation = _relation_arg("relation", relation)

    def check(response: str) -> bool:
        return _compare(len(pattern.findall(response)), relation, threshold)

    return check


@register("keywords:letter_frequency")
def letter_frequency(letter: str, let_frequency: int, let_relation: str) -> Check:
    if not isinstance(letter, str) or len(letter) != 1 or not letter.isalpha():
        raise ValueError(f"letter must be a single letter, got {letter!r}")
    target = letter.lower()
    threshold = _count_arg("let_frequency", let_frequency)
    relation = _relation_arg("let_relation", let_relation)

    def check(response: str) -> bool:
        return _compare(response.lower().count(target), relation, threshold)

    return check


@register("language:response_language")
def response_language(language: str) -> Check:
    if language not in _langdetect_languages():
        raise ValueError(f"language must be a langdetect language code, got {language!r}")

    def check(response: str) -> bool:
        # Like IFEval, text langdetect cannot classify counts as followed.
        return _detect_language(response) in (language, None)

    return check


@register("length_constraints:nth_paragraph_first_word")
def nth_paragraph_first_word(num_paragraphs: int, nth_paragraph: int, first_word: str) -> Check:
    expected_count = _count_arg("num_paragraphs", num_paragraphs, minimum=1)
    nth = _count_arg("nth_paragraph", nth_paragraph, minimum=1)
    if nth > expected_count:
        raise ValueError(f"nth_paragraph ({nth}) exceeds num_paragraphs ({expected_count})")
    if not isinstance(first_word, str) or not first_word:
        raise ValueError(f"first_word must be a non-empty string, got {first_word!r}")
    expected_word = first_word.lower()

    def check(response: str) -> bool:
        # Paragraphs are split on "\n\n"; blank ones are not counted, yet (as in IFEval)
        # the nth paragraph is looked up among all pieces, blank ones included.
        pieces = response.split("\n\n")
        count = sum(1 for piece in pieces if piece.strip())
        if nth > count or not pieces[nth - 1].strip():
            return False
        return count == expected_count and _paragraph_first_word(pieces[nth - 1]) == expected_word

    return check


@register("length_constraints:number_paragraphs")
def number_paragraphs(num_paragraphs: int) -> Check:
    expected = _count_arg("num_paragraphs", num_paragraphs)

    def check(response: str) -> bool:
        pieces = re.split(r"\s?\*\*\*\s?", response)
        for index, piece in enumerate(pieces):
            if not piece.strip() and 0 < index < len(pieces) - 1:
                return False  # two dividers with nothing between them
        return sum(1 for piece in pieces if piece.strip()) == expected

    return check


@register("length_constraints:number_sentences")
def number_sentences(num_sentences: int, relation: str) -> Check:
    threshold = _count_arg("num_sentences", num_sentences)
    relation = _relation_arg("relation", relation)

    def check(response: str) -> bool:
        return _compare(len(_split_sentences(response)), relation, threshold)

    return check


@register("length_constraints:number_words")
def number_words(num_words: int, relation: str) -> Check:
    threshold = _count_arg("num_words", num_words)
    relation = _relation_arg("relation", relation)

    def check(response: str) -> bool:
        return _compare(_count_words(response), relation, threshold)

    return check


@register("punctuation:no_comma")
def no_comma() -> Check:
    def check(response: str) -> bool:
        return "," not in response

    return check


@register("startend:end_checker")
def end_checker(end_phrase: str) -> Check:
    ending = _text_arg("end_phrase", end_phrase).lower()

    def check(response: str) -> bool:
        return response.strip().strip('"').lower().endswith(ending)

    return check


@register("startend:quotation")
def quotation() -> Check:
    def check(response: str) -> bool:
        text = response.strip()
        return len(text) > 1 and text.startswith('"') and text.endswith('"')

    return check
