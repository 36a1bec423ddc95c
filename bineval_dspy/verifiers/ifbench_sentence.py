"""IFBench ``sentence:*`` verifiers, and the text splitters all IFBench verifier modules share:
IFEval's rule-based sentence splitter and NLTK-compatible Punkt and Treebank tokenizers."""

from __future__ import annotations

import re
import string
from collections.abc import Iterator
from dataclasses import dataclass

from bineval_dspy.verifiers.registry import Check, register

# --- rule-based sentence splitting --------------------------------------------------------
# The sentence-level IFBench checks split sentences with IFEval's rule-based splitter: every
# '.', '?' and '!' ends a sentence, except in a few protected patterns (Mr./Dr. titles, single
# letters and acronyms, decimals, web domains, ellipses). A period or '!'/'?' just before a
# closing double quote is moved after it, so the sentence still ends with that mark.

_TITLES_RE = re.compile(r"(Mr|St|Mrs|Ms|Dr)[.]")
_DOMAIN_RE = re.compile(r"[.](com|net|org|io|gov|edu|me)")
_DECIMAL_RE = re.compile(r"([0-9])[.]([0-9])")
_DOTS_RE = re.compile(r"\.{2,}")
_SENTENCE_OPENERS = (
    r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s"
    r"|However\s|That\s|This\s|Wherever)"
)
_LETTER = "([A-Za-z])"
_COMPANY_SUFFIX = "(Inc|Ltd|Jr|Sr|Co)"
_PROTECTION_STEPS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\s{_LETTER}[.] "), r" \1<prd> "),
    (re.compile(rf"([A-Z][.][A-Z][.](?:[A-Z][.])?) {_SENTENCE_OPENERS}"), r"\1<stop> \2"),
    (re.compile(rf"{_LETTER}[.]{_LETTER}[.]{_LETTER}[.]"), r"\1<prd>\2<prd>\3<prd>"),
    (re.compile(rf"{_LETTER}[.]{_LETTER}[.]"), r"\1<prd>\2<prd>"),
    (re.compile(rf" {_COMPANY_SUFFIX}[.] {_SENTENCE_OPENERS}"), r" \1<stop> \2"),
    (re.compile(rf" {_COMPANY_SUFFIX}[.]"), r" \1<prd>"),
    (re.compile(rf" {_LETTER}[.]"), r" \1<prd>"),
]


def _split_sentences(text: str) -> list[str]:
    """Split ``text`` into stripped sentences with IFEval's rule-based splitter."""
    text = f" {text}  ".replace("\n", " ")
    text = _TITLES_RE.sub(r"\1<prd>", text)
    text = _DOMAIN_RE.sub(r"<prd>\1", text)
    text = _DECIMAL_RE.sub(r"\1<prd>\2", text)
    text = _DOTS_RE.sub(lambda dots: "<prd>" * len(dots.group(0)) + "<stop>", text)
    text = text.replace("Ph.D.", "Ph<prd>D<prd>")
    for pattern, replacement in _PROTECTION_STEPS:
        text = pattern.sub(replacement, text)
    text = text.replace(".”", "”.").replace('."', '".').replace('!"', '"!').replace('?"', '"?')
    for mark in ".?!":
        text = text.replace(mark, mark + "<stop>")
    sentences = [sentence.strip() for sentence in text.replace("<prd>", ".").split("<stop>")]
    return sentences[:-1] if sentences and not sentences[-1] else sentences


# --- Punkt sentence splitting ------------------------------------------------------------
# ``nltk.word_tokenize`` first splits sentences with NLTK's pretrained English Punkt model
# (its Treebank rules only detach a sentence-final period). Below is a re-implementation of
# Punkt's decision procedure with the model's abbreviation and sentence-starter lists. The
# model's orthographic statistics (how often each word type was seen capitalised,
# sentence-initially, ...) are approximated; see ``_ortho_heuristic``.

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

