"""Rules for IFEval's instruction ids: each pattern is written for what the constraint means, in the ways a prompt
says it ("Do not use any commas", "without a single comma", "commas are not allowed"), not for one dataset's
sentences; ``tests/checklists/test_constraints.py`` holds paraphrases of each family."""

from __future__ import annotations

import re
from typing import Any

from bineval_dspy.checklists.stated.rules import (
    AT_LEAST,
    LESS,
    NOT,
    QUOTED,
    N,
    Rule,
    count,
    items,
    number,
    ordinal,
    rule,
    sentence_span,
)
from bineval_dspy.checklists.stated.rules import ORDINAL as _ORD

# langdetect's codes for the languages a task names (what language:response_language checks)
LANGUAGES = {
    "english": "en", "french": "fr", "german": "de", "spanish": "es", "italian": "it", "portuguese": "pt",
    "russian": "ru", "japanese": "ja", "korean": "ko", "chinese": "zh-cn", "hindi": "hi", "arabic": "ar",
    "finnish": "fi", "kannada": "kn", "swahili": "sw", "thai": "th", "vietnamese": "vi", "bengali": "bn",
    "urdu": "ur", "persian": "fa", "farsi": "fa", "tamil": "ta", "telugu": "te", "marathi": "mr", "gujarati": "gu",
    "punjabi": "pa", "nepali": "ne", "polish": "pl", "turkish": "tr", "dutch": "nl", "swedish": "sv",
    "hebrew": "he", "greek": "el", "indonesian": "id", "bulgarian": "bg", "ukrainian": "uk", "czech": "cs",
    "romanian": "ro", "hungarian": "hu", "danish": "da", "norwegian": "no", "croatian": "hr", "slovak": "sk",
}  # fmt: skip
_LANGUAGE = "(" + "|".join(name.capitalize() for name in LANGUAGES) + ")"
_REL = rf"({AT_LEAST}|{LESS})"
_CAPS = r"(?:all\s+)?(?:capital(?:ized)?\s+letters|caps|upper[- ]?case(?:\s+letters)?)"
_TIMES = r"\s+times?\b"
_GAP = r"(?:\s+(?!forget|hesitate|worry|mind|afraid|only|just)[\w']+){0,5}?"  # "do not [ever use any] commas"


def _capital(m: re.Match[str]) -> dict[str, Any]:
    relation, n = count(m.group(1) or m.group(3), m.group(2) or m.group(4))
    return {"capital_relation": relation, "capital_frequency": n}


def _times(words: str | None, n: str | None, once: str | None, plus: str | None) -> tuple[str, int]:
    """(relation, count) of 'at least 3 times', 'less than twice', 'only once', '3 or more times'."""
    if plus:
        return "at least", number(plus)
    value = {"once": "1", "twice": "2", "thrice": "3"}.get((once or "").lower(), n or "1")
    if not words or words.lower() in ("only", "exactly", "just"):
        return "less than", number(value) + 1  # "only once": at most once
    return count(words, value)


# a count of occurrences: "at least 3 times", "less than twice", "only once", "3 or more times", "6 or 7 times" (its
# floor: one verifier question per id, and the floor is what decoding can steer)
_FREQ = rf"(?:\b({AT_LEAST}|{LESS}|only|exactly|just)\s+{N}{_TIMES}|\b({AT_LEAST}|{LESS}|only|exactly|just)?\s*\b(once|twice|thrice)\b|\b{N}\s+(?:or\s+more|\+)\s+times|\b{N}\s+(?:or|to|-)\s+\d+{_TIMES})"


def _frequency(m: re.Match[str], at: int) -> tuple[str, int]:
    g = m.groups()[at - 1 :]
    if g[0]:
        return _times(g[0], g[1], None, None)
    if g[3]:
        return _times(g[2], None, g[3], None)
    return _times(None, None, None, g[4] or g[5])


def _keyword_frequency(m: re.Match[str]) -> dict[str, Any]:
    """keywords:frequency's kwargs; "at least once" is the keyword's existence, left to that rule."""
    relation, n = _frequency(m, 2)
    return {} if (relation, n) == ("at least", 1) else {"keyword": m.group(1), "relation": relation, "frequency": n}


