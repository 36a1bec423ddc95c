"""Text primitives shared by the code verifiers: NLTK-free stand-ins for the splitters and
tokenizers the official IFEval and IFBench graders call, so every verifier cuts text one way."""

from __future__ import annotations

import re
import string
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

PUNCTUATION_AND_SPACE = string.punctuation + " "
_DELETE_PUNCTUATION = str.maketrans("", "", string.punctuation)


def delete_ascii_punctuation(text: str) -> str:
    """``text`` with every ASCII punctuation character deleted (the graders' usual cleanup)."""
    return text.translate(_DELETE_PUNCTUATION)


def trim_punctuation(word: str) -> str:
    """``word`` with ASCII punctuation and spaces trimmed from both ends, as the graders do per word."""
    return word.strip(PUNCTUATION_AND_SPACE)


def word_runs(text: str) -> list[str]:
    """The runs of ``\\w`` characters: the graders' word count (NLTK ``RegexpTokenizer(r"\\w+")``)."""
    return re.findall(r"\w+", text)


# --- Punkt sentence splitting (``nltk.sent_tokenize``) ----------------------------------------
# A re-implementation of Punkt's decision procedure with the pretrained English model's
# abbreviation and sentence-starter lists. The model's orthographic statistics (how often each
# word type was seen capitalised, sentence-initially, ...) are approximated in ``_ortho_heuristic``.

_ABBREVIATIONS = frozenset(
    """
    a.a a.c a.d a.g a.h a.m a.m.e a.s a.t adm ala ariz ave aug b.f b.v bros c c.i.t c.o.m.b
    c.v calif cie chg co col colo conn corp cos ct d d.c d.h d.w dec dr e e.f e.h e.l e.m f
    f.g f.j feb fla fri ft g g.d g.f g.k ga gen h h.c h.f h.m i.m.s ill inc j.b j.c j.j j.k
    j.p j.r jan jr k kan ky l l.a l.f l.p lt ltd m m.b.a m.d.c m.j maj messrs mg mich minn
    mr mrs ms n n.c n.d n.h n.j n.m n.v n.y nev nov oct ok okla ore p p.a.m p.m pa ph.d prof
    r r.a r.h r.i r.j r.k r.t rep reps s s.a s.a.y s.c s.g s.p.a s.s sen sep sept sr st sw t
    t.j tenn tues u.k u.n u.s u.s.a u.s.s.r v va vs vt w w.c w.r w.va w.w wash wed wis yr
    """.split()
) | {". . "}

_SENTENCE_STARTERS = frozenset(
    """
    according although among both but despite even he however i if in indeed instead it
    many meanwhile moreover most nevertheless nonetheless nor sales separately similarly since
    so some the there these they this though thus under when while yet
    """.split()
)

_NON_WORD = r"(?:[?!)\";}\]\*:@\'\({\[])"  # characters that never occur inside a Punkt word
_MULTI_CHAR = r"(?:\-{2,}|\.{2,}|(?:\.\s){2,}\.)"  # dash runs and ellipses are single tokens
_PUNKT_WORD_RE = re.compile(
    rf"""{_MULTI_CHAR}
    | (?=[^\(\"\`{{\[:;&\#\*@\)}}\]\-,])\S+?
      (?=\s|$|{_NON_WORD}|{_MULTI_CHAR}|,(?=$|\s|{_NON_WORD}|{_MULTI_CHAR}))
    | \S""",
    re.VERBOSE,
)
_PERIOD_CONTEXT_RE = re.compile(rf"[.?!](?=(?P<after_tok>{_NON_WORD}|\s+(?P<next_tok>\S+)))")
_REALIGN_RE = re.compile(r'["\')\]}]+?(?:\s+|(?=--)|$)', re.MULTILINE)
_NUMBER_RE = re.compile(r"^-?[\.,]?\d[\d,\.-]*\.?$")
_INITIAL_RE = re.compile(r"[^\W\d]\.$")
_ELLIPSIS_RE = re.compile(r"\.\.+$")
_NUMBER_TYPE = "##number##"


