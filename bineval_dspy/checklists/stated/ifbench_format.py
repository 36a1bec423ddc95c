"""Rules for IFBench's format, ratio, repeat and custom ids: what each constraint means, in the ways a prompt says
it; ``tests/checklists/test_stated_ifbench.py`` holds paraphrases of each. The custom ids grade one fixed task each
(a CSV with named columns, multiples of 7 from 10 to 50), so their rules ask for that task's defining words."""

from __future__ import annotations

import re
from typing import Any

from bineval_dspy.checklists.stated.rules import LESS, N, Rule, number, rule, sentence_span


def _before(m: re.Match[str]) -> str:
    """The prompt's text before the sentence that states the match: the request a repeat rule copies from."""
    start, _ = sentence_span(m.string, m.start(), m.end())
    return m.string[:start].strip()


def _separator(m: re.Match[str]) -> dict[str, Any]:
    """format:list's marker: quoted, or the run of non-space characters after "use" (its sentence's final period
    dropped)."""
    sep = (m.group(1) or m.group(2) or "").strip()
    if m.group(2) and sep.endswith(".") and len(sep) > 1:
        sep = sep[:-1]
    return {"sep": sep}


def _options(m: re.Match[str]) -> dict[str, Any]:
    text = m.group(1).strip()
    return {"options": text[:-1] if text.endswith(".") else text}


def _span(m: re.Match[str], rest: str) -> dict[str, Any]:
    return {"prompt_to_repeat": _before(m), "n_start": number(m.group(1)), "n_end": number(m.group(2))}


def _stop_words(m: re.Match[str]) -> dict[str, Any]:
    return {"percentage": float(m.group(1) or m.group(2))}


