"""Rules for IFBench's word, sentence and count ids: what each constraint means, in the ways a prompt says it
("Each word must start with the next letter of the alphabet", "make every word begin with the letter following
the previous word's first letter"); ``tests/checklists/test_stated_ifbench.py`` holds paraphrases of each."""

from __future__ import annotations

import re
from typing import Any

from bineval_dspy.checklists.stated.rules import AT_LEAST, LESS, ORDINAL, N, Rule, number, ordinal, rule

_FLOOR = rf"(?:{AT_LEAST}|(?:use|include|mention|contain|have)\s+)"  # a floor stated, or a plain count after a verb
_EACH = r"(?:each|every|all|any)"
_WORD = r"(?:words?|terms?)"
_KEYWORD = r"[\"'“‘]?([\w-]+)[\"'”’]?"
_TIMES = {"once": 1, "twice": 2, "thrice": 3}


def _n(name: str, group: int = 1) -> Any:
    return lambda m: {name: number(m.group(group))}


def _times(text: str) -> int | None:
    """1 of 'once', 3 of 'three times' / '3 times'."""
    text = text.lower().strip()
    if text in _TIMES:
        return _TIMES[text]
    match = re.fullmatch(rf"{N}\s+times?", text)
    return number(match.group(1)) if match else None


def _keywords_multiple(m: re.Match[str]) -> dict[str, Any]:
    """count:keywords_multiple's five keywords, when the prompt asks for them once, twice, 3, 5 and 7 times."""
    pairs = re.findall(rf"{_KEYWORD}\s+(?:exactly\s+)?(once|twice|thrice|{N}\s+times?)\b", m.group(0), re.IGNORECASE)
    counted = [(word, _times(times)) for word, times, _ in pairs if word.lower() not in ("keyword", "word", "and", "the")]
    if [n for _, n in counted] != [1, 2, 3, 5, 7]:
        return {}
    return {f"keyword{i}": word for i, (word, _) in enumerate(counted, start=1)}


def _range(m: re.Match[str]) -> dict[str, Any]:
    low, high = sorted((number(m.group(1)), number(m.group(2))))
    return {"min_words": low, "max_words": high}


def _repeats(m: re.Match[str]) -> dict[str, Any]:
    """words:repeats' limit: 'more than 4 times' (not allowed) and 'at most 4 times' allow 4; 'fewer than 4' allows 3."""
    words, n = (m.group(1) or "").lower(), number(m.group(2)) if m.group(2) else _TIMES[m.group(3).lower()]
    return {"small_n": n - 1 if words in ("less than", "fewer than", "under", "below") else n}


def _sentence_keyword(m: re.Match[str]) -> dict[str, Any]:
    word = m.group(1) or m.group(6)
    at = ordinal(m.group(2), m.group(3)) if (m.group(2) or m.group(3)) else ordinal(m.group(4), m.group(5))
    return {"word": word, "N": at}


def _position(m: re.Match[str]) -> dict[str, Any]:
    g = m.groups()
    if g[0]:  # keyword, sentence, word
        return {"keyword": g[0], "n": ordinal(g[1], g[2]), "m": ordinal(g[3], g[4])}
    return {"keyword": g[5], "n": ordinal(g[8], g[9]), "m": ordinal(g[6], g[7])}  # "make X the m-th word of the n-th sentence"


