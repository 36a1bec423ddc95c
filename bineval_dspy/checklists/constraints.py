"""Constraints a task states that code can check, found in the task's own words and attached as code questions.

A 135M writer asked for a checklist for "Write a haiku about autumn, all in lowercase letters." wrote "Is it true
that the sky is blue?": it does not notice the one requirement a verifier could answer exactly. The phrasings of the
registry's rules ("do not use any commas", "at least 300 words", "wrap your entire response in double quotation
marks") are few and regular, so patterns find them; each found constraint becomes a question answered by its
verifier, with the kwargs the task gives (a number, a keyword, a phrase). A constraint the patterns miss stays with
the LM writer; one they find is never left to the LM.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.enforce.plan import Plan, Source
from bineval_dspy.verifiers import VerifierError, build_check
from bineval_dspy.verifiers.enforcement import Refuse, compile_plan

DIMENSION = "constraints"  # the dimension of the questions found here
_NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100,
    "single": 1, "a": 1,
}  # fmt: skip
_N = r"(\d+|" + "|".join(_NUMBERS) + r")"
_AT_LEAST = r"at least|more than|over|no less than|a minimum of|minimum of"
_LESS = r"less than|fewer than|under|at most|no more than|a maximum of|maximum of|up to|not exceed(?:ing)?|not more than"
_QUOTED = r"[\"'“‘]([^\"'”’]{1,80})[\"'”’]"
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


def number(text: str) -> int:
    """'3' or 'three' as an int."""
    return int(text) if text.isdigit() else _NUMBERS[text.lower()]


def _relation(words: str) -> str:
    """IFEval's two relations: 'at least' for a floor, 'less than' for a ceiling ('at most N' is less than N + 1)."""
    return "at least" if re.fullmatch(_AT_LEAST, words.lower()) else "less than"


def _ceiling(words: str, n: int) -> int:
    """The 'less than' bound of a ceiling: 'at most 5' and 'no more than 5' allow 5, so less than 6."""
    inclusive = re.fullmatch(r"at most|no more than|a maximum of|maximum of|up to|not exceed(?:ing)?|not more than", words.lower())
    return n + 1 if inclusive else n


def _count(words: str, n: str) -> tuple[str, int]:
    relation = _relation(words)
    value = number(n)
    return relation, value if relation == "at least" else _ceiling(words, value)


def _times(m: re.Match[str], at: int) -> tuple[str, int]:
    """(relation, count) from a match whose groups from ``at`` are: words + number, words + once/twice, or the
    number of "N or more times"."""
    groups = m.groups()[at - 1 :]
    if groups[0]:
        return _count(groups[0], groups[1])
    if len(groups) > 3 and groups[2]:
        return _count(groups[2], {"once": "1", "twice": "2"}[groups[3].lower()])
    return "at least", number(groups[-1])


def _items(text: str) -> list[str]:
    """The keywords of a list such as '"ocean", "wave" and "salt"' (quoted ones if any, else comma/and parts)."""
    quoted = re.findall(_QUOTED, text)
    parts = quoted or re.split(r",\s*|\s+and\s+|\s+or\s+", text)
    return [p.strip(" .") for p in parts if p.strip(" .") and len(p.split()) <= 3]


@dataclass(frozen=True)
class Rule:
    """One checkable constraint: the verifier, the pattern that finds it in a task, and from its match the kwargs
    and the question asked."""

    verifier: str
    pattern: re.Pattern[str]
    kwargs: Callable[[re.Match[str]], dict[str, Any]]
    question: Callable[[dict[str, Any]], str]
    unless: re.Pattern[str] | None = None  # the match's sentence says something else (a negation, a count of words)

    def find(self, task: str) -> re.Match[str] | None:
        """The first match whose sentence ``unless`` does not rule out."""
        for match in self.pattern.finditer(task):
            start = max(task.rfind(".", 0, match.start()), task.rfind("?", 0, match.start()), task.rfind("!", 0, match.start())) + 1
            end = min((i for i in (task.find(".", match.end()), task.find("?", match.end()), len(task)) if i >= 0), default=len(task))
            if self.unless is None or not self.unless.search(task[start:end]):
                return match
        return None


def _rule(
    verifier: str,
    pattern: str,
    question: str | Callable[[dict[str, Any]], str],
    kwargs: Callable[[re.Match[str]], dict[str, Any]] = lambda m: {},
    unless: str | None = None,
) -> Rule:
    ask = question if callable(question) else (lambda kw, text=question: text.format(**kw))
    flags = re.IGNORECASE | (re.DOTALL if verifier == "combination:repeat_prompt" else 0)  # the request spans lines
    return Rule(verifier, re.compile(pattern, flags), kwargs, ask, re.compile(unless, re.IGNORECASE) if unless else None)