def _forbidden(m: re.Match[str]) -> dict[str, Any]:
    """The forbidden words, the list cut where the sentence goes on to something else ("..., but mention ...")."""
    listed = re.split(r",?\s+(?:but|in\s+(?:your|the|any)|throughout|anywhere|at\s+all|from)\b|\s+etc\b", m.group(1), maxsplit=1)[0]
    if re.search(r"\b(?:more|less|fewer)\s+than\b|\btimes?\b|\btwice\b|\bonce\b", listed, re.IGNORECASE):
        return {}  # "any word more than twice" is a limit on repeats, not a word to avoid
    return {"forbidden_words": items(listed)}


def _nth_paragraph(m: re.Match[str]) -> dict[str, Any]:
    """nth_paragraph_first_word's kwargs from "N paragraphs ..." and the sentence that names the paragraph and word:
    "Paragraph 2 must start with the word X", "start the 4th paragraph with X", "the first paragraph starts with X"."""
    after = m.string[m.end() : m.end() + 300]
    word = r"(?:the\s+)?(?:word\s+)?[\"'“]?([A-Za-z]+)"
    forms = (rf"\bparagraph\s+(?:{_ORD})\b[^.\n]{{0,30}}?\b(?:start|begin)s?\s+with\s+{word}",
             rf"\b(?:{_ORD})\s+paragraph\b[^.\n]{{0,30}}?\b(?:start|begin)s?\s+with\s+{word}",
             rf"\b(?:start|begin)\s+(?:the\s+)?paragraph\s+(?:{_ORD})\s+with\s+{word}",
             rf"\b(?:start|begin)\s+(?:the\s+)?(?:very\s+)?(?:{_ORD})\s+paragraph\s+with\s+{word}")
    for form in forms:
        found = re.search(form, after, re.IGNORECASE)
        if found:
            return {"num_paragraphs": number(m.group(1)), "nth_paragraph": ordinal(found.group(1), found.group(2)), "first_word": found.group(3).lower()}
    return {}


def _section_spliter(m: re.Match[str]) -> dict[str, Any]:
    return {"num_sections": number(m.group(1) or m.group(3)), "section_spliter": m.group(2) or m.group(4)}


def _end_phrase(m: re.Match[str]) -> dict[str, Any]:
    phrase = next(g for g in m.groups() if g)
    return {"end_phrase": phrase.strip()}


def _repeat(m: re.Match[str], rest: str) -> dict[str, Any]:
    """The request to repeat: the text before the instruction's sentence or, when that is empty or it says "below",
    the text after the instruction's paragraph."""
    task = m.string
    start, _ = sentence_span(task, m.start(), m.end())
    before = task[:start].strip()
    below = re.search(r"\b(?:below|following)\b", m.group(0), re.IGNORECASE) is not None
    if before and not below:
        return {"prompt_to_repeat": before}
    gap = re.compile(r"\n\s*\n").search(task, m.end())
    return {"prompt_to_repeat": task[gap.end() :].strip() if gap else ""}


