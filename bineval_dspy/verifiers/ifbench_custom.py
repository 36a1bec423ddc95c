"""IFBench ``custom:*`` verifiers: fixed tasks (CSV, lists, reversals) graded as ``allenai/IFBench`` does."""

from __future__ import annotations

import csv
import io
import re
import string
import unicodedata

from bineval_dspy.core.text import PUNCTUATION_AND_SPACE, delete_ascii_punctuation, split_sentences_punkt
from bineval_dspy.enforce.kinds.sentences import SentencePlan
from bineval_dspy.enforce.kinds.shapes import CsvTable, DateList, QuestionList
from bineval_dspy.enforce.kinds.verbatim import Verbatim
from bineval_dspy.enforce.rules import RuleKind, rules
from bineval_dspy.enforce.steering import Steering
from bineval_dspy.verifiers.registry import (
    Check,
    Enforcement,
    Finding,
    ordinal,
    plural,
    quote,
    quote_list,
    quote_tail,
    register,
)

_MULTIPLES_OF_7 = [str(n) for n in range(14, 51, 7)]  # "count from 10 to 50, only multiples of 7"

# Capitals of European countries north of 45 degrees, by latitude from highest to lowest.
_NORTHERN_CAPITALS = [
    "Reykjavik", "Helsinki", "Oslo", "Tallinn", "Stockholm", "Riga", "Moscow", "Copenhagen", "Vilnius",
    "Minsk", "Dublin", "Berlin", "Amsterdam", "Warsaw", "London", "Brussels", "Prague", "Luxembourg",
    "Paris", "Vienna", "Bratislava", "Budapest", "Vaduz", "Chisinau", "Bern", "Ljubljana", "Zagreb",
]  # fmt: skip
_AFRICAN_COUNTRIES_MIN_LINES = 52  # lines from "Zimbabwe" on that the official grader requires

_CITY_HEADER = ["ID", "Country", "City", "Year", "Count"]
_SPECIAL_HEADER = re.compile(
    r'^(ProductID|"ProductID"),[ \t]*(Category|"Category"),[ \t]*(Brand|"Brand"),'
    r'[ \t]*(Price|"Price"),[ \t]*(Stock|"Stock")$'
)
_QUOTES_HEADER = re.compile(
    r'^(StudentID|"StudentID")\t *(Subject|"Subject")\t *(Grade|"Grade")\t *(Semester|"Semester")\t *(Score|"Score")$'
)
_QUOTED_SPECIAL_FIELD = re.compile(r'".*[^\d\w\s].*"')

_QUESTION_LABEL = re.compile(r"\n*(?:Question \d+[.|):;]?\s*)")
_OPTION_LINE = re.compile(r"^[A-Ea-e][.|)]\s*\w+")

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DAYS_IN_MONTH = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}
_UNCHECKED_DAYS = 99  # the official grader puts no bound on the day of month "00"
_NAPOLEON_YEARS = range(1769, 1822)  # his lifetime


def _shaped(kind: RuleKind) -> Enforcement:
    """The enforcement of a custom id whose whole reply one rule shapes (its kwargs are none: the prompt is fixed)."""
    return Enforcement(kind.how, lambda: Steering(rules=rules(kind)))


_KNOWLEDGE = "passing needs the answer itself ({}), which no mask or forced text can supply without writing it for the model"


def _ascii_fold(text: str) -> str:
    """Drop diacritics (São Tomé -> Sao Tome) and any other non-ASCII character, as the official graders do."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def _csv_rows(text: str, delimiter: str = ",") -> list[list[str]] | None:
    """Rows of ``text`` read as CSV (blank lines give empty rows), or None if it is not parseable."""
    try:
        return list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error:
        return None


def _csv_rows_keeping_quotes(text: str, delimiter: str = ",") -> list[list[str]] | None:
    """CSV rows whose fields keep their double quotes (each quote is tripled first, as the official grader does)."""
    return _csv_rows(text.replace('"', '"""'), delimiter)


@register(
    "custom:character_reverse",
    rule="Write the answer backwards, letter by letter, so that 'bald eagle' appears as 'elgae dlab'.",
    unenforceable=_KNOWLEDGE.format("which animal is the US national symbol, then reversed"),
)
def character_reverse() -> Check:
    """The answer ("bald eagle") is written backwards letter by letter: contains "elgae dlab", any case."""

    def check(response: str) -> Finding:
        asked = "asked for 'bald eagle' reversed letter by letter ('elgae dlab')"
        text = response.lower()
        if "elgae dlab" in text:
            return Finding(True, f"{asked}; found it")
        forwards = " (it is written forwards)" if "bald eagle" in text else ""
        return Finding(False, f"{asked}; not found{forwards}")

    return check