# Words that, capitalised after an abbreviation or ellipsis, Punkt's statistics mark as
# starting a new sentence. Stand-in for the model's per-word orthographic counts.
_USUALLY_LOWERCASE = _SENTENCE_STARTERS | frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both by can did do does doing down during each few for from further
    had has have having her here hers herself him himself his how into is its itself just me
    more my myself no not now of off on once only or other our ours ourselves out over own
    same she should such than that their theirs them themselves then those through to too
    until up very was we were what where which who whom why will with you your yours
    yourself yourselves
    """.split()
)

_NON_WORD = r"(?:[?!)\";}\]\*:@\'\({\[])"
_MULTI_CHAR = r"(?:\-{2,}|\.{2,}|(?:\.\s){2,}\.)"
_WORD_START = r"[^\(\"\`{\[:;&\#\*@\)}\]\-,]"

_PUNKT_WORD_RE = re.compile(
    rf"""(
        {_MULTI_CHAR}
        |
        (?={_WORD_START})\S+?
        (?=\s|$|{_NON_WORD}|{_MULTI_CHAR}|,(?=$|\s|{_NON_WORD}|{_MULTI_CHAR}))
        |
        \S
    )""",
    re.VERBOSE,
)
_PERIOD_CONTEXT_RE = re.compile(
    rf"""[.?!](?=(?P<after_tok>{_NON_WORD}|\s+(?P<next_tok>\S+)))""",
    re.VERBOSE,
)
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
        return _NUMBER_RE.sub(_NUMBER_TYPE, self.text.lower())

    @property
    def type_no_period(self) -> str:
        kind = self.type
        return kind[:-1] if len(kind) > 1 and kind.endswith(".") else kind

    @property
    def type_no_sentperiod(self) -> str:
        return self.type_no_period if self.sentbreak else self.type

    @property
    def is_initial(self) -> bool:
        return bool(_INITIAL_RE.match(self.text))


def _ortho_heuristic(token: _PunktToken) -> bool | None:
    """Punkt's orthographic vote on ``token`` starting a sentence: True, False or None (unknown)."""
    if token.text in ";:,.!?":
        return False
    if token.text[0].isupper():
        return True if token.type_no_sentperiod in _USUALLY_LOWERCASE else None
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
    for token, following in zip(tokens, tokens[1:]):
        if not token.text.endswith("."):
            continue
        if (token.abbreviation or token.ellipsis) and not token.is_initial:
            if _ortho_heuristic(following) is True or (
                following.text[0].isupper() and following.type_no_sentperiod in _SENTENCE_STARTERS
            ):
                token.sentbreak = True
                continue
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
    """Each '.', '?' or '!' that may end a sentence, with the context Punkt judges it by."""
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