IFEVAL_RULES: tuple[Rule, ...] = (
    rule("change_case:english_lowercase",
         r"\b(?:(?:all|entire(?:ly)?|whole|only|completely|everything)\b[^.]{0,40}\blower[- ]?case|lower[- ]?case\s+(?:letters\s+)?only|without\s+(?:using\s+|any\s+)?capital(?:ized)?\s+letters|\bno\s+capital(?:ized)?\s+letters|\bcapital\s+letters\s+(?:are|is)\s+(?:not\s+(?:allowed|permitted)|forbidden|prohibited|banned)|\bno\s+(?:upper[- ]?case|capitals)\b|(?:\bnot|n't|\bnever|\bwithout)\s+(?:\w+\s+){0,2}?(?:use|using|include|including|contain|containing)\s+(?:any\s+)?capital(?:ized)?\s+letters|\bno(?:t\s+a|\s+single)?\s+(?:single\s+)?letters?\b[^.]{0,40}?\b(?:is|are|be)\s+capitali[sz]ed|in\s+(?:all\s+)?(?:small\s+letters|lower[- ]?case(?:\s+letters)?)\b(?!.{0,20}\bonly the\b))",
         "Is the whole response in English and in lowercase letters?", whole_reply=True),
    rule("change_case:english_capital",
         rf"\bcapitali[sz]e\s+(?:every|each|all)\s+(?:single\s+)?(?:letters?|characters?)\b|\b(?:in|with|using|use|entirely in|only|written in)\s+{_CAPS}\b|\ball\s+(?:capital letters|caps|upper[- ]?case)\b(?!\s+(?:words|for))",
         "Is the whole response in English and in capital letters only?", whole_reply=True,
         unless=r"\bwords?\b[^.]{0,60}\b(?:times|at least|at most|less than|fewer than)\b|\bwords?(?: or phrases)? (?:in|with|written in|using) all (?:capital|caps)|\bcapitalized words|\bno capital|\bwithout (?:using |any )?capital|\blower[- ]?case|(?:\bnot|n't|\bnever)\s+(?:\w+\s+)?(?:use|using|write|writing)\s+(?:any\s+)?capital"),
    rule("change_case:capital_word_frequency",
         rf"\b{_REL}\s+{N}\s+(?:\w+\s+){{0,2}}?(?:words?|phrases?)(?:\s+or\s+phrases)?\s+(?:that\s+are\s+)?(?:in|with|written\s+in|using|entirely\s+in)\s+{_CAPS}|(?:words?|phrases?)\s+(?:\w+\s+){{0,2}}?(?:in|with|written\s+in|using)\s+{_CAPS}[^.]{{0,80}}?\b{_REL}\s+{N}{_TIMES}",
         lambda kw: f"Does the response use {kw['capital_relation']} {kw['capital_frequency']} words written entirely in capital letters?", _capital, whole_reply=True),
    rule("change_case:capital_word_frequency",
         rf"\b{_REL}\s+{N}\s+(?:all[- ]caps|capitali[sz]ed|upper[- ]?case)\s+words?\b|\b(?:all[- ]caps|capitali[sz]ed|upper[- ]?case)\s+words?\b[^.]{{0,60}}?\b{_REL}\s+{N}{_TIMES}",
         lambda kw: f"Does the response use {kw['capital_relation']} {kw['capital_frequency']} words written entirely in capital letters?", _capital, whole_reply=True),
    rule("change_case:capital_word_frequency",
         rf"\b(\d+)\s+(?:to|-|or)\s+\d+\s+(?:such\s+)?(?:(?:all[- ]caps|capitali[sz]ed|upper[- ]?case)\s+words|words\s+(?:in|with|written\s+in)\s+{_CAPS})",
         lambda kw: f"Does the response use {kw['capital_relation']} {kw['capital_frequency']} words written entirely in capital letters?",
         lambda m: {"capital_relation": "at least", "capital_frequency": int(m.group(1))}, whole_reply=True),
    rule("punctuation:no_comma",
         rf"(?:{NOT}|\bomit(?:ting)?|\bzero|\bfree\s+of|\bsteer\s+clear\s+of|\bstay\s+away\s+from){_GAP}\s+(?:single\s+)?commas?\b|\bcommas?\s+(?:are|is)\s+(?:not\s+(?:allowed|permitted)|forbidden|prohibited|banned|disallowed)|\bcommas?\s+(?:must|should|may|can)\s*(?:not|n't|never)\s+(?:be\s+)?(?:used|allowed|permitted|appear|included)|\bcomma-free\b",
         "Is the response free of commas?", whole_reply=True),
    rule("length_constraints:number_words",
         rf"\b{_REL}\s+(?:a\s+total\s+of\s+)?{N}\+?\s+(?:(?!unique|distinct|different)\w+\s+)?words\b(?!(?:\s+or\s+phrases)?\s+(?:that\s+are\s+)?(?:in|with|written\s+in|using)\s+{_CAPS})",
         lambda kw: f"Does the response have {kw['relation']} {kw['num_words']} words?",
         lambda m: dict(zip(("relation", "num_words"), count(m.group(1), m.group(2)))), whole_reply=True,
         unless=r"\bbetween\s+\d+\s+and\s+\d+\s+words"),
    rule("length_constraints:number_words", rf"\b(?:limit|keep|restrict|cap)\s+(?:(?:your|the)\s+(?:answer|response|reply|text|essay|output)\s+|it\s+)?(to|under|below|within)\s+(?:a\s+maximum\s+of\s+)?{N}\s+words\b",
         lambda kw: f"Does the response have {kw['relation']} {kw['num_words']} words?",
         lambda m: {"relation": "less than", "num_words": number(m.group(2)) + (0 if m.group(1).lower() in ("under", "below") else 1)}, whole_reply=True),
    rule("length_constraints:number_words", r"\b(\d+)\s*\+\s*-?\s*words?\b|\b(\d+)\s+(?:or\s+more|and\s+above|plus)\s+words\b",
         lambda kw: f"Does the response have {kw['relation']} {kw['num_words']} words?",
         lambda m: {"relation": "at least", "num_words": int(m.group(1) or m.group(2))}, whole_reply=True),
    rule("length_constraints:number_words", r"\b(\d+)\s+words?\s+or\s+(less|fewer|more)\b|\b(\d+)\s+or\s+(less|fewer)\s+words\b",
         lambda kw: f"Does the response have {kw['relation']} {kw['num_words']} words?",
         lambda m: {"relation": "at least", "num_words": int(m.group(1))} if (m.group(2) or "").lower() == "more"
         else {"relation": "less than", "num_words": int(m.group(1) or m.group(3)) + 1}, whole_reply=True),
    rule("length_constraints:number_words", rf"\b(?:number\s+of\s+words|word\s+count)\b[^.]{{0,40}}?\b(?:{_REL}\s+{N}|(\d+)\s+or\s+(more|less|fewer))\b",
         lambda kw: f"Does the response have {kw['relation']} {kw['num_words']} words?",
         lambda m: dict(zip(("relation", "num_words"), count(m.group(1), m.group(2)))) if m.group(1)
         else {"relation": "at least", "num_words": int(m.group(3))} if m.group(4).lower() == "more" else {"relation": "less than", "num_words": int(m.group(3)) + 1},
         whole_reply=True),
    rule("length_constraints:number_sentences", rf"\b{_REL}\s+(?:a\s+total\s+of\s+)?{N}\s+sentences?\b",
         lambda kw: f"Does the response have {kw['relation']} {kw['num_sentences']} sentences?",
         lambda m: dict(zip(("relation", "num_sentences"), count(m.group(1), m.group(2)))), whole_reply=True),
    rule("length_constraints:number_sentences", r"\b(\d+)\s+sentences?\s+or\s+(less|fewer|more)\b|\b(\d+)\s+or\s+(less|fewer|more)\s+sentences\b",
         lambda kw: f"Does the response have {kw['relation']} {kw['num_sentences']} sentences?",
         lambda m: {"relation": "at least", "num_sentences": int(m.group(1) or m.group(3))} if (m.group(2) or m.group(4)).lower() == "more"
         else {"relation": "less than", "num_sentences": int(m.group(1) or m.group(3)) + 1}, whole_reply=True),
    rule("length_constraints:number_sentences", r"\b(?:between\s+|from\s+|range\s+of\s+)?(\d+)\s+(?:to|and|-)\s+\d+\s+sentences\b|\bnumber\s+of\s+sentences\b[^.]{0,50}?\brange\s+of\s+(\d+)\s+(?:to|and|-)\s+\d+",
         lambda kw: f"Does the response have {kw['relation']} {kw['num_sentences']} sentences?",
         lambda m: {"relation": "at least", "num_sentences": int(m.group(1) or m.group(2))}, whole_reply=True),
    rule("length_constraints:nth_paragraph_first_word",
         rf"\b{N}[- ]paragraphs?\b|\b{N}\s+paragraphs?\b",
         "Does paragraph {nth_paragraph} of the {num_paragraphs} paragraphs start with the word '{first_word}'?",
         _nth_paragraph),
    rule("length_constraints:number_paragraphs",
         rf"\b(?:exactly\s+|only\s+)?{N}\s+(?:(?!\d)\w+\s+)?(?:paragraphs?|stanzas?|sections?|parts?)\b(?=[\s\S]{{0,200}}?(?:\*\*\*|markdown\s+divider|three\s+asterisks?|3\s+asterisks?))",
         "Does the response have exactly {num_paragraphs} paragraphs, separated by the Markdown divider ***?",
         lambda m: {"num_paragraphs": number(m.group(1))}, unless=r"\bSECTION\s+X\b|\bsix\s+asterisk|\*{6}"),
    rule("detectable_format:number_highlighted_sections",
         rf"\b(?:highlight|italici[sz]e|emphasi[sz]e|bold)\w*\s+(?:at\s+least\s+|a\s+minimum\s+of\s+)?{N}\s+(?:\w+\s+){{0,2}}?(?:sections?|parts?|words?|phrases?|keywords?|passages?|places?|spans?|points?)\b|\b(?:highlight|italici[sz]e)\w*\b[^.]{{0,60}}?\bat\s+least\s+{N}\b",
         "Does the response highlight at least {num_highlights} sections with Markdown, such as *highlighted section*?",
         lambda m: {"num_highlights": number(m.group(1) or m.group(2))}),
    rule("detectable_format:number_highlighted_sections",
         r"\b(?:highlight|italici[sz]e)\w*\b[^.]{0,80}?(?:\bmarkdown\b|\*[^*\s][^*\n]{0,40}\*|\busing\s+\*|\bwith\s+\*)",
         "Does the response highlight at least {num_highlights} sections with Markdown, such as *highlighted section*?",
         lambda m: {"num_highlights": 1}),
    rule("detectable_format:number_bullet_lists",
         rf"(?<!at least )(?<!at most )\b(?:exactly|only|just|precisely)\s+{N}\s+(?:markdown\s+)?bullet(?:ed)?(?:\s+points?|s|\s+items?)?\b|\b(?:contains?|include|includes|use|uses|have|has|with|of)\s+{N}\s+(?:markdown\s+)?bullet(?:ed)?(?:\s+points?|s)\b",
         "Does the response use exactly {num_bullets} Markdown bullet points?", lambda m: {"num_bullets": number(m.group(1) or m.group(2))}),
    rule("detectable_format:title", r"double angular brackets|<<[^<>\n]+>>",
         "Does the response have a title wrapped in double angular brackets, such as <<title>>?"),
    rule("detectable_format:json_format", r"\b(?:in|as|using|use|into|with)\s+(?:valid\s+|a\s+|the\s+)?json\b|\bjson\s+(?:format|object|block|code)\b|\bwrap(?:ped)?[^.]{0,30}\bjson\b",
         "Is the entire response valid JSON?", unless=r"\bjson\b[^.]{0,20}\b(?:to|into)\s+(?:yaml|xml|csv)|\bconvert\s+(?:this|the)\s+json"),
    rule("detectable_format:multiple_sections",
         rf"\b{N}[- ]?(?:(?!\d)\w+\s+)?sections?\b[^.]{{0,120}}?(?:\b(?:with|using|as|by|marked|labell?ed|noted\s+as)|\()\s*['\"]?([A-Z][A-Za-z]+)\s+[X1]\b|\b{N}[- ]?(?:(?!\d)\w+\s+)?sections?\b[^\n]{{0,120}}?\b(?:each|every)\s+section\b[^.]{{0,40}}?\b(?:with|as)\s+['\"]?([A-Z][A-Za-z]+)\s+X\b",
         lambda kw: f"Is the response divided into {kw['num_sections']} sections, each starting with '{kw['section_spliter']} X'?", _section_spliter),
    rule("detectable_format:constrained_response", r"my answer is (?:yes|no|maybe)",
         "Does the response answer with one of 'My answer is yes.', 'My answer is no.', 'My answer is maybe.'?", literal=True),
    rule("startend:quotation", r"\b(?:wrap|enclose|put|surround|place)\w*\b[^.]{0,60}\bdouble\s+quot|\bdouble\s+quot\w*(?:\s+marks?)?\s+(?:should\s+be\s+placed\s+)?around\s+(?:your|the)\s+(?:entire|whole)",
         "Is the entire response wrapped in double quotation marks?"),
    rule("startend:end_checker",
         rf"\b(?:end|finish|conclude|close)\w*\s+(?:it\s+|(?:your|the|this|whole|entire)\s+(?:\w+\s+){{0,2}})?with\s+(?:the\s+|this\s+)?(?:exact\s+|following\s+)?(?:phrase|sentence|words?|line|question)?\s*(?:of\s*)?:?\s*{QUOTED}|\b(?:end|finish|conclude|close)\w*\s+(?:it\s+|(?:your|the|this|whole|entire)\s+(?:\w+\s+){{0,2}})?with\s*(?:(?:the|this)\s+)?(?:(?:exact|following)\s+(?:phrase|sentence|words?|question)\s*:?|(?:phrase|sentence|question)?\s*:)\s*((?:[A-Z][^\s\"“]*)(?:\s+[^\s\"“]+){{1,15}}?[.?!])\s*$|\blast\s+(?:sentence|line|words?)\s+of\s+(?:your|the)\s+\w+\s+(?:should|must)\s+be\s*:?\s*{QUOTED}",
         "Does the response end with the exact phrase '{end_phrase}'?", _end_phrase, flags=re.MULTILINE),
    rule("detectable_content:postscript", r"(?:post\s*-?script|\bnote|\badd|\bend|\bfinish|\binclude|\bwith)[^\n]{0,60}?\b(P\.P\.S|P\.S\.)",
         "Does the response end with a postscript starting with {postscript_marker}?", lambda m: {"postscript_marker": m.group(1).upper()}, literal=True),
    rule("detectable_content:number_placeholders", rf"\b(?:at\s+least|a\s+minimum\s+of|no\s+fewer\s+than|no\s+less\s+than)\s+{N}\s+placeholders?\b|\b(\d+)\s+or\s+more\s+placeholders\b",
         "Does the response include at least {num_placeholders} placeholders in square brackets, such as [address]?",
         lambda m: {"num_placeholders": number(m.group(1) or m.group(2))}),
    rule("combination:two_responses", r"(?<!\*)\*{6}(?!\*)|\b(?:6|six)\s+asterisks?(?:\s+symbols)?\b",
         "Does the response give two different responses, separated by six asterisks ******?"),
    rule("keywords:letter_frequency",
         rf"\bletter\s+[\"'“‘]?([a-z])[\"'”’]?(?![\w'])(?=[^.]{{0,70}}?\b(?:times?|once|twice|thrice)\b)[^.]{{0,40}}?{_FREQ}",
         lambda kw: f"Does the letter '{kw['letter']}' appear {kw['let_relation']} {kw['let_frequency']} times in the response?",
         lambda m: {"letter": m.group(1).lower(), **dict(zip(("let_relation", "let_frequency"), _frequency(m, 2)))}, whole_reply=True,
         unless=rf"(?:{NOT}|\bdon't)\s+(?:\w+\s+){{0,2}}?(?:the\s+)?letter\b"),
    rule("keywords:letter_frequency",
         rf"(?:{NOT}|\bdon't)\s+(?:\w+\s+){{0,2}}?(?:the\s+)?letter\s+[\"'“‘]?([a-z])[\"'”’]?(?![\w'])(?:\s+more\s+than\s+(?:{N}{_TIMES}|(once|twice)))?",
         lambda kw: f"Does the letter '{kw['letter']}' appear {kw['let_relation']} {kw['let_frequency']} times in the response?",
         lambda m: {"letter": m.group(1).lower(), "let_relation": "less than",
                    "let_frequency": 1 + (number(m.group(2)) if m.group(2) else {"once": 1, "twice": 2}.get((m.group(3) or "").lower(), 0))},
         whole_reply=True),
    rule("keywords:frequency",
         rf"(?<!-)\b(?:word|keyword|term|name)\s+[\"'“‘]?(?!(?:more|less|than|that|the|a|an|in|of|to|for|and|or|is|are|should|must|may|can|will|appear|appears|only|once|twice|at)\b)([\w-]+)[\"'”’]?(?=[^.]{{0,80}}?\b(?:times?|once|twice|thrice)\b)[^.]{{0,50}}?{_FREQ}",
         lambda kw: f"Does the word '{kw['keyword']}' appear {kw['relation']} {kw['frequency']} times in the response?",
         _keyword_frequency, whole_reply=True,
         unless=r"\bletter\s+[\"'“‘]?[a-z][\"'”’]?\s"),
    rule("keywords:forbidden_words",
         rf"(?:{NOT}\s+(?:\w+\s+){{0,2}}?(?:use|using|include|including|contain|containing|say|saying|mention|mentioning|write|writing)|\bexclude|\bavoid(?:ing)?(?:\s+using)?)\s+(?:the\s+|any\s+of\s+the\s+|any\s+|these\s+)?(?:following\s+|negative\s+)?(?:words?|keywords?|terms?)\s*(?:such\s+as)?\s*:?\s+([^.;\n]{{1,120}})",
         lambda kw: f"Does the response avoid the words {', '.join(repr(k) for k in kw['forbidden_words'])}?", _forbidden,
         whole_reply=True, unless=r"\bcommas?\b[^.]{0,10}$"),
    rule("keywords:forbidden_words",
         rf"(?:\bnot|n't)\s+(?:\w+\s+)?(?:include|contain|use|mention|say)\s+((?:{QUOTED}(?:,?\s*(?:and|or|nor)?\s*)?)+)",
         lambda kw: f"Does the response avoid the words {', '.join(repr(k) for k in kw['forbidden_words'])}?", lambda m: {"forbidden_words": items(m.group(1))}, whole_reply=True),
    rule("keywords:forbidden_words", r"\b(?:word|keyword|term)\s+[\"'“‘]?([\w-]+)[\"'”’]?\s+(?:should|must|does|do|may|can)?\s*(?:not|n't)\s+(?:ever\s+)?(?:appear|be\s+used|occur|show\s+up)",
         lambda kw: f"Does the response avoid the words {', '.join(repr(k) for k in kw['forbidden_words'])}?", lambda m: {"forbidden_words": [m.group(1)]}, whole_reply=True),
    rule("keywords:existence",
         r"\b(?:include|contain|mention|use|feature|incorporate)s?\s+(?:(?!\d)[\w-]+\s+){0,4}?(?:the\s+|these\s+|following\s+)*(?:(?:keywords?|key\s+words|terms|items)\s*:?\s+|words\s*(?::\s*|\s+(?=[\"'“‘\[])))([^.;\n]{1,120})",
         lambda kw: f"Does the response include the keywords {', '.join(repr(k) for k in kw['keywords'])}?", lambda m: {"keywords": items(m.group(1))},
         unless=rf"{NOT}\s+(?:\w+\s+){{0,2}}(?:include|contain|mention|use)\w*\s+(?:\w+\s+){{0,3}}?(?:keywords?|words?)|\b(?:times|twice)\b|(?<!least\s)\bonce\b"),
    rule("keywords:existence", rf"\b(?:mention|include|use)s?\s+(?:the\s+(?:word|name|term|keyword|line)\s+)?{QUOTED}(?![^.]{{0,30}}\b(?:times|twice|(?<!least\s)once)\b)",
         lambda kw: f"Does the response include the keywords {', '.join(repr(k) for k in kw['keywords'])}?", lambda m: {"keywords": items(f'"{m.group(1)}"')},
         unless=rf"{NOT}\s+(?:\w+\s+)?(?:include|contain|mention|use)"),
    rule("combination:repeat_prompt",
         r"\brepeat\b[^\n]{0,40}?\b(?:request|sentence|question|text|prompt|instruction)s?\b[^\n]{0,30}|\bfor\s+the\s+following\s+request\b[^\n]{0,40}\brepeat\b",
         "Does the response start by repeating the request word for word?", rest=_repeat, literal=True,
         unless=r"\b(?:change|replace|alter|different)\b[^.]{0,20}\bfirst\s+word|\bspan\b"),
    rule("language:response_language",
         rf"\b{_LANGUAGE}\b(?=[^.]{{0,60}}\bno\s+other\s+languages?)|\bonly\s+(?:the\s+)?{_LANGUAGE}\s+language\b|\b{_LANGUAGE}\s+language\s+only\b|\b(?:respond|answer|write|reply|response|rewrite|output)\w*\b[^.]{{0,40}}?\b(?:only\s+|entirely\s+|fully\s+|wholly\s+)?in\s+(?:only\s+|the\s+)?{_LANGUAGE}\b(?!,?\s+and\b)(?!\s+(?:style|accent|translation))",
         lambda kw: f"Is the whole response in {kw['name']}?", lambda m: {"language": LANGUAGES[_named(m).lower()], "name": _named(m)},
         unless=r"\b(?:every|each)\s+\S+\s+word\b"),
)



def _named(m: re.Match[str]) -> str:
    return next(g for g in m.groups() if g)