@dataclass
class _PunktToken:
    """One Punkt word token and the sentence-break flags the annotation passes set on it."""

    text: str
    sentbreak: bool = False
    abbreviation: bool = False
    ellipsis: bool = False

    @property
    def type(self) -> str:
        """Punkt's word type: lower-cased, with numbers collapsed to '##number##'."""
        return _NUMBER_RE.sub(_NUMBER_TYPE, self.text.lower())

    @property
    def type_no_period(self) -> str:
        """The word type without its final period."""
        kind = self.type
        return kind[:-1] if len(kind) > 1 and kind.endswith(".") else kind

    @property
    def type_no_sentperiod(self) -> str:
        """The word type without a final period that ends a sentence."""
        return self.type_no_period if self.sentbreak else self.type

    @property
    def is_initial(self) -> bool:
        """A single letter and a period ("J.")."""
        return bool(_INITIAL_RE.match(self.text))


def _ortho_heuristic(token: _PunktToken) -> bool | None:
    """Punkt's orthographic vote on ``token`` starting a sentence: True, False or None (unknown).

    The model's counts are approximated: a lower-case word never starts a sentence, a capitalised
    one does only when it is a frequent sentence starter.
    """
    if token.text in ";:,.!?":
        return False
    if token.text[0].isupper():
        return True if token.type_no_sentperiod in _SENTENCE_STARTERS else None
    if token.text[0].islower():
        return False
    return None


def _annotate(tokens: list[_PunktToken]) -> None:
    """Run Punkt's two annotation passes (token-level, then pairwise heuristics) in place."""
    for token in tokens:
        text = token.text
        if text in (".", "?", "!"):
            token.sentbreak = True
        elif _ELLIPSIS_RE.match(text):
            token.ellipsis = True
        elif text.endswith(".") and not text.endswith(".."):
            stem = text[:-1].lower()
            if stem in _ABBREVIATIONS or stem.split("-")[-1] in _ABBREVIATIONS:
                token.abbreviation = True
            else:
                token.sentbreak = True
    for token, following in pairwise(tokens):
        if not token.text.endswith("."):
            continue
        # "in the U.S. The ...": an abbreviation or ellipsis also ends a sentence before a starter.
        if (token.abbreviation or token.ellipsis) and not token.is_initial and _ortho_heuristic(following):
            token.sentbreak = True
            continue
        # "5. apples", "J. Smith": no break before a lower-case word, nor (initials only) before
        # a capitalised word without sentence-start evidence.
        if token.is_initial or token.type_no_period == _NUMBER_TYPE:
            vote = _ortho_heuristic(following)
            if vote is False or (vote is None and token.is_initial and following.text[0].isupper()):
                token.sentbreak = False
                token.abbreviation = True


def _has_sentence_break(context: str) -> bool:
    """Whether Punkt breaks a sentence inside ``context`` (a break needs a token after it)."""
    tokens = [_PunktToken(word) for line in context.split("\n") for word in _PUNKT_WORD_RE.findall(line)]
    _annotate(tokens)
    return any(token.sentbreak for token in tokens[:-1])


def _last_whitespace_index(text: str) -> int:
    """Index of the last whitespace character, 0 when none (Punkt's own convention)."""
    for i in range(len(text) - 1, -1, -1):
        if text[i] in string.whitespace:
            return i
    return 0


def _candidate_breaks(text: str) -> Iterator[tuple[re.Match[str], str]]:
    """Each '.', '?' or '!' that may end a sentence (the last of a word), with the context Punkt judges it by."""
    previous: re.Match[str] | None = None
    previous_span = (0, 0)
    for match in _PERIOD_CONTEXT_RE.finditer(text):
        before = text[previous_span[1] : match.start()]
        start = _last_whitespace_index(before)
        start = start + previous_span[1] + 1 if start else previous_span[0]
        if previous and previous_span[1] <= start:
            yield previous, text[previous_span[0] : previous_span[1]] + previous.group() + previous.group("after_tok")
        previous, previous_span = match, (start, match.start())
    if previous:
        yield previous, text[previous_span[0] : previous_span[1]] + previous.group() + previous.group("after_tok")