def _csv_shape(rows: list[list[str]] | None, lines: int) -> str:
    """What is wrong with ``rows`` when it is not CSV of ``lines`` lines (header included)."""
    return "the text is not parseable as CSV" if rows is None else f"found {plural(len(rows), 'line')}, not {lines}"


@register(
    "custom:csv_city",
    rule="Answer with only a comma-separated CSV table: the header ID,Country,City,Year,Count and exactly 7 rows "
    "of 5 fields.",
    enforce=_shaped(CsvTable(header=",".join(_CITY_HEADER), delimiter=",", rows=7, fields=5)),
)
def csv_city() -> Check:
    """Comma-separated CSV: the header ID,Country,City,Year,Count then exactly 7 rows of 5 fields."""

    def check(response: str) -> Finding:
        asked = "asked for CSV with the header ID,Country,City,Year,Count and 7 rows"
        rows = _csv_rows(response)
        if rows is None or len(rows) != 8:
            return Finding(False, f"{asked}; {_csv_shape(rows, 8)}")
        if rows[0] != _CITY_HEADER:
            return Finding(False, f"{asked}; the header is {quote(','.join(rows[0]), 40)}")
        short = next((i for i, row in enumerate(rows[1:], start=2) if len(row) != 5), None)
        if short is not None:
            return Finding(False, f"{asked}; line {short} has {plural(len(rows[short - 1]), 'field')}, not 5")
        return Finding(True, f"{asked}; it has them")

    return check


@register(
    "custom:csv_quotes",
    rule="Answer with only a tab-separated CSV table: the header StudentID, Subject, Grade, Semester, Score "
    "and 3 rows, every field in double quotes.",
    enforce=_shaped(
        CsvTable(header='"StudentID"\t"Subject"\t"Grade"\t"Semester"\t"Score"', delimiter="\t", rows=3, fields=5, quote="all")
    ),
)
def csv_quotes() -> Check:
    """Tab-separated CSV: StudentID/Subject/Grade/Semester/Score header, 3 rows, every field in double quotes."""

    def check(response: str) -> Finding:
        asked = "asked for tab-separated CSV (StudentID, Subject, Grade, Semester, Score), 3 rows, all fields quoted"
        first = response.split("\n")[0].strip()
        if not _QUOTES_HEADER.match(first):
            return Finding(False, f"{asked}; the first line is {quote(first, 30)}")
        rows = _csv_rows_keeping_quotes(response, delimiter="\t")
        if rows is None or len(rows) != 4:
            return Finding(False, f"{asked}; {_csv_shape(rows, 4)}")
        for line, row in enumerate(rows, start=1):
            fields = [field.strip() for field in row]
            if len(fields) != 5:
                return Finding(False, f"{asked}; line {line} has {plural(len(fields), 'field')}, not 5")
            bare = [f for f in fields if not (f and f[0] == '"' and f[-1] == '"')]
            if bare:
                return Finding(False, f"{asked}; line {line} has the unquoted field {quote(bare[0], 20)}")
        return Finding(True, f"{asked}; it has them")

    return check


@register(
    "custom:csv_special_character",
    rule="Answer with only a comma-separated CSV table: the header ProductID,Category,Brand,Price,Stock and 14 rows, "
    "with at least one field in double quotes that holds a special character.",
    enforce=_shaped(CsvTable(header="ProductID,Category,Brand,Price,Stock", delimiter=",", rows=14, fields=5, quote="special")),
)
def csv_special_character() -> Check:
    """Comma CSV: ProductID/Category/Brand/Price/Stock header, 14 rows, a quoted field with a special character.

    Like the official grader, rows are checked in order and the first row holding such a field
    settles the answer (rows after it are not checked).
    """

    def check(response: str) -> Finding:
        asked = "asked for CSV (ProductID,Category,Brand,Price,Stock), 14 rows, a quoted field with a special character"
        first = response.split("\n")[0].strip()
        if not _SPECIAL_HEADER.match(first):
            return Finding(False, f"{asked}; the first line is {quote(first, 30)}")
        rows = _csv_rows_keeping_quotes(response)
        if rows is None or len(rows) != 15:
            return Finding(False, f"{asked}; {_csv_shape(rows, 15)}")
        for line, row in enumerate(rows[1:], start=2):
            if len(row) != 5:
                return Finding(False, f"{asked}; line {line} has {plural(len(row), 'field')}, not 5")
            special = next((field for field in row if _QUOTED_SPECIAL_FIELD.match(field)), None)
            if special is not None:
                return Finding(True, f"{asked}; line {line} has {quote(special, 20)}")
        return Finding(False, f"{asked}; no quoted field holds a special character")

    return check


