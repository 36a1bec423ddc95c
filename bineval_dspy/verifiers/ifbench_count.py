"""IFBench ``count:*`` verifiers, following ``allenai/IFBench`` (``ifbench/instructions.py``).

NLTK's ``sent_tokenize``/``word_tokenize`` are replaced by small deterministic look-alikes below.
"""

from __future__ import annotations

import math
import re
import string

from bineval_dspy.verifiers.registry import Check, register

_PUNCT_AND_SPACE = string.punctuation + " "
_DROP_ASCII_PUNCT = str.maketrans("", "", string.punctuation)

_CONJUNCTIONS = frozenset({"and", "but", "for", "nor", "or", "so", "yet"})

# The fixed list named in the count:person_names prompt; the official grader matches exactly these.
_PERSON_NAMES = (
    "Emma", "Liam", "Sophia", "Jackson", "Olivia", "Noah", "Ava", "Lucas", "Isabella", "Mason",
    "Mia", "Ethan", "Charlotte", "Alexander", "Amelia", "Benjamin", "Harper", "Leo", "Zoe", "Daniel",
    "Chloe", "Samuel", "Lily", "Matthew", "Grace", "Owen", "Abigail", "Gabriel", "Ella", "Jacob",
    "Scarlett", "Nathan", "Victoria", "Elijah", "Layla", "Nicholas", "Audrey", "David", "Hannah", "Christopher",
    "Penelope", "Thomas", "Nora", "Andrew", "Aria", "Joseph", "Claire", "Ryan", "Stella", "Jonathan",
)  # fmt: skip
_PERSON_NAME_PATTERNS = tuple(re.compile(rf"\b{re.escape(name)}\b") for name in _PERSON_NAMES)

_PRONOUNS = frozenset(
    # personal, possessive, reflexive
    "i me we us you he him she her it they them my mine our ours your yours his hers its their theirs "
    "myself ourselves yourself yourselves himself herself itself themselves "
    # demonstrative, interrogative, relative
    "this that these those who whom whose which what whoever whomever whatever whichever "
    # indefinite
    "anybody anyone anything everybody everyone everything nobody nothing somebody someone something "
    "each either neither both all some any none".split()
)

_JAPANESE_CHAR = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")  # hiragana, katakana, CJK ideographs
_KEYWORD_TIMES = (1, 2, 3, 5, 7)  # keyword1 once, keyword2 twice, ..., keyword5 seven times


def _whole_number(name: str, value: object, minimum: int = 0) -> int:
    """A count kwarg as int; suite rows store counts as floats such as 5.0."""
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not numeric or not math.isfinite(value) or value != int(value):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)


def _strip_punct(word: str) -> str:
    """Trim ASCII punctuation and spaces from both ends, as the official graders do per word."""
    return word.strip(_PUNCT_AND_SPACE)


def _count_words(text: str) -> int:
    """Number of ``\\w+`` runs: IFBench's word count (NLTK ``RegexpTokenizer(r"\\w+")``)."""
    return len(re.findall(r"\w+", text))


# --- sentence splitting (stand-in for NLTK's Punkt English model, i.e. ``nltk.sent_tokenize``) ---

# Punkt treats a token ending in "." as an abbreviation (no sentence break) when its lowercased
# body is in the model's abbreviation list; these are common English ones.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof rev st sr jr mt ft gen gov sen rep col lt capt sgt adm "
    "inc ltd co corp bros dept univ assn est vs etc e.g i.e u.s u.k u.n a.m p.m "
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun "
    "no nos vol fig approx cf al ca ed eds pp ave blvd rd calif fla mass conn".split()
)
# Capitalized words that Punkt's orthographic statistics mark as ordinary (often lower-case) words:
# after an abbreviation, initial or ellipsis they signal a new sentence.
_SENTENCE_STARTERS = frozenset(
    "a an the this that these those it its he she they we i you there here my our your his her their "
    "but and or so yet however in on at for if when while as after before then also some many most all "
    "each every no not what how why where who which one both to from with by since although though "
    "because thus therefore moreover finally first second next now today meanwhile".split()
)
_BREAK_FOLLOWERS = frozenset("?!)\";}]*:@'({[")  # after .?! these let Punkt consider a break
_CLOSERS_THEN_SPACE = re.compile(r"[\"')\]}]+?(?:\s+|(?=--)|$)")
_NUMBER_TOKEN = re.compile(r"^-?[.,]?\d[\d,.-]*\.$")
_INITIAL_TOKEN = re.compile(r"^[^\W\d]\.$")


def _last_punkt_token(word: str) -> str:
    """The final Punkt word token of a whitespace-free chunk ending in . ? or !."""
    tail = re.split(r"[()\"`{}\[\]:;&#*@,!?]|--", word)[-1]
    return tail[tail.rfind("'") :] if "'" in tail else tail  # an apostrophe starts a new token