def _words(m: re.Match[str]) -> dict[str, Any]:
    relation, n = _count(m.group(1), m.group(2))
    return {"relation": relation, "num_words": n}


def _sentences(m: re.Match[str]) -> dict[str, Any]:
    relation, n = _count(m.group(1), m.group(2))
    return {"relation": relation, "num_sentences": n}


RULES: tuple[Rule, ...] = (
    _rule("change_case:english_lowercase",
          r"\b(?:(?:all|entire(?:ly)?|whole|only|completely)\b[^.]{0,40}\blower[- ]?case|lower[- ]?case letters only|without (?:using |any )?capital letters|\bno capital letters\b|in lower[- ]?case(?: letters)?\b(?!.{0,20}\bonly the\b)|no capital letters (?:are|is) allowed)",
          "Is the whole response in English and in lowercase letters?"),
    _rule("change_case:english_capital",
          r"\b(?:in|with|using|use|entirely in|only) (?:all )?(?:capital letters|caps|upper[- ]?case(?: letters)?)\b|\ball (?:capital letters|caps|upper[- ]?case)\b",
          "Is the whole response in English and in capital letters only?", unless=r"\bwords?\b[^.]{0,60}\b(?:times|at least|at most|less than|fewer than)\b|\bwords?(?: or phrases)? (?:in|with|written in|using) all (?:capital|caps)|\bcapitalized words|\bno capital|\bwithout (?:using |any )?capital|\blower[- ]?case"),
    _rule("change_case:capital_word_frequency",
          rf"\b({_AT_LEAST}|{_LESS}) {_N} (?:\w+ )?words?(?: or phrases)? (?:in|with|written in|using) all (?:capital letters|caps)",
          lambda kw: f"Does the response use {kw['capital_relation']} {kw['capital_frequency']} words written entirely in capital letters?",
          lambda m: dict(zip(("capital_relation", "capital_frequency"), _count(m.group(1), m.group(2))))),
    _rule("change_case:capital_word_frequency",
          rf"words (?:with|in) all capital letters (?:should|must|need to|to)? ?(?:appear|be used)? ?({_AT_LEAST}|{_LESS}) {_N} times",
          lambda kw: f"Does the response use {kw['capital_relation']} {kw['capital_frequency']} words written entirely in capital letters?",
          lambda m: dict(zip(("capital_relation", "capital_frequency"), _count(m.group(1), m.group(2))))),
    _rule("punctuation:no_comma",
          r"(?:(?:\bnot|n't|\bnever|\brefrain from|\bavoid|\bwithout)\s+(?:using\s+|use\s+|including\s+|include\s+|containing\s+|contain\s+|having\s+|have\s+)?(?:any\s+)?commas?|no commas?|commas? (?:are|is) not allowed)\b",
          "Is the response free of commas?"),
    _rule("length_constraints:number_words", rf"\b({_AT_LEAST}|{_LESS}) {_N}\+? words\b(?!(?: or phrases)? (?:in|with|written in|using) all (?:capital|caps))",
          lambda kw: f"Does the response have {kw['relation']} {kw['num_words']} words?", _words),
    _rule("length_constraints:number_words", r"\b(\d+)\+ words?\b",
          lambda kw: f"Does the response have {kw['relation']} {kw['num_words']} words?", lambda m: {"relation": "at least", "num_words": int(m.group(1))}),
    _rule("length_constraints:number_words", r"\b(\d+) words? or (less|fewer|more)\b",
          lambda kw: f"Does the response have {kw['relation']} {kw['num_words']} words?",
          lambda m: {"relation": "at least", "num_words": int(m.group(1))} if m.group(2).lower() == "more" else {"relation": "less than", "num_words": int(m.group(1)) + 1}),
    _rule("length_constraints:number_sentences", rf"\b({_AT_LEAST}|{_LESS}) {_N} sentences?\b",
          lambda kw: f"Does the response have {kw['relation']} {kw['num_sentences']} sentences?", _sentences),
    _rule("length_constraints:number_paragraphs", rf"\b(?:exactly )?{_N} paragraphs?\b[^.]{{0,80}}(?:\*\*\*|markdown divider)",
          "Does the response have exactly {num_paragraphs} paragraphs, separated by the Markdown divider ***?",
          lambda m: {"num_paragraphs": number(m.group(1))}),
    _rule("detectable_format:number_highlighted_sections", rf"\bhighlight (?:at least )?{_N} (?:\w+ )?(?:sections?|parts?)",
          "Does the response highlight at least {num_highlights} sections with Markdown, such as *highlighted section*?",
          lambda m: {"num_highlights": number(m.group(1))}),
    _rule("detectable_format:number_bullet_lists", rf"\bexactly {_N} bullet(?: points?|s)\b",
          "Does the response use exactly {num_bullets} Markdown bullet points?", lambda m: {"num_bullets": number(m.group(1))}),
    _rule("detectable_format:title", r"double angular brackets|<<[^>]+>>",
          "Does the response have a title wrapped in double angular brackets, such as <<title>>?"),
    _rule("detectable_format:json_format", r"\b(?:in|as|using|wrap(?:ped)?[^.]{0,30}in) (?:valid )?json\b|\bjson format\b",
          "Is the entire response valid JSON?"),
    _rule("detectable_format:multiple_sections", rf"\b{_N} sections\b[^.]{{0,80}}?\b(?:with|using|as|by) ['\"]?(section|part|chapter|paragraph|day|step)\s*x['\"]?",
          lambda kw: f"Is the response divided into {kw['num_sections']} sections, each starting with '{kw['section_spliter']} X'?",
          lambda m: {"num_sections": number(m.group(1)), "section_spliter": m.group(2).capitalize()}),
    _rule("detectable_format:constrained_response", r"my answer is (?:yes|no|maybe)",
          "Does the response answer with one of 'My answer is yes.', 'My answer is no.', 'My answer is maybe.'?"),
    _rule("startend:quotation", r"\b(?:wrap|enclose|put|surround)\w*\b[^.]{0,50}\bdouble quot",
          "Is the entire response wrapped in double quotation marks?"),
    _rule("startend:end_checker", rf"\b(?:end|finish|conclude)\w* (?:your |the |this )?(?:\w+ ){{0,2}}with (?:the |this )?(?:exact )?(?:phrase|sentence|words?|line|question)?\s*(?:of\s*)?:?\s*{_QUOTED}|\blast (?:sentence|line|words?) of (?:your|the) \w+ (?:should|must) be\s*:?\s*{_QUOTED}",
          "Does the response end with the exact phrase '{end_phrase}'?", lambda m: {"end_phrase": (m.group(1) or m.group(2)).strip()}),
    _rule("detectable_content:postscript", r"\b(P\.P\.S|P\.S\.)",
          "Does the response end with a postscript starting with {postscript_marker}?", lambda m: {"postscript_marker": m.group(1).upper()}),
    _rule("detectable_content:number_placeholders", rf"\bat least {_N} placeholders?\b",
          "Does the response include at least {num_placeholders} placeholders in square brackets, such as [address]?",
          lambda m: {"num_placeholders": number(m.group(1))}),
    _rule("combination:two_responses", r"(?<!\*)\*{6}(?!\*)|\b(?:6|six) asterisks?(?: symbols)?\b",
          "Does the response give two different responses, separated by six asterisks ******?"),
    _rule("keywords:letter_frequency", rf"\bletter [\"'“‘]?([a-z])[\"'”’]?\b[^.]{{0,40}}?\b(?:({_AT_LEAST}|{_LESS}) {_N}(?: times?)?|({_AT_LEAST}|{_LESS}) (once|twice))",
          lambda kw: f"Does the letter '{kw['letter']}' appear {kw['let_relation']} {kw['let_frequency']} times in the response?",
          lambda m: {"letter": m.group(1).lower(), **dict(zip(("let_relation", "let_frequency"), _times(m, 2)))}),
    _rule("keywords:frequency", rf"\bword [\"'“‘]?([\w-]+)[\"'”’]?[^.]{{0,40}}?\b(?:({_AT_LEAST}|{_LESS}) {_N} times?|({_AT_LEAST}|{_LESS}) (once|twice)|{_N} or more times)",
          lambda kw: f"Does the word '{kw['keyword']}' appear {kw['relation']} {kw['frequency']} times in the response?",
          lambda m: {"keyword": m.group(1), **dict(zip(("relation", "frequency"), _times(m, 2)))}),
    _rule("keywords:existence", r"\b(?:include|contain|mention|use)s? (?:the )?keywords?:?\s+([^.;]{1,120})",
          lambda kw: f"Does the response include the keywords {', '.join(repr(k) for k in kw['keywords'])}?", lambda m: {"keywords": _items(m.group(1))},
          unless=r"(?:\bnot|n't|\bnever|\bavoid|\bwithout)\s+(?:\w+\s+)?(?:include|contain|mention|use)\w*\s+(?:the\s+|any\s+)?keywords?"),
    _rule("keywords:existence", rf"\bmention (?:the (?:word|name|term) )?{_QUOTED}",
          lambda kw: f"Does the response include the keywords {', '.join(repr(k) for k in kw['keywords'])}?", lambda m: {"keywords": [m.group(1)]}),
    _rule("keywords:forbidden_words", r"(?:\bnot|n't|\bnever|\bavoid|\bwithout)\s+(?:use|using|include|including|contain|containing|say|saying|mention|mentioning)\s+(?:the\s+|any\s+of\s+the\s+)?(?:words?|keywords?)\s*:?\s+([^.;]{1,120})",
          lambda kw: f"Does the response avoid the words {', '.join(repr(k) for k in kw['forbidden_words'])}?", lambda m: {"forbidden_words": _items(m.group(1))}),
    _rule("combination:repeat_prompt", r"\A(?:(?!\n\s*\n).)*?\brepeat (?:the|this) (?:exact )?(?:request|sentence|question|prompt)s? below\b.*?\n\s*\n(.*\S)\s*\Z",
          "Does the response start by repeating the request word for word?", lambda m: {"prompt_to_repeat": m.group(1).strip()}),
    _rule("combination:repeat_prompt", r"\A(.*?\S)\s*\n[^\n]*\brepeat (?:the|this) (?:exact )?(?:request|sentence|question|prompt)s?\b(?! below)",
          "Does the response start by repeating the request word for word?", lambda m: {"prompt_to_repeat": m.group(1).strip()}),
    _rule("language:response_language", r"\b(" + "|".join(name.capitalize() for name in LANGUAGES) + r")\b(?=[^.]{0,60}\bno other language)|\b(?:respond|answer|write|reply|response|rewrite)\w*\b[^.]{0,40}?\b(?:only |entirely |fully |wholly )?in (?:only )?(" + "|".join(name.capitalize() for name in LANGUAGES) + r")\b(?!,? and\b)",
          lambda kw: f"Is the whole response in {kw['name']}?", lambda m: {"language": LANGUAGES[(m.group(1) or m.group(2)).lower()], "name": m.group(1) or m.group(2)}),
)