IFBENCH_FORMAT_RULES: tuple[Rule, ...] = (
    # format:*
    rule("format:emoji", r"\b(?:use|put|add|place|include|with)\s+(?:an\s+)?emojis?\s+at\s+the\s+end\s+of\s+(?:every|each|all)\s+(?:the\s+)?sentences?\b|\b(?:end|finish|close)\s+(?:every|each|all)\s+(?:of\s+your\s+)?sentences?\s+with\s+(?:an\s+)?emojis?\b|\b(?:every|each)\s+sentence\s+(?:must|should|has\s+to|needs\s+to)\s+end\s+(?:with|in)\s+(?:an\s+)?emoji",
         "Does every sentence end with an emoji?"),
    rule("format:line_indent", r"\bstairs?\b[^.]{0,40}?\bindent|\bindent\w*\b[^.]{0,40}?\b(?:each|every)\s+(?:new\s+|next\s+|following\s+)?line\b[^.]{0,40}?\b(?:more|further|deeper|incrementally|progressively)|\bincrementally\s+indent|\bstaircase\b",
         "Is every line indented further than the one before, like stairs?"),
    rule("format:list", r"\binstead\s+of\s+(?:bullet\s+points|bullets)\s*,?\s+use\s+(?:[\"'“‘]([^\"'”’]{1,20})[\"'”’]|(\S{1,20}))|\buse\s+(?:[\"'“‘]([^\"'”’]{1,20})[\"'”’])\s+(?:as\s+(?:the\s+)?(?:bullet|list)\s+(?:marker|symbol|points?)|instead\s+of\s+bullet)",
         "Is the response a list whose items are marked with '{sep}'?", lambda m: _separator(m) if (m.group(1) or m.group(2)) else {"sep": m.group(3)}, literal=True),
    rule("format:newline", r"\b(?:write|put|place|print)\s+(?:each|every)\s+word\s+on\s+(?:a\s+new|its\s+own|a\s+separate|a\s+different)\s+line\b|\bone\s+word\s+per\s+line\b|\b(?:each|every)\s+word\s+(?:must|should)\s+(?:be\s+)?on\s+(?:a\s+new|its\s+own|a\s+separate)\s+line",
         "Is every word on a line of its own?"),
    rule("format:no_bullets_bullets", r"\bat\s+least\s+(?:two|2)\s+sentences\b[^.]{0,60}?\bfollowed\s+by\s+at\s+least\s+(?:two|2)\s+bullet",
         "Does the response give at least two sentences and then at least two '*' bullet points?"),
    rule("format:no_whitespace", r"\b(?:not|never|no|without)\s+(?:\w+\s+){0,3}?(?:any\s+)?(?:whitespace|white\s+space)s?\b|\bwhitespace\s+(?:is|are)\s+not\s+allowed",
         "Is the response free of any whitespace?"),
    rule("format:options", r"\b(?:answer|respond|reply)\s+(?:only\s+)?with\s+(?:only\s+)?one\s+of\s+the\s+following\s+options\s*:\s*([^\n]+?)(?=\.\s+[A-Z]|\.?\s*$|\.[A-Z])|\bchoose\s+(?:only\s+)?one\s+of\s+(?:these|the\s+following)\s+options\s*:\s*([^\n]+?)(?=\.\s|\.?\s*$)",
         "Is the whole response one of the options {options}?", lambda m: _options(m) if m.group(1) else {"options": m.group(2).strip()}, flags=re.MULTILINE),
    rule("format:output_template", r"\btemplate\b[^\n]{0,60}?My\s+Answer:[^\n]{0,80}?My\s+Conclusion:[^\n]{0,80}?Future\s+Outlook:",
         "Does the response follow the template My Answer: / My Conclusion: / Future Outlook:?"),
    rule("format:parentheses", r"\bnest\w*\s+(?:\w+\s+){0,3}?(?:parenthes[ie]s|brackets)\b[^.]{0,60}?\b(?:at\s+least\s+)?(?:5|five)\s+levels?\s+deep|\b(?:parenthes[ie]s|brackets)\b[^.]{0,40}?\bnested\s+(?:at\s+least\s+)?(?:5|five)\s+levels?",
         "Do brackets nest at least 5 levels deep?"),
    rule("format:quote_unquote", r"\b(?:every|each)\s+(?:quoted\s+phrase|quotation|quote)\b[^.]{0,40}?\bfollowed\s+by\s+(?:an?\s+)?(?:unquoted|explanation)|\bfollow\s+(?:every|each)\s+(?:quoted\s+phrase|quotation|quote)\s+with\s+(?:an?\s+)?(?:unquoted\s+)?explanation",
         "Is every quoted phrase followed by an unquoted explanation?"),
    rule("format:quotes", r"\bquotes?\s+within\s+quotes?\b|\bnest\w*\s+quot\w+\b[^.]{0,40}?\b(?:3|three)\s+levels?|\bquotations?\s+(?:nested\s+)?(?:at\s+least\s+)?(?:3|three)\s+levels?\s+deep",
         "Do quotations nest at least 3 levels deep, alternating double and single quotes?"),
    rule("format:sub-bullets", r"\bbullet\s+points?\b[^.]{0,40}?\bsub-?\s?bullet|\b(?:each|every)\s+(?:\*\s+)?bullet\b[^.]{0,60}?\bsub-?\s?bullet|\bsub-?\s?bullets?\b[^.]{0,60}?\b(?:each|every)\s+(?:\*\s+)?bullet",
         "Does every '*' bullet point have at least one '-' sub-bullet?"),
    rule("format:thesis", r"\bthesis\s+statement\b[^.]{0,30}?\bitalic|\bitalic\w*\s+thesis\b|\bthesis\b[^.]{0,60}\bhtml\b[^.]{0,20}\bitalic|<i>\s*thesis",
         "Does the response state a thesis in HTML italics and go on after it?"),
    rule("format:title_case", r"\btitle\s+case\b|\bcapitali[sz]e\s+the\s+first\s+letter\s+of\s+(?:every|each|all)\s+(?:major\s+)?words?\b",
         "Is the whole response in title case?", whole_reply=True),
    # ratio:*
    rule("ratio:overlap", r"\b(?:trigram|n-?gram)\s+overlap\s+of\s+(\d+(?:\.\d+)?)\s*%|\b(\d+(?:\.\d+)?)\s*%\s+(?:trigram\s+)?overlap\s+with\s+the\s+(?:provided|given|reference)",
         "Do about {percentage}% of the response's trigrams overlap the reference text?",
         rest=lambda m, rest: {"reference_text": rest, "percentage": float(m.group(1) or m.group(2))}),
    rule("ratio:sentence_balance", r"\bratio\s+of\s+sentence\s+types\b[^.]{0,80}?\bbalanced|\bequal\s+(?:numbers?|counts?)\s+of\s+declarative,?\s+interrogative,?\s+and\s+exclamatory",
         "Are declarative, interrogative and exclamatory sentences equally many?"),
    rule("ratio:sentence_type", r"\b2\s*:\s*1\s+ratio\s+of\s+declarative\s+to\s+interrogative|\btwice\s+as\s+many\s+declarative\s+(?:sentences\s+)?as\s+interrogative",
         "Are there twice as many declarative sentences as questions?"),
    rule("ratio:sentence_words", r"\b(?:three|3)\s+sentences\b[^.]{0,40}?\bsame\s+number\s+of\s+characters\b",
         "Does the response have three sentences of equal length in characters, with all different words?"),
    rule("ratio:stop_words", rf"\bstop\s*-?words?\b[^.]{{0,40}}?\b(?:{LESS}|constitute\s+(?:{LESS}))\s+(\d+(?:\.\d+)?)\s*%|\b(?:{LESS})\s+(\d+(?:\.\d+)?)\s*%\s+(?:of\s+(?:the\s+)?(?:words\s+)?(?:should\s+be\s+|as\s+)?)?stop\s*-?words",
         "Are stop words at most {percentage}% of the response's words?", _stop_words, whole_reply=True),
    # repeat:*
    rule("repeat:repeat_change", r"\brepeat\s+(?:the|my|this)\s+(?:request|prompt|question)\b[^.!]{0,40}?\b(?:change|replace|alter|different)\w*\b[^.!]{0,20}?\bfirst\s+word",
         "Does the response repeat the request with only its first word changed?", rest=lambda m, rest: {"prompt_to_repeat": _before(m)}, literal=True),
    rule("repeat:repeat_simple", r"\b(?:only|just)\s+output\s+this\s+sentence\b|\boutput\s+only\s+this\s+sentence\b",
         "Is the response exactly the sentence the prompt asks for?"),
    rule("repeat:repeat_span", rf"\bcopy\s+(?:the\s+)?(?:span|words?|text)\b[^.!]{{0,60}}?\bindex\s+{N}\s+(?:and|to|through)\s+(?:index\s+)?{N}\b",
         "Is the response exactly the requested span of the request?", rest=_span, literal=True),
    # custom:*
    rule("custom:character_reverse", r"\breverse\s+order\b[^.]{0,60}?\bper\s+(?:letter|character)\b|\b(?:backwards|reversed?),?\s+(?:letter\s+by\s+letter|character\s+by\s+character)",
         "Is the answer written backwards, letter by letter?"),
    rule("custom:word_reverse", r"\breverse\s+order\b[^.]{0,60}?\bper\s+word\b|\b(?:backwards|reversed?),?\s+word\s+by\s+word|\bwords\s+in\s+reverse\s+order\b",
         "Is the answer written with its words in reverse order?"),
    rule("custom:csv_city", r"\bcsv\b[^\n]{0,80}?\bID\W+Country\W+City\W+Year\W+Count\b",
         "Is the response a CSV table with the columns ID, Country, City, Year, Count and 7 rows?"),
    rule("custom:csv_quotes", r"\bcsv\b[^\n]{0,80}?\bStudentID\W+Subject\W+Grade\W+Semester\W+Score\b",
         "Is the response a tab-separated CSV with the columns StudentID, Subject, Grade, Semester, Score, every field quoted?"),
    rule("custom:csv_special_character", r"\bcsv\b[^\n]{0,80}?\bProductID\W+Category\W+Brand\W+Price\W+Stock\b",
         "Is the response a CSV with the columns ProductID, Category, Brand, Price, Stock and a quoted special-character field?"),
    rule("custom:date_format_list", r"\bdates?\b[^.]{0,80}?\bNapoleon\b[^\n]{0,80}?YYYY-MM-DD|\bNapoleon\b[^\n]{0,120}?\bdates?\b[^\n]{0,80}?YYYY-MM-DD",
         "Is the response only Napoleon's battle dates, as YYYY-MM-DD, separated by commas?"),
    rule("custom:european_capitals_sort", r"\bcapital\s+cities\s+of\s+european\s+countries\b[^\n]{0,120}?\blatitude\b",
         "Is the response the northern European capitals, ordered by latitude, separated by commas?"),
    rule("custom:mcq_count_length", r"\b(?:4|four)\s+multiple[- ]choice\s+questions\b[^\n]{0,200}?\bprogressively\s+longer",
         "Does the response give 4 multiple-choice questions with 5 options each, each question longer than the last?"),
    rule("custom:multiples", r"\bcount\s+from\s+10\s+to\s+50\b[^.]{0,40}?\bmultiples\s+of\s+(?:7|seven)\b",
         "Does the response count from 10 to 50 giving only the multiples of 7?"),
    rule("custom:reverse_newline", r"\bcountries\s+of\s+africa\b[^.]{0,40}?\breverse\s+alphabetical\s+order\b",
         "Does the response list the African countries in reverse alphabetical order, one per line?"),
    rule("custom:sentence_alphabet", r"\b26[- ]sentence\b[^.]{0,80}?\balphabet\b|\b(?:each|every)\s+sentence'?s?\s+first\s+word\b[^.]{0,40}?\bletters?\s+of\s+the\s+alphabet\s+in\s+order",
         "Do the response's 26 sentences start with the letters a to z in order?"),
)