def _first_punkt_token(word: str) -> str:
    """The first Punkt word token of a whitespace-free chunk (a leading bracket or quote stands alone)."""
    if word[0] in "()\"`{}[]:;&#*@,-":
        return word[0]
    return word[0] + re.split(r"[()\"{}\[\]:;*@,!?']", word[1:])[0]


def _starts_new_sentence(token: str, follower: str) -> bool:
    """Whether Punkt breaks after ``token`` (ends in .?!) when the next token is ``follower``."""
    if not token or token[-1] in "?!":
        return True
    if token.endswith(".."):
        kind = "abbreviation"  # an ellipsis behaves like an abbreviation
    elif _INITIAL_TOKEN.match(token):
        kind = "initial"
    elif _NUMBER_TOKEN.match(token):
        kind = "number"
    elif token[:-1].lower() in _ABBREVIATIONS or token[:-1].lower().split("-")[-1] in _ABBREVIATIONS:
        kind = "abbreviation"
    else:
        return True
    first = follower[:1]
    common_capital = first.isupper() and follower.lower().strip(string.punctuation) in _SENTENCE_STARTERS
    if kind == "abbreviation":
        return common_capital
    if first.islower() or follower in (";", ":", ",", ".", "!", "?"):
        return False
    if kind == "initial" and first.isupper():
        return common_capital
    return True


def _split_sentences(text: str) -> list[str]:
    """Split text into sentences like ``nltk.sent_tokenize``: only at . ? ! (never at bare newlines)."""
    chunks = list(re.finditer(r"\S+", text))
    ends: list[tuple[int, int]] = []  # (end of sentence, start of the next one)
    for i, chunk in enumerate(chunks):
        word = chunk.group()
        has_next = i + 1 < len(chunks)
        for pos in range(len(word) - 1, -1, -1):  # Punkt only looks at the last candidate in a chunk
            if word[pos] not in ".?!":
                continue
            inner = pos + 1 < len(word)
            if inner and word[pos + 1] in _BREAK_FOLLOWERS:
                follower = word[pos + 1]
            elif not inner and has_next:
                follower = _first_punkt_token(chunks[i + 1].group())
            else:
                continue
            if _starts_new_sentence(_last_punkt_token(word[: pos + 1]), follower):
                end = chunk.start() + pos + 1
                ends.append((end, end if inner else chunks[i + 1].start()))
            break
    sentences: list[str] = []
    start = 0
    for end, next_start in ends:
        sentences.append(text[start:end])
        start = next_start
    sentences.append(text[start : len(text.rstrip())])
    return _attach_closing_quotes(sentences)


def _attach_closing_quotes(sentences: list[str]) -> list[str]:
    """Move quotes/brackets that open a sentence back onto the previous one, as Punkt realigns them."""
    out: list[str] = []
    for sentence in sentences:
        if out:
            match = _CLOSERS_THEN_SPACE.match(sentence)
            if match:
                out[-1] += match.group().rstrip()
                sentence = sentence[match.end() :]
        if sentence:
            out.append(sentence)
    return out


# --- word tokenizing (stand-in for ``nltk.word_tokenize``, NLTK 3.9) ---

_TREEBANK_BEFORE_PADDING: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"([«“‘„]|`+)"), r" \1 "),  # opening typographic quotes and backticks
    (re.compile(r'^"'), " `` "),  # a double quote opening the sentence
    (re.compile(r'([ (\[{<])("|\'\')'), r"\1 `` "),  # a double quote after a space or bracket opens
    (re.compile(r"(?i)(')(?!re|ve|ll|m|t|s|d|n)(\w)\b"), r"\1 \2"),  # quote before a one-letter word
    (re.compile(r"([^.])(\.)([\])}>\"'»”’ ]*)\s*$"), r"\1 \2 \3 "),  # the sentence-final period
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),  # comma/colon unless inside a number
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}"), r" \g<0> "),  # ellipses
    (re.compile(r"[;@#$%&?!*\[\](){}<>]"), r" \g<0> "),  # always-separate symbols
    (re.compile(r"([^'])' "), r"\1 ' "),  # closing single quote
    (re.compile(r"--"), " -- "),
)
_TREEBANK_AFTER_PADDING: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"([»”’])"), r" \1 "),  # closing typographic quotes
    (re.compile(r"''|\""), " '' "),  # other double quotes close
    (re.compile(r"\s+"), " "),
    (re.compile(r"([^' ])('[sSmMdD]|') "), r"\1 \2 "),  # clitics: it's, I'm, he'd, players'
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
    # fused words the Penn Treebank splits: cannot, gimme, gonna, gotta, lemme, wanna, ...
    (re.compile(r"(?i)\b(can)(not)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(d)('ye)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(gim|lem)(me)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(gon)(na)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(got)(ta)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(more)('n)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(wan)(na)(?=\s)"), r" \1 \2 "),
    (re.compile(r"(?i) ('t)(is|was)\b"), r" \1 \2 "),
)