def _punkt_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences the way ``nltk.sent_tokenize`` (English Punkt) does."""
    spans = list(_sentence_spans(text))
    sentences = []
    shift = 0
    for (start, end), following in zip(spans, spans[1:] + [None]):
        start += shift
        shift = 0
        if following is not None:
            closing = _REALIGN_RE.match(text[following[0] : following[1]])
            if closing:
                end = following[0] + len(closing.group(0).rstrip())
                shift = closing.end()
        if text[start:end]:
            sentences.append(text[start:end])
    return sentences


# --- Treebank word tokenization ----------------------------------------------------------
# ``nltk.word_tokenize``: Punkt sentences, each split by NLTK's improved Treebank rules.

_TREEBANK_STEPS: list[tuple[re.Pattern[str], str]] = [
    # opening quotes
    (re.compile(r"([«“‘„]|[`]+)"), r" \1 "),
    (re.compile(r'^"'), r"``"),
    (re.compile(r"(``)"), r" \1 "),
    (re.compile(r"([ \(\[{<])(\"|\'{2})"), r"\1 `` "),
    (re.compile(r"(?i)(\')(?!re|ve|ll|m|t|s|d|n)(\w)\b"), r"\1 \2"),
    # punctuation
    (re.compile(r"([^\.])(\.)([\]\)}>\"\'»”’ ]*)\s*$"), r"\1 \2 \3 "),
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}"), r" \g<0> "),
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (re.compile(r"([^\.])(\.)([\]\)}>\"\']*)\s*$"), r"\1 \2\3 "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"[*]"), r" \g<0> "),
    # brackets and double dashes
    (re.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> "),
    (re.compile(r"--"), r" -- "),
]
_TREEBANK_CLOSING_STEPS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"([»”’])"), r" \1 "),
    (re.compile(r"''"), " '' "),
    (re.compile(r'"'), " '' "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
    *(
        (re.compile(pattern), r" \1 \2 ")
        for pattern in (
            r"(?i)\b(can)(?#X)(not)\b",
            r"(?i)\b(d)(?#X)('ye)\b",
            r"(?i)\b(gim)(?#X)(me)\b",
            r"(?i)\b(gon)(?#X)(na)\b",
            r"(?i)\b(got)(?#X)(ta)\b",
            r"(?i)\b(lem)(?#X)(me)\b",
            r"(?i)\b(more)(?#X)('n)\b",
            r"(?i)\b(wan)(?#X)(na)(?=\s)",
            r"(?i) ('t)(?#X)(is)\b",
            r"(?i) ('t)(?#X)(was)\b",
        )
    ),
]


def _treebank_tokens(sentence: str) -> list[str]:
    """Split one sentence into Treebank tokens (punctuation and clitics become tokens)."""
    for pattern, replacement in _TREEBANK_STEPS:
        sentence = pattern.sub(replacement, sentence)
    sentence = f" {sentence} "
    for pattern, replacement in _TREEBANK_CLOSING_STEPS:
        sentence = pattern.sub(replacement, sentence)
    return sentence.split()


def _word_tokenize(text: str) -> list[str]:
    """Tokenize ``text`` the way ``nltk.word_tokenize`` does."""
    return [token for sentence in _punkt_sentences(text) for token in _treebank_tokens(sentence)]


# --- shared kwarg helpers ----------------------------------------------------------------


def _count(value: float, name: str, minimum: int = 0) -> int:
    """A whole-number kwarg (suite files may store 3 as 3.0), at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value!r}")
    return int(value)


def _without_punctuation(text: str) -> str:
    """``text`` with every ASCII punctuation character deleted (IFBench's usual cleanup)."""
    return text.translate(str.maketrans("", "", string.punctuation))


# --- verifiers ---------------------------------------------------------------------------


def _alliteration_score(sentence: str) -> int:
    """Alliterative words in a sentence: each run of words sharing a first letter scores its length."""
    words = [word.lstrip(string.punctuation + " ") for word in sentence.lower().split()]
    words = [word for word in words if word]
    score = 0
    in_run = False
    for word, following in zip(words, words[1:]):
        if word[0] == following[0]:
            score += 1 if in_run else 2
            in_run = True
        else:
            in_run = False
    return score


@register("sentence:alliteration_increment")
def alliteration_increment() -> Check:
    """Each sentence has more alliterative words than the one before."""

    def check(response: str) -> bool:
        scores = [_alliteration_score(sentence) for sentence in _split_sentences(response)]
        return all(later > earlier for earlier, later in zip(scores, scores[1:]))

    return check


@register("sentence:increment")
def increment(small_n: float) -> Check:
    """Each sentence has exactly ``small_n`` more words than the one before."""
    step = _count(small_n, "small_n")

    def check(response: str) -> bool:
        counts = [len(_without_punctuation(sentence).split()) for sentence in _split_sentences(response)]
        return all(later == earlier + step for earlier, later in zip(counts, counts[1:]))

    return check


@register("sentence:keyword")
def keyword(word: str, N: float) -> Check:
    """The ``N``-th sentence contains ``word`` as a whole word (case-insensitive)."""
    position = _count(N, "N", minimum=1)
    if not word.strip():
        raise ValueError("word must not be empty")
    pattern = re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)

    def check(response: str) -> bool:
        sentences = _split_sentences(response)
        return len(sentences) >= position and bool(pattern.search(sentences[position - 1]))

    return check
