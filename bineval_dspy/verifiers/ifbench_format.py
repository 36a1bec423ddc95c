"""Verifiers for IFBench's ``format:*`` instructions (layout, markup and quoting rules).

Semantics follow ``allenai/IFBench`` (``ifbench/instructions.py``), including its quirks, noted inline.
"""

from __future__ import annotations

import re
import string

import emoji

from bineval_dspy.verifiers.registry import Check, register

# --- Punkt-like sentence splitting (the official grader uses nltk.sent_tokenize) -------------

# Abbreviations learned by NLTK's pretrained English Punkt model (lower-cased, final period dropped).
_PUNKT_ABBREVIATIONS = frozenset(
    """
    a.a a.c a.d a.g a.h a.m a.m.e a.s a.t adm ala aug ariz ave b.f b.v bros c c.i.t c.o.m.b c.v
    calif chg cie co col colo conn corp cos ct d d.c d.h d.w dec dr e e.f e.h e.l e.m f f.g f.j
    feb fla fri ft g g.d g.f g.k ga gen h h.c h.f h.m i.m.s ill inc j.b j.c j.j j.k j.p j.r jan jr
    k kan ky l l.a l.f l.p lt ltd m m.b.a m.d.c m.j maj messrs mg mich minn mr mrs ms n n.c n.d n.h
    n.j n.m n.v n.y nev nov oct ok okla ore p p.a.m p.m pa ph.d prof r r.a r.h r.i r.j r.k r.t rep
    reps s s.a s.a.y s.c s.g s.p.a s.s sen sep sept sr st sw t t.j tenn tues u.k u.n u.s u.s.a
    u.s.s.r v va vs vt w w.c w.r w.va w.w wash wed wis yr
    """.split()
)
# Words the English Punkt model treats as frequent sentence starters.
_PUNKT_SENTENCE_STARTERS = frozenset(
    """
    according although among both but despite even he however i if in indeed instead it many
    meanwhile moreover most nevertheless nonetheless nor sales separately similarly since so some
    the there these they this though thus under when while yet
    """.split()
)
_PUNKT_NON_WORD = r"[)\";}\]*:@'({\[!?]"
_PUNKT_MULTI_CHAR = r"(?:-{2,}|\.{2,}|(?:\.\s){2,}\.)"
_PUNKT_TOKEN = re.compile(
    rf"{_PUNKT_MULTI_CHAR}"
    rf"|(?=[^(\"`{{\[:;&#*@)}}\]\-,])\S+?"
    rf"(?=\s|$|{_PUNKT_NON_WORD}|{_PUNKT_MULTI_CHAR}|,(?=$|\s|{_PUNKT_NON_WORD}|{_PUNKT_MULTI_CHAR}))"
    r"|\S"
)
_SENTENCE_END_CANDIDATE = re.compile(rf"[.?!](?=(?P<after>{_PUNKT_NON_WORD}|\s+(?P<next>\S+)))")
_PUNKT_NUMBER = re.compile(r"-?[.,]?\d[\d,.-]*\.?")
_PUNKT_INITIAL = re.compile(r"[^\W\d]\.")
_LEADING_CLOSERS = re.compile(r"[\"')\]}]+?(?:\s+|(?=--)|$)", re.MULTILINE)


def _punkt_marks_break(token: str, following: str) -> bool:
    """Whether Punkt ends a sentence at ``token`` given the next token (its abbreviation/ortho rules)."""
    if token in (".", "?", "!"):
        return True
    if not token.endswith("."):
        return False
    # Punkt's orthographic evidence for the next word is approximated by its sentence-starter list.
    starts_sentence = following[:1].isupper() and following.lower().rstrip(".") in _PUNKT_SENTENCE_STARTERS
    if re.fullmatch(r"\.\.+", token):
        return starts_sentence
    if token.endswith(".."):
        return False
    stem = token[:-1].lower()
    is_initial = _PUNKT_INITIAL.fullmatch(token) is not None
    if stem in _PUNKT_ABBREVIATIONS or stem.split("-")[-1] in _PUNKT_ABBREVIATIONS:
        return starts_sentence and not is_initial
    if is_initial or _PUNKT_NUMBER.fullmatch(token):
        if following in (";", ":", ",", ".", "!", "?") or following[:1].islower():
            return False
        if is_initial and following[:1].isupper():  # "J. Smith": a capitalised name keeps the initial
            return starts_sentence
    return True