def stated_constraints(task: str) -> list[Question]:
    """The code questions for the constraints ``task`` states, in the order the rules list them: at most one per
    verifier, each with kwargs its verifier accepts (a match whose kwargs it refuses is left to the LM)."""
    found: list[Question] = []
    for rule in RULES:
        if any(q.verifier == rule.verifier for q in found):
            continue
        match = rule.find(task)
        if match is None:
            continue
        kwargs = rule.kwargs(match)
        question = rule.question(kwargs)
        kwargs.pop("name", None)  # words for the question only
        if any(value in ("", []) for value in kwargs.values()):
            continue
        try:
            build_check(rule.verifier, kwargs, prompt=task)
        except (VerifierError, TypeError, ValueError):
            continue
        found.append(Question(text=question, dimension=DIMENSION, verifier=rule.verifier, verifier_kwargs=kwargs or None))
    cased = any(q.verifier in ("change_case:english_lowercase", "change_case:english_capital") for q in found)
    # "in English, and in all capital letters": the case check already requires English
    return [q for q in found if not (cased and q.verifier == "language:response_language" and q.verifier_kwargs == {"language": "en"})]


def with_stated_constraints(task: str, checklist: Checklist | None, constraints: list[Question], duplicate: Callable[[str, str], bool]) -> Checklist | None:
    """``checklist`` (None: the writer gave no usable question) with the code questions first and every written
    question that ``duplicate``s one of them left out (code answers it exactly), renumbered."""
    if not constraints:
        return checklist
    kept = [q for q in (checklist.questions if checklist else []) if not any(duplicate(q.text, c.text) for c in constraints)]
    questions = [q.model_copy(update={"id": f"q{k}"}) for k, q in enumerate([*constraints, *kept], start=1)]
    dimensions = list(checklist.dimensions) if checklist else []
    return Checklist.of(task, [*dimensions, DIMENSION], questions)


Annotated = list[tuple[str, dict[str, Any]]]  # a suite row's (instruction id, kwargs), in its order


def extracted(prompt: str) -> Annotated:
    """The (instruction id, kwargs) of the constraints ``prompt`` states: a plain task's checks (``load_suite``)."""
    return [(q.verifier, dict(q.verifier_kwargs or {})) for q in stated_constraints(prompt) if q.verifier]


def enforcement_plan(prompt: str, source: Source, annotated: Annotated | None = None, refuse: Refuse | None = None) -> Plan:
    """The decoding plan for one prompt: from the constraints its own words state (``extracted``: what a user
    without annotations has, and what the headline figures use) or from the suite's instruction ids (``annotated``);
    ``refuse``: what the LM that will decode cannot execute (``compile_plan``)."""
    if source == "extracted":
        constraints = extracted(prompt)
    else:
        constraints = list(annotated or [])
    return compile_plan(constraints, prompt, source, refuse)