def _treebank_tokens(sentence: str) -> list[str]:
    """Tokens of one sentence under NLTK's improved Treebank rules (punctuation and clitics split off)."""
    for pattern, replacement in _TREEBANK_BEFORE_PADDING:
        sentence = pattern.sub(replacement, sentence)
    sentence = f" {sentence} "
    for pattern, replacement in _TREEBANK_AFTER_PADDING:
        sentence = pattern.sub(replacement, sentence)
    return sentence.split()


def _word_tokens(text: str) -> list[str]:
    """``nltk.word_tokenize``: sentence split first, so every sentence-final period is its own token."""
    return [token for sentence in _split_sentences(text) for token in _treebank_tokens(sentence)]


# --- verifiers ---


@register("count:conjunctions")
def conjunctions(small_n: float) -> Check:
    """At least ``small_n`` different coordinating conjunctions (and, but, for, nor, or, so, yet).

    As in the official grader, "different" compares the words as written (``and``, ``And`` and
    ``and,`` are three), after recognising each as a conjunction once its punctuation is trimmed.
    """
    needed = _whole_number("small_n", small_n)

    def check(response: str) -> bool:
        used = {word for word in response.split() if _strip_punct(word).lower() in _CONJUNCTIONS}
        return len(used) >= needed

    return check


@register("count:keywords_multiple")
def keywords_multiple(keyword1: str, keyword2: str, keyword3: str, keyword4: str, keyword5: str) -> Check:
    """keyword1..keyword5 occur exactly 1, 2, 3, 5 and 7 times (case-insensitive substring counts)."""
    raw = (keyword1, keyword2, keyword3, keyword4, keyword5)
    if not all(isinstance(kw, str) and kw.strip() for kw in raw):
        raise ValueError(f"keywords must be non-empty strings, got {raw!r}")
    keywords = [kw.strip().lower() for kw in raw]

    def check(response: str) -> bool:
        text = response.lower()
        return all(text.count(kw) == times for kw, times in zip(keywords, _KEYWORD_TIMES))

    return check


@register("count:numbers")
def numbers(N: float) -> Check:
    """Exactly ``N`` numbers: digit runs once ASCII punctuation is deleted (so 3.14 and 1,000 are one each)."""
    expected = _whole_number("N", N)

    def check(response: str) -> bool:
        return len(re.findall(r"\d+", response.translate(_DROP_ASCII_PUNCT))) == expected

    return check


@register("count:person_names")
def person_names(N: float) -> Check:
    """At least ``N`` different names from the prompt's fixed list of 50, matched case-sensitively as whole words."""
    needed = _whole_number("N", N)

    def check(response: str) -> bool:
        return sum(1 for pattern in _PERSON_NAME_PATTERNS if pattern.search(response)) >= needed

    return check


@register("count:pronouns")
def pronouns(N: float) -> Check:
    """At least ``N`` pronoun tokens (NLTK-style word tokens of the lower-cased text, '/' read as a space)."""
    needed = _whole_number("N", N)

    def check(response: str) -> bool:
        tokens = _word_tokens(response.replace("/", " ").lower())
        return sum(1 for token in tokens if token in _PRONOUNS) >= needed

    return check


@register("count:punctuation")
def punctuation() -> Check:
    """An interrobang (?!, !? or ‽) plus each of . , ! ? ; : somewhere outside the first ?!/!? pair."""

    def check(response: str) -> bool:
        if not any(mark in response for mark in ("?!", "!?", "‽")):
            return False
        pair = "?!" if "?!" in response else "!?"
        rest = response.replace(pair, "", 1)
        return set(".,!?;:") <= set(rest)

    return check


@register("count:unique_word_count")
def unique_word_count(N: float) -> Check:
    """At least ``N`` distinct lower-cased whitespace words, punctuation trimmed.

    As in the official grader, a word made only of punctuation counts once, as the empty word.
    """
    needed = _whole_number("N", N)

    def check(response: str) -> bool:
        return len({_strip_punct(word) for word in response.lower().split()}) >= needed

    return check


@register("count:word_count_range")
def word_count_range(min_words: float, max_words: float) -> Check:
    """Between ``min_words`` and ``max_words`` words (both inclusive), words being ``\\w+`` runs."""
    low, high = _whole_number("min_words", min_words), _whole_number("max_words", max_words)
    if low > high:
        raise ValueError(f"min_words ({low}) must not exceed max_words ({high})")

    def check(response: str) -> bool:
        return low <= _count_words(response) <= high

    return check


@register("count:words_japanese")
def words_japanese(N: float) -> Check:
    """Every ``N``-th whitespace word holds a Japanese character (kana or kanji); numbers are exempt."""
    step = _whole_number("N", N, minimum=1)

    def check(response: str) -> bool:
        for position, raw in enumerate(response.split(), start=1):
            word = _strip_punct(raw)
            if position % step == 0 and word and not word.isdigit() and not _JAPANESE_CHAR.search(word):
                return False
        return True

    return check