def _context_has_break(context: str) -> bool:
    """Whether a sentence break occurs between two of the Punkt tokens of ``context``."""
    tokens = _PUNKT_TOKEN.findall(context)
    return any(_punkt_marks_break(tokens[i], tokens[i + 1]) for i in range(len(tokens) - 1))


def _sentence_end_candidates(text: str) -> list[tuple[re.Match[str], str]]:
    """Each potential sentence end with its Punkt context (the word it ends plus what follows)."""
    candidates = []
    previous: tuple[re.Match[str], int] | None = None  # (match, start of the word it ends)
    for match in _SENTENCE_END_CANDIDATE.finditer(text):
        floor, floor_word = (previous[0].start(), previous[1]) if previous else (0, 0)
        gap = text[floor : match.start()]
        last_space = max((i for i, ch in enumerate(gap) if ch.isspace()), default=None)
        word_start = floor_word if last_space is None else floor + last_space + 1
        # Within one word only the last . ? ! is a candidate ("Wait?!" ends once).
        if previous and floor <= word_start:
            candidates.append(previous)
        previous = (match, word_start)
    if previous:
        candidates.append(previous)
    return [(match, text[start : match.end()] + match.group("after")) for match, start in candidates]


def _split_sentences(text: str) -> list[str]:
    """Split like nltk.sent_tokenize: breaks only after . ? ! (never at bare newlines), Punkt-style."""
    spans = []
    last_break = 0
    for match, context in _sentence_end_candidates(text):
        if _context_has_break(context):
            spans.append((last_break, match.end()))
            last_break = match.start("next") if match.group("next") else match.end()
    spans.append((last_break, len(text.rstrip())))
    return _realign_closers(text, spans)


def _realign_closers(text: str, spans: list[tuple[int, int]]) -> list[str]:
    """Move closing quotes/brackets that open a sentence back onto the previous one, as Punkt does."""
    sentences = []
    shift = 0
    for index, (start, stop) in enumerate(spans):
        start += shift
        shift = 0
        if index + 1 < len(spans):
            closers = _LEADING_CLOSERS.match(text[spans[index + 1][0] : spans[index + 1][1]])
            if closers:
                stop = spans[index + 1][0] + len(closers.group(0).rstrip())
                shift = closers.end()
        if text[start:stop]:
            sentences.append(text[start:stop])
    return sentences


# --- Treebank-like word tokenizing (the official grader uses nltk.word_tokenize) -------------