@register(
    "custom:date_format_list",
    rule="List only dates, written YYYY-MM-DD and separated by commas, all within Napoleon's lifetime (1769-1821).",
    # The years are the grader's window (Napoleon's lifetime): a range each date is kept in, not an answer.
    enforce=_shaped(DateList(first_year=_NAPOLEON_YEARS.start, last_year=_NAPOLEON_YEARS.stop - 1)),
)
def date_format_list() -> Check:
    """Only comma-separated YYYY-MM-DD dates, years 1769-1821, months <= 12, days within the month's length."""

    def check(response: str) -> Finding:
        asked = "asked for comma-separated YYYY-MM-DD dates from 1769-1821"
        for item in response.strip().split(","):
            item = item.strip()
            if not _ISO_DATE.match(item):
                return Finding(False, f"{asked}; {quote(item, 25)} is not a YYYY-MM-DD date")
            year, month, day = (int(part) for part in item.split("-"))
            if year not in _NAPOLEON_YEARS:
                return Finding(False, f"{asked}; {quote(item)} is outside 1769-1821")
            if month > 12 or day > _DAYS_IN_MONTH.get(month, _UNCHECKED_DAYS):
                return Finding(False, f"{asked}; {quote(item)} is not a valid date")
        return Finding(True, f"{asked}; every item is one")

    return check


@register(
    "custom:european_capitals_sort",
    rule="List only the capitals of the 27 European countries north of 45°N, separated by commas, ordered from "
    "the northernmost to the southernmost.",
    unenforceable=_KNOWLEDGE.format("which capitals lie north of 45°N, ordered by latitude"),
)
def european_capitals_sort() -> Check:
    """Exactly the 27 capitals north of 45°N, comma-separated, from north to south (diacritics ignored)."""

    def check(response: str) -> Finding:
        asked = "asked for the 27 capitals north of 45°N, from north to south"
        items = [item.strip() for item in _ascii_fold(response).split(",") if item.strip()]
        if items == _NORTHERN_CAPITALS:
            return Finding(True, f"{asked}; the list matches")
        found = f"found {plural(len(items), 'item')}"
        same = next((i for i, (a, b) in enumerate(zip(items, _NORTHERN_CAPITALS)) if a != b), None)
        if same is not None:
            return Finding(
                False,
                f"{asked}; {found}, item {same + 1} is {quote(items[same], 20)}, not {quote(_NORTHERN_CAPITALS[same])}",
            )
        if len(items) < len(_NORTHERN_CAPITALS):
            return Finding(False, f"{asked}; {found}, missing {quote_list(_NORTHERN_CAPITALS[len(items) :])}")
        return Finding(False, f"{asked}; {found}, extra {quote_list(items[len(_NORTHERN_CAPITALS) :])}")

    return check


@register(
    "custom:mcq_count_length",
    rule="Write exactly 4 multiple-choice questions, each labelled 'Question N' with 5 options A-E, nothing before "
    "the first, and each question's text longer than the one before.",
    enforce=_shaped(QuestionList(count=4, options=5)),
)
def mcq_count_length() -> Check:
    """4 questions labelled "Question N" with nothing before the first, 5 options (A-E) each, stems growing longer."""

    def check(response: str) -> Finding:
        asked = "asked for 4 'Question N' items with 5 options each, growing longer"
        if not response.startswith("Question"):
            return Finding(False, f"{asked}; the response starts with {quote(response, 20)}")
        questions = [q.strip() for q in _QUESTION_LABEL.split(response) if q.strip()]
        if len(questions) != 4:
            return Finding(False, f"{asked}; found {plural(len(questions), 'question')}")
        stem_lengths = []
        for number, question in enumerate(questions, start=1):
            stem, options = "", 0
            for line in question.split("\n"):
                if _OPTION_LINE.match(line.strip()):
                    options += 1
                elif not options:  # question text is everything before the first option
                    stem += " " + line.strip()
            if options != 5:
                return Finding(False, f"{asked}; question {number} has {plural(options, 'option')}")
            stem_lengths.append(len(stem.strip()))
        lengths = ", ".join(str(length) for length in stem_lengths)
        growing = all(shorter < longer for shorter, longer in zip(stem_lengths, stem_lengths[1:]))
        return Finding(growing, f"{asked}; the question texts are {lengths} characters long")

    return check