IFBENCH_WORD_RULES: tuple[Rule, ...] = (
    # count:*
    rule("count:conjunctions", rf"\b(?:{AT_LEAST}|use|include|employ)\s+{N}\s+(?:or\s+more\s+)?(?:different|distinct|unique|separate|kinds\s+of)?\s*coordinating\s+conjunctions\b",
         "Does the response use at least {small_n} different coordinating conjunctions?", _n("small_n"), whole_reply=True),
    rule("count:keywords_multiple", rf"(?:\b(?:keyword|word|term)?\s*{_KEYWORD}\s+(?:exactly\s+)?(?:once|twice|thrice|{N}\s+times?)\b[^.;]{{0,40}}?){{5}}",
         lambda kw: "Does the response use " + ", ".join(f"'{kw[f'keyword{i}']}' {t}" for i, t in enumerate(("once", "twice", "3 times", "5 times", "7 times"), 1)) + "?",
         _keywords_multiple),
    rule("count:numbers", rf"\b(?:exactly|precisely|just)\s+{N}\s+(?:different\s+)?(?:numbers|numerals|numeric\s+values|numerical\s+values|figures)\b|\b(?:include|use|contain|mention)\s+{N}\s+(?:numbers|numerals)\b",
         "Does the response include exactly {N} numbers?", lambda m: {"N": number(m.group(1) or m.group(2))}, whole_reply=True),
    rule("count:person_names", rf"\b{_FLOOR}\s*{N}\s+(?:or\s+more\s+)?(?:different|distinct|unique)?\s*(?:person(?:al)?|people's|human|first|given)?\s*names\b[^.]{{0,80}}?\b(?:from|in|of)\s+(?:this|the|the\s+following)\s+list",
         "Does the response mention at least {N} different names from the prompt's list?", _n("N")),
    rule("count:pronouns", rf"\b{_FLOOR}\s*{N}\s+(?:or\s+more\s+)?(?:different\s+)?pronouns\b",
         "Does the response include at least {N} pronouns?", _n("N"), whole_reply=True),
    rule("count:punctuation", r"\b(?:use|include)\s+(?:every|each|all(?:\s+the)?|all\s+of\s+the)\s+(?:standard\s+|common\s+|basic\s+)?punctuation\s+marks?\b|\bevery\s+(?:standard\s+)?punctuation\s+mark\b[^.]{0,40}\b(?:appear|used|at\s+least\s+once)",
         "Does the response use every standard punctuation mark, including ; : and the interrobang ?!, at least once?"),
    rule("count:unique_word_count", rf"\b{_FLOOR}\s*{N}\s+(?:or\s+more\s+)?(?:unique|distinct|different)\s+words\b",
         "Does the response use at least {N} unique words?", _n("N"), whole_reply=True),
    rule("count:word_count_range", rf"\bbetween\s+{N}\s+and\s+{N}\s+words\b|\b(?:from\s+)?(\d+)\s*(?:-|–|to)\s*(\d+)\s+words\b(?!\s+(?:each|per))",
         "Does the response contain between {min_words} and {max_words} words?",
         lambda m: _range(m) if m.group(1) else {"min_words": min(int(m.group(3)), int(m.group(4))), "max_words": max(int(m.group(3)), int(m.group(4)))}, whole_reply=True),
    rule("count:words_japanese", rf"\b(?:every|each)\s+(?:{ORDINAL})\s+word\b[^.]{{0,40}}?\bjapanese\b",
         "Is every {N}th word of the response in Japanese?", lambda m: {"N": ordinal(m.group(1), m.group(2))}),
    # sentence:*
    rule("sentence:alliteration_increment", r"\b(?:each|every)\s+sentence\b[^.]{0,60}?\blonger\b[^.]{0,40}?\balliterat\w*|\balliterat\w*\b[^.]{0,60}?\b(?:grow|increase|get\s+longer|longer)\w*\b[^.]{0,40}?\b(?:each|every|next|previous)\s+sentence",
         "Does each sentence have a longer run of consecutive alliterative words than the one before?"),
    rule("sentence:increment", rf"\b(?:each|every)\s+(?:new\s+)?sentence\b[^.]{{0,60}}?\b(?:exactly\s+)?{N}\s+(?:more\s+words?|words?\s+(?:longer|more))\s+than\s+the\s+(?:previous|preceding|one\s+before|last|prior)",
         "Does each sentence have exactly {small_n} more words than the one before?", _n("small_n")),
    rule("sentence:keyword",
         rf"\b(?:keyword|word|term)\s+{_KEYWORD}\s+(?:\w+\s+){{0,3}}?in\s+(?:the\s+)?(?:{ORDINAL})\s+sentence\b|\b(?:{ORDINAL})\s+sentence\s+(?:\w+\s+){{0,3}}?(?:contain|include|use|have)s?\s+(?:the\s+)?(?:keyword|word|term)\s+{_KEYWORD}",
         "Does sentence {N} of the response include the keyword '{word}'?", _sentence_keyword,
         unless=r"\bas\s+the\s+\S+\s+word\b|\bword\s+of\s+(?:that|the)\s+sentence\b|\b(?:each|every)\s+sentence\b"),
    # words:*
    rule("words:alphabet", r"\b(?:each|every|successive|consecutive)\s+words?\b[^.]{0,60}?\b(?:start|begin)s?\w*\s+with\s+(?:the\s+)?(?:next|following|subsequent|consecutive)\s+letters?\b|\bwords?\b[^.]{0,40}?\bletter\s+(?:that\s+)?(?:follows|following|after)\s+(?:the\s+)?(?:previous|preceding|last|prior)\s+word'?s?\s+(?:first|initial|starting)\s+letter",
         "Does each word start with the letter after the previous word's first letter (a, b, c, ...)?", unless=r"\bsentence'?s?\s+first\s+word\b"),
    rule("words:consonants", r"\b(?:each|every|all)\s+(?:\w+\s+){0,4}?words?\b[^.]{0,60}?\bconsonant\s+clusters?\b|\b(?:each|every)\s+word\b[^.]{0,60}?\b(?:two|2)\s+(?:or\s+more\s+)?consonants\s+(?:in\s+a\s+row|together|back\s+to\s+back|consecutively|side\s+by\s+side|adjacent)|\bconsonant\s+cluster\s+in\s+(?:each|every)\s+word",
         "Does every word contain a cluster of two or more consonants?"),
    rule("words:keywords_specific_position",
         rf"\b(?:keyword|word|term)\s+{_KEYWORD}\s+in\s+the\s+(?:{ORDINAL})\s+sentence,?\s+as\s+the\s+(?:{ORDINAL})\s+word\b|\bmake\s+{_KEYWORD}\s+the\s+(?:{ORDINAL})\s+word\s+of\s+the\s+(?:{ORDINAL})\s+sentence",
         "Is '{keyword}' word {m} of sentence {n}?", _position),
    rule("words:last_first", r"\b(?:last|final|ending)\s+word\s+of\s+(?:each|every|a|one|any)\s+sentence\b[^.]{0,50}?\bfirst\s+word\s+of\s+the\s+(?:next|following|subsequent)\b|\b(?:start|begin)\s+(?:each|every)\s+(?:new\s+)?sentence\s+with\s+the\s+(?:last\s+)?word\s+(?:that\s+)?(?:ended|ends|ending|closed|that\s+closed)\s+the\s+(?:previous|preceding|one\s+before|sentence\s+before)",
         "Is the last word of each sentence the first word of the next?"),
    rule("words:no_consecutive", r"\bno\s+two\s+(?:consecutive|adjacent|neighbou?ring|successive)\s+words\b[^.]{0,40}?\b(?:share|start|begin|have)\w*\b[^.]{0,20}?\bsame\s+(?:first|initial|starting)?\s*letter|\b(?:consecutive|adjacent|neighbou?ring|successive)\s+words\s+(?:must|should|may\s+not|cannot|can't|can\s*not)\s+(?:\w+\s+){0,2}?(?:start|begin)\s+with\s+(?:different|the\s+same)\s+letters?",
         "Do no two consecutive words start with the same letter?"),
    rule("words:odd_even_syllables", r"\balternat\w*\b[^.]{0,80}?\b(?:odd|even)\b[^.]{0,40}?\b(?:odd|even)\b[^.]{0,40}?\bsyllab\w*|\b(?:odd|even)\b[^.]{0,30}?\b(?:odd|even)\b[^.]{0,30}?\bsyllab\w*[^.]{0,40}?\balternat",
         "Do the words alternate between odd and even numbers of syllables?"),
    rule("words:palindrome", r"\b(?:at\s+least\s+)?(?:10|ten)\s+(?:single-word\s+|different\s+)?palindromes?\b",
         "Does the response include at least 10 palindromes of at least 5 letters?"),
    rule("words:paragraph_last_first", r"\b(?:each|every)\s+paragraph\b[^.]{0,50}?\b(?:end|finish)\w*\s+with\s+the\s+same\s+word\b[^.]{0,30}?\b(?:start|began|begin|open)|\b(?:each|every)\s+paragraph\b[^.]{0,40}?\b(?:start|begin|open)\w*\s+and\s+(?:end|finish|close)\w*\s+with\s+the\s+same\s+word|\b(?:start|begin)\s+and\s+end\s+(?:each|every)\s+paragraph\s+with\s+the\s+same\s+word",
         "Does each paragraph end with the same word it starts with?"),
    rule("words:prime_lengths", r"\bwords?\b[^.]{0,40}?\blengths?\b[^.]{0,30}?\bprime\b|\b(?:each|every)\s+word\b[^.]{0,40}?\bprime\s+number\s+of\s+(?:letters|characters)|\bprime[- ]length\s+words",
         "Does every word have a prime number of letters?"),
    rule("words:repeats", rf"(?:\bnot|n't|\bnever|\bno\s+word)\s+(?:\w+\s+){{0,3}}?(?:repeat|use|appear|used|occur)\w*\s+(?:any\s+(?:single\s+)?word\s+|a\s+word\s+|words?\s+)?(more\s+than)\s+(?:{N}\s+times?\b|(once|twice|thrice)\b)|\b(?:each|every|any)\s+word\s+(?:\w+\s+){{0,3}}?({LESS})\s+{N}\s+times?\b",
         "Is no word used more than {small_n} times?",
         lambda m: _repeats(m) if m.group(1) else {"small_n": number(m.group(5)) - (1 if m.group(4).lower() in ("less than", "fewer than", "under", "below") else 0)}, whole_reply=True),
    rule("words:start_verb", r"\b(?:response|answer|reply|output|text)\s+(?:must|should|has\s+to|needs\s+to)\s+(?:start|begin|open)\s+with\s+a\s+verb\b|\b(?:start|begin)\s+(?:your|the)\s+(?:response|answer|reply)\s+with\s+a\s+verb\b",
         "Does the response start with a verb?"),
    rule("words:vowel", r"\bwords?\b[^.]{0,40}?\b(?:only|at\s+most|no\s+more\s+than)\s+(?:three|3)\s+(?:types|kinds|different|distinct)\s*(?:of\s+)?vowels?\b|\b(?:use|using)\s+(?:only|at\s+most)\s+(?:three|3)\s+(?:different|distinct)\s+vowels",
         "Does the response use words with at most three different vowels?"),
    rule("words:words_position", rf"\bsecond\s+word\b[^.]{{0,60}}?\bsecond[- ]to[- ]last\s+word\b[^.]{{0,40}}?\b(?:should|must)\s+be\s+(?:the\s+word\s+)?{_KEYWORD}|\bmake\s+{_KEYWORD}\s+(?:both\s+)?the\s+second\s+(?:word\s+)?and\s+(?:the\s+)?second[- ]to[- ]last\s+word",
         "Is '{keyword}' the second and the second-to-last word?", lambda m: {"keyword": m.group(1) or m.group(2)}),
)