_TREEBANK_SPLITS = [
    (re.compile(r"([ (\[{<])(\"|'')"), r"\1 `` "),
    (re.compile(r"(?i)(')(?!re|ve|ll|m|t|s|d|n)(\w)\b"), r"\1 \2"),
    (re.compile(r"([«“‘„]|`+)"), r" \1 "),
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}"), r" \g<0> "),
    (re.compile(r"[;@#$%&?!*]"), r" \g<0> "),
    (re.compile(r'([^.])(\.)([\])}>"\']*)\s*$'), r"\1 \2\3 "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"[\][(){}<>]"), r" \g<0> "),
    (re.compile(r"--"), r" -- "),
    (re.compile(r'"'), " '' "),
    (re.compile(r"([»”’])"), r" \1 "),
    (re.compile(r"([^' ])('[sSmMdD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
    (re.compile(r"(?i)\b(can)(not)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(d)('ye)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(gim|lem)(me)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(gon)(na)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(wan)(na)(?=\s)"), r" \1 \2 "),
    (re.compile(r"(?i)\b(got)(ta)\b"), r" \1 \2 "),
    (re.compile(r"(?i)\b(more)('n)\b"), r" \1 \2 "),
    (re.compile(r"(?i) ('t)(is|was)\b"), r" \1 \2 "),
]


def _word_tokens(text: str) -> list[str]:
    """Tokenize like nltk.word_tokenize: punctuation, brackets, quotes and contractions split off."""
    tokens = []
    for sentence in _split_sentences(text):
        padded = f" {sentence} "
        for pattern, replacement in _TREEBANK_SPLITS:
            padded = pattern.sub(replacement, padded)
        tokens.extend(padded.split())
    return tokens


def _strip_ascii_punctuation(text: str) -> str:
    """Delete every ASCII punctuation character (the official checks translate them away)."""
    return text.translate(str.maketrans("", "", string.punctuation))


def _indent(line: str) -> int:
    """Number of leading spaces (tabs do not count, as in the official check)."""
    return len(line) - len(line.lstrip(" "))


# --- Verifiers ---------------------------------------------------------------------------------


@register("format:emoji")
def emoji_sentences() -> Check:
    """Every sentence ends with an emoji (an emoji opening the next sentence also counts)."""

    def check(response: str) -> bool:
        sentences = [_strip_ascii_punctuation(s).strip() for s in _split_sentences(response)]
        for index, sentence in enumerate(sentences):
            if not sentence:
                return False
            # The second-to-last character is also tried, for emoji followed by a variation selector.
            if emoji.is_emoji(sentence[-1]) or emoji.is_emoji(sentence[-2:-1] or sentence[-1]):
                continue
            following = sentences[index + 1] if index + 1 < len(sentences) else ""
            if not following or not emoji.is_emoji(following[0]):
                return False
        return True

    return check


@register("format:line_indent")
def line_indent() -> Check:
    """Each non-blank line is indented by more spaces than the line before it ("stairs")."""

    def check(response: str) -> bool:
        lines = response.split("\n")
        # Official quirk: blank lines are removed while iterating, so a blank line that directly
        # follows a removed one survives (and then breaks the stairs).
        index = 0
        while index < len(lines):
            if not lines[index].strip():
                lines.remove(lines[index])
            index += 1
        return all(_indent(lower) > _indent(upper) for upper, lower in zip(lines, lines[1:]))

    return check


@register("format:list")
def special_bullets(sep: str) -> Check:
    """The custom bullet marker ``sep`` occurs at least twice."""
    if not isinstance(sep, str) or not sep:
        raise ValueError("sep must be a non-empty string")

    def check(response: str) -> bool:
        return response.count(sep) >= 2

    return check


@register("format:newline")
def word_per_line() -> Check:
    """Each word sits on its own line (punctuation ignored; empty lines allowed)."""

    def check(response: str) -> bool:
        text = _strip_ascii_punctuation(response)
        # Only truly empty lines are discarded; a line of spaces still counts as a line.
        lines = [line for line in text.strip().split("\n") if line != ""]
        return len(lines) == len(text.split())

    return check


@register("format:no_bullets_bullets")
def sentences_then_bullets() -> Check:
    """At least two sentences first, then at least two ``*`` bullet lines and nothing else."""

    def check(response: str) -> bool:
        sentence_count = 0
        bullet_count = 0
        in_prose = True
        for line in response.split("\n"):
            line = line.strip()
            if line.startswith("*"):
                if sentence_count < 2:
                    return False
                in_prose = False
                bullet_count += 1
            elif in_prose:
                sentences = _split_sentences(line)
                sentence_count += len(sentences)
                # Official quirk: a blank line (no sentences) also ends the prose part.
                in_prose = bool(sentences)
            else:
                return False
        return bullet_count >= 2

    return check


@register("format:no_whitespace")
def no_whitespace() -> Check:
    """The response contains no whitespace character at all."""

    def check(response: str) -> bool:
        return not any(ch.isspace() for ch in response)

    return check


@register("format:options")
def one_of_options(options: str) -> Check:
    """The whole response is one of the listed options (exactly, for lettered a/b/c choices)."""
    if not isinstance(options, str) or not options.strip():
        raise ValueError("options must be a non-empty string")
    lettered = re.match(r"\W*[aA]\W*[bB]\W*[cC]\W*", options) is not None
    # Official rule: split on "/", else on the substring "or", else on ",".
    separator = "/" if "/" in options else "or" if "or" in options else ","
    choices = [choice.strip() for choice in options.split(separator)]
    trim = string.punctuation + " "
    normalized = {choice.strip(trim).lower() for choice in choices}

    def check(response: str) -> bool:
        if lettered:
            return response in choices
        return response.strip(trim).lower() in normalized

    return check


@register("format:output_template")
def output_template() -> Check:
    """The response contains the three template headers 'My Answer:', 'My Conclusion:', 'Future Outlook:'."""

    def check(response: str) -> bool:
        return all(header in response for header in ("My Answer:", "My Conclusion:", "Future Outlook:"))

    return check


@register("format:parentheses")
def nested_brackets() -> Check:
    """Brackets ( [ { nest at least 5 deep, and a matching close follows that depth."""
    pairs = {")": "(", "]": "[", "}": "{"}

    def check(response: str) -> bool:
        stack: list[str] = []
        deepest = 0
        for ch in response:
            if ch in "([{":
                stack.append(ch)
                deepest = max(deepest, len(stack))
            elif ch in pairs:
                if stack and stack[-1] == pairs[ch]:
                    stack.pop()
                    if deepest >= 5:
                        return True
                else:  # a mismatched closer starts the count over
                    stack.clear()
                    deepest = 0
        return False

    return check


@register("format:quote_unquote")
def quote_then_explanation() -> Check:
    """No two double quotes are adjacent (ignoring whitespace) and the text does not end on a quote."""
    trailing = string.digits + string.punctuation.replace('"', "")

    def check(response: str) -> bool:
        text = "".join(response.replace("'\"'", "").split())
        if '""' in text:
            return False
        tail = text.strip(trailing)
        return not tail.endswith('"')

    return check


@register("format:quotes")
def nested_quotes() -> Check:
    """Quotes nest at least 3 levels deep; ``"`` and ``'`` (apostrophes included) both count."""

    def check(response: str) -> bool:
        stack: list[str] = []
        deepest = 0
        for ch in response:
            if stack and ch == stack[-1]:
                stack.pop()
                if deepest - len(stack) >= 3:
                    return True
            elif ch in "\"'":
                stack.append(ch)
                deepest = max(deepest, len(stack))
        return False

    return check


@register("format:sub-bullets")
def sub_bullets() -> Check:
    """Every piece of text after a ``*`` contains a ``-`` before the next ``*``."""

    def check(response: str) -> bool:
        return all("-" in piece for piece in response.split("*")[1:])

    return check


@register("format:thesis")
def italic_thesis() -> Check:
    """An HTML-italic (<i> or <em>) non-empty thesis is followed by more text."""

    def check(response: str) -> bool:
        start = response.find("<i>")
        if start == -1:
            start = response.find("<em>")
            if start == -1:
                return False
        rest = response[start:]
        end = rest.find("</i>")
        if end == -1:
            end = rest.find("</em>")
            if end == -1:
                return False
        # Official quirk: offsets assume the 3-char "<i>" and 4-char "</i>" even for <em> tags.
        return bool(rest[3:end].strip()) and bool(rest[end + 4 :].strip())

    return check


@register("format:title_case")
def title_case() -> Check:
    """No word token is lower-case-initial with an all-lower or all-upper remainder (or a lone lower letter)."""

    def check(response: str) -> bool:
        for token in _word_tokens(response):
            if not token[0].isalpha() or not token[0].islower():
                continue
            rest = token[1:]
            if not rest or rest.islower() or rest.isupper():
                return False
        return True

    return check