@register(
    "custom:multiples",
    rule="Count from 10 to 50 giving only the multiples of 7 (14, 21, 28, 35, 42, 49), with no other numbers.",
    # The answer is computed from the prompt's own words (count 10 to 50, multiples of 7): forcing it is honest.
    enforce=_shaped(Verbatim(text=", ".join(_MULTIPLES_OF_7))),
)
def multiples() -> Check:
    """The numbers in the response are exactly 14, 21, 28, 35, 42, 49, in that order (no other numbers)."""

    def check(response: str) -> Finding:
        found = re.findall(r"\d+", response)
        asked = "asked for exactly the numbers 14, 21, 28, 35, 42, 49"
        shown = ", ".join(found[:8]) + (", …" if len(found) > 8 else "")
        return Finding(found == _MULTIPLES_OF_7, f"{asked}; found {len(found)}" + (f": {shown}" if found else ""))

    return check


@register(
    "custom:reverse_newline",
    rule="List the African countries one per line, in reverse alphabetical order starting from Zimbabwe "
    f"(at least {_AFRICAN_COUNTRIES_MIN_LINES} lines).",
    unenforceable="the 52 lines are the African countries: how many and which needs knowledge, and an order mask "
    "alone would fill the lines with whatever sorts",
)
def reverse_newline() -> Check:
    """From the first line naming Zimbabwe: at least 52 non-empty lines in reverse alphabetical order."""

    def check(response: str) -> Finding:
        asked = f"asked for {_AFRICAN_COUNTRIES_MIN_LINES}+ lines in reverse alphabetical order from Zimbabwe"
        lines = [line.strip(PUNCTUATION_AND_SPACE) for line in response.split("\n")]
        lines = [line for line in lines if line]
        start = next((i for i, line in enumerate(lines) if "Zimbabwe" in line), None)
        if start is None:
            return Finding(False, f"{asked}; no line names Zimbabwe")
        if len(lines) - start < _AFRICAN_COUNTRIES_MIN_LINES:
            return Finding(False, f"{asked}; found {plural(len(lines) - start, 'line')} from Zimbabwe on")
        folded = [_ascii_fold(line) for line in lines[start:]]
        wrong = next(((a, b) for a, b in zip(folded, folded[1:]) if a < b), None)
        if wrong is not None:
            return Finding(False, f"{asked}; {quote(wrong[0], 20)} comes before {quote(wrong[1], 20)}")
        return Finding(True, f"{asked}; found {len(folded)} in order")

    return check


@register(
    "custom:sentence_alphabet",
    rule="Write exactly 26 sentences whose first words start with the letters a to z, in alphabetical order.",
    enforce=_shaped(SentencePlan(initials=string.ascii_lowercase)),
)
def sentence_alphabet() -> Check:
    """Exactly 26 sentences (split at . ? !, not at line breaks) whose first words start with a, b, ..., z."""

    def check(response: str) -> Finding:
        asked = "asked for 26 sentences starting with a to z in order"
        sentences = split_sentences_punkt(response)
        if len(sentences) != 26:
            return Finding(False, f"{asked}; found {len(sentences)}")
        for number, (letter, sentence) in enumerate(zip(string.ascii_lowercase, sentences), start=1):
            words = sentence.split()
            if not words or words[0].lower()[0] != letter:
                return Finding(
                    False, f"{asked}; the {ordinal(number)} starts {quote(sentence, 20)}, not with {letter!r}"
                )
        return Finding(True, f"{asked}; they do")

    return check


@register(
    "custom:word_reverse",
    rule="Write the answer with its words in reverse order, so that reading the words backwards gives 'bald eagle'.",
    unenforceable=_KNOWLEDGE.format("which animal is the US national symbol"),
)
def word_reverse() -> Check:
    """The answer is written with its words in reverse order: reading the words backwards gives "bald eagle".

    The official grader also requires the reversed text to be one sentence, which always holds once
    its ASCII punctuation (including . ? !) is deleted.
    """

    def check(response: str) -> Finding:
        asked = "asked for the words in reverse order ('eagle bald')"
        words = delete_ascii_punctuation(response.lower()).split()
        if "bald eagle" in " ".join(reversed(words)):
            return Finding(True, f"{asked}; read backwards they give 'bald eagle'")
        return Finding(False, f"{asked}; read backwards they end {quote_tail(' '.join(reversed(words)))}")

    return check
