"""IFBench ``custom:*`` verifiers: fixed tasks (CSV, lists, reversals) graded as ``allenai/IFBench`` does."""

from __future__ import annotations

import csv
import io
import re
import string
import unicodedata

from bineval_dspy.verifiers.registry import Check, register
from bineval_dspy.verifiers.text import PUNCTUATION_AND_SPACE, delete_ascii_punctuation, split_sentences_punkt

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


@register("custom:character_reverse")
def character_reverse() -> Check:
    """The answer ("bald eagle") is written backwards letter by letter: contains "elgae dlab", any case."""
    return lambda response: "elgae dlab" in response.lower()


@register("custom:csv_city")
def csv_city() -> Check:
    """Comma-separated CSV: the header ID,Country,City,Year,Count then exactly 7 rows of 5 fields."""

    def check(response: str) -> bool:
        rows = _csv_rows(response)
        if rows is None or len(rows) != 8 or rows[0] != _CITY_HEADER:
            return False
        return all(len(row) == 5 for row in rows[1:])

    return check


@register("custom:csv_quotes")
def csv_quotes() -> Check:
    """Tab-separated CSV: StudentID/Subject/Grade/Semester/Score header, 3 rows, every field in double quotes."""

    def check(response: str) -> bool:
        if not _QUOTES_HEADER.match(response.split("\n")[0].strip()):
            return False
        rows = _csv_rows_keeping_quotes(response, delimiter="\t")
        if rows is None or len(rows) != 4:
            return False
        for row in rows:
            fields = [field.strip() for field in row]
            if len(fields) != 5 or not all(f and f[0] == '"' and f[-1] == '"' for f in fields):
                return False
        return True

    return check


@register("custom:csv_special_character")
def csv_special_character() -> Check:
    """Comma CSV: ProductID/Category/Brand/Price/Stock header, 14 rows, a quoted field with a special character.

    Like the official grader, rows are checked in order and the first row holding such a field
    settles the answer (rows after it are not checked).
    """

    def check(response: str) -> bool:
        if not _SPECIAL_HEADER.match(response.split("\n")[0].strip()):
            return False
        rows = _csv_rows_keeping_quotes(response)
        if rows is None or len(rows) != 15:
            return False
        for row in rows[1:]:
            if len(row) != 5:
                return False
            if any(_QUOTED_SPECIAL_FIELD.match(field) for field in row):
                return True
        return False

    return check


@register("custom:date_format_list")
def date_format_list() -> Check:
    """Only comma-separated YYYY-MM-DD dates, years 1769-1821, months <= 12, days within the month's length."""

    def check(response: str) -> bool:
        for item in response.strip().split(","):
            item = item.strip()
            if not _ISO_DATE.match(item):
                return False
            year, month, day = (int(part) for part in item.split("-"))
            if year not in _NAPOLEON_YEARS or month > 12 or day > _DAYS_IN_MONTH.get(month, _UNCHECKED_DAYS):
                return False
        return True

    return check


@register("custom:european_capitals_sort")
def european_capitals_sort() -> Check:
    """Exactly the 27 capitals north of 45°N, comma-separated, from north to south (diacritics ignored)."""

    def check(response: str) -> bool:
        items = [item.strip() for item in _ascii_fold(response).split(",") if item.strip()]
        return items == _NORTHERN_CAPITALS

    return check


@register("custom:mcq_count_length")
def mcq_count_length() -> Check:
    """4 questions labelled "Question N" with nothing before the first, 5 options (A-E) each, stems growing longer."""

    def check(response: str) -> bool:
        if not response.startswith("Question"):
            return False
        questions = [q.strip() for q in _QUESTION_LABEL.split(response) if q.strip()]
        if len(questions) != 4:
            return False
        stem_lengths = []
        for question in questions:
            stem, options = "", 0
            for line in question.split("\n"):
                if _OPTION_LINE.match(line.strip()):
                    options += 1
                elif not options:  # question text is everything before the first option
                    stem += " " + line.strip()
            if options != 5:
                return False
            stem_lengths.append(len(stem.strip()))
        return all(shorter < longer for shorter, longer in zip(stem_lengths, stem_lengths[1:]))

    return check


@register("custom:multiples")
def multiples() -> Check:
    """The numbers in the response are exactly 14, 21, 28, 35, 42, 49, in that order (no other numbers)."""
    return lambda response: re.findall(r"\d+", response) == _MULTIPLES_OF_7


@register("custom:reverse_newline")
def reverse_newline() -> Check:
    """From the first line naming Zimbabwe: at least 52 non-empty lines in reverse alphabetical order."""

    def check(response: str) -> bool:
        lines = [line.strip(PUNCTUATION_AND_SPACE) for line in response.split("\n")]
        lines = [line for line in lines if line]
        start = next((i for i, line in enumerate(lines) if "Zimbabwe" in line), None)
        if start is None or len(lines) - start < _AFRICAN_COUNTRIES_MIN_LINES:
            return False
        folded = [_ascii_fold(line) for line in lines[start:]]
        return folded == sorted(folded, reverse=True)

    return check


@register("custom:sentence_alphabet")
def sentence_alphabet() -> Check:
    """Exactly 26 sentences (split at . ? !, not at line breaks) whose first words start with a, b, ..., z."""

    def check(response: str) -> bool:
        sentences = split_sentences_punkt(response)
        if len(sentences) != 26:
            return False
        for letter, sentence in zip(string.ascii_lowercase, sentences):
            words = sentence.split()
            if not words or words[0].lower()[0] != letter:
                return False
        return True

    return check


@register("custom:word_reverse")
def word_reverse() -> Check:
    """The answer is written with its words in reverse order: reading the words backwards gives "bald eagle".

    The official grader also requires the reversed text to be one sentence, which always holds once
    its ASCII punctuation (including . ? !) is deleted.
    """

    def check(response: str) -> bool:
        words = delete_ascii_punctuation(response.lower()).split()
        return "bald eagle" in " ".join(reversed(words))

    return check