def _sentence_spans(text: str) -> Iterator[tuple[int, int]]:
    """Punkt's raw sentence spans, before closing quotes and brackets are realigned."""
    last_break = 0
    for match, context in _candidate_breaks(text):
        if _has_sentence_break(context):
            yield last_break, match.end()
            last_break = match.start("next_tok") if match.group("next_tok") else match.end()
    yield last_break, len(text.rstrip())


def split_sentences_punkt(text: str) -> list[str]:
    """Sentences of ``text`` as ``nltk.sent_tokenize`` (English Punkt) cuts them: after . ? !, never at newlines."""
    spans = list(_sentence_spans(text))
    sentences = []
    shift = 0
    for (start, end), following in zip(spans, [*spans[1:], None]):
        start += shift
        shift = 0
        if following is not None:
            closing = _REALIGN_RE.match(text[following[0] : following[1]])
            if closing:  # closing quotes/brackets after the end mark stay with this sentence
                end = following[0] + len(closing.group(0).rstrip())
                shift = closing.end()
        if text[start:end]:
            sentences.append(text[start:end])
    return sentences


# --- Treebank word tokenization (``nltk.word_tokenize``) -------------------------------------

_TREEBANK_STEPS: list[tuple[re.Pattern[str], str]] = [
    # opening quotes
    (re.compile(r"([«“‘„]|[`]+)"), r" \1 "),
    (re.compile(r'^"'), r"``"),
    (re.compile(r"(``)"), r" \1 "),
    (re.compile(r"([ \(\[{<])(\"|\'{2})"), r"\1 `` "),
    (re.compile(r"(?i)(\')(?!re|ve|ll|m|t|s|d|n)(\w)\b"), r"\1 \2"),
    # punctuation
    (re.compile(r"([^\.])(\.)([\]\)}>\"\'»”’ ]*)\s*$"), r"\1 \2 \3 "),  # the sentence-final period
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),  # comma or colon, except inside numbers
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}"), r" \g<0> "),  # ellipsis
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),  # closing single quote
    (re.compile(r"[*]"), r" \g<0> "),
    # brackets and double dashes
    (re.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> "),
    (re.compile(r"--"), r" -- "),
]
_TREEBANK_CLOSING_STEPS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"([»”’])"), r" \1 "),
    (re.compile(r"''"), " '' "),
    (re.compile(r'"'), " '' "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),  # clitics: John 's, I 'm
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
    # words Treebank splits in two: "cannot" -> "can not", "gonna" -> "gon na", ...
    (re.compile(r"(?i)\b(can)(not)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(d)('ye)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(gim|lem)(me)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(gon)(na)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(got)(ta)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(more)('n)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(wan)(na)(?=\s)"), r" \1 \2 "),
    (re.compile(r"(?i) ('t)(is|was)\b"), r" \1 \2 "),
]


def treebank_tokens(sentence: str) -> list[str]:
    """Tokens of one sentence under NLTK's improved Treebank rules (punctuation and clitics split off)."""
    for pattern, replacement in _TREEBANK_STEPS:
        sentence = pattern.sub(replacement, sentence)
    sentence = f" {sentence} "
    for pattern, replacement in _TREEBANK_CLOSING_STEPS:
        sentence = pattern.sub(replacement, sentence)
    return sentence.split()


def word_tokenize_nltk(text: str) -> list[str]:
    """``nltk.word_tokenize``: Punkt sentences first (so a sentence-final period is its own token), then Treebank."""
    return [token for sentence in split_sentences_punkt(text) for token in treebank_tokens(sentence)]
