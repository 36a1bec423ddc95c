"""The checklist screen: a written checklist is checked against what its writer promises before it is saved.

A small LM can write one question that repeats "I am a haiku" a dozen times, or a TICK list of one question where
TICK promises 2-8, and the run still looked like a success. ``screen`` names each such problem in one line;
``write_screened`` asks the writer again (bounded, at a raised temperature so the retry is a new sample, never a
cache replay), keeps the questions that pass from every attempt, and returns what passed with what is left wrong.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bineval_dspy.core.schema import Checklist, Question

MAX_WORDS = 40  # a question longer than this asks more than one atomic thing (BinEval's questions are one line)
REPEATED_NGRAM = 3  # a three-word sequence that occurs ...
REPEATS = 3  # ... this many times makes a question that repeats itself
RETRIES = 2  # attempts after the first
RETRY_TEMPERATURE = 0.7  # a retry at temperature 0 would replay the same answer
ABOUT_THE_CHECKLIST = re.compile(r"\byes\s*(?:/|or)\s*no\s+questions?\b|\bchecklists?\b", re.IGNORECASE)
STUTTER = re.compile(r"(\S{2,}?)\1{4,}")  # one piece five times in a row, no space between ("no_no_no_no_no_")
AUXILIARIES = frozenset(
    "is are was were am does do did has have had can could will would should shall may might must".split()
)
QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|‘[^’]*’|(?<!\w)'.+?'(?!\w)")  # what a question quotes is not its own voice
SPEAKER = re.compile(  # a question whose subject is the reader or the writer ("Are you sure ...", "Have we ...")
    r"^(?:" + "|".join(sorted(AUXILIARIES)) + r")(?:n't|'t|\s+not)?\s+(?:you|we|i)\b"
    r"|\byou(?:'re|'ve|'ll|'d|\s+are|\s+were|\s+have)\b",  # the reader's own state anywhere ("... sure you're on time?")
    re.IGNORECASE,
)
LEAKED_KEY = re.compile(r'"\s*:')  # a JSON key's end inside a value ('summary": ...'): the writer's reply cut mid-object
JSON_PUNCTUATION = frozenset('{}[]":,')


def repeats_itself(text: str) -> str | None:
    """What ``text`` repeats ('a phrase' N times), or None: a three-word sequence ``REPEATS`` times, or one piece
    five times with nothing between."""
    words = re.findall(r"[\w']+", text.lower())
    grams = Counter(tuple(words[i : i + REPEATED_NGRAM]) for i in range(len(words) - REPEATED_NGRAM + 1))
    if grams and max(grams.values()) >= REPEATS:
        phrase, times = grams.most_common(1)[0]
        return f"'{' '.join(phrase)}' {times} times"
    stutter = STUTTER.search(text)
    return f"{stutter.group(1)!r} {len(stutter.group(0)) // len(stutter.group(1))} times in a row" if stutter else None


def question_problem(text: str) -> str | None:
    """Why one question is unfit for a yes/no judge, or None: not a yes/no question, several questions, a
    question that repeats itself, one past ``MAX_WORDS``, one about the checklist instead of the response, or one
    addressed to the reader (its subject "you", "we" or "I" outside quotes: a judge cannot answer for them)."""
    words = re.findall(r"[\w']+", text.lower())
    if not words:
        return "is empty"
    if len(words) > MAX_WORDS:
        return f"is too long ({len(words)} words; at most {MAX_WORDS})"
    repeated = repeats_itself(text)
    if repeated:
        return f"repeats itself ({repeated})"
    if ABOUT_THE_CHECKLIST.search(text):
        return "asks about the checklist, not the response"
    if SPEAKER.search(QUOTED.sub("", text).strip()):
        return "is addressed to the reader, not about the response"
    if text.count("?") > 1:
        return "asks more than one question"
    first = re.sub(r"^[^\w]+", "", text).split(maxsplit=1)
    if not text.rstrip().endswith("?") or not first or first[0].lower().strip(",") not in AUXILIARIES:
        return "is not a yes/no question (it should start like 'Is', 'Does', 'Has' ... and end with '?')"
    return None


def json_debris(text: str, name: bool = False) -> str | None:
    """Why ``text`` is a fragment of the writer's JSON rather than words, or None: brackets or double quotes that do
    not pair, a JSON key inside a value that is no whole JSON document, or JSON punctuation with no letter (a
    ``name``, such as a dimension, needs a letter even without punctuation). A no_example that is a whole JSON
    document (a "no" for a JSON task) is words."""
    stripped = text.strip()
    if not stripped:
        return None
    if stripped.count("{") != stripped.count("}") or stripped.count("[") != stripped.count("]") or stripped.count('"') % 2:
        return "unpaired brackets or quotes"
    if LEAKED_KEY.search(stripped) and not _is_json(stripped):
        return "a JSON key inside it"
    if not re.search(r"[^\W\d_]", stripped) and (name or JSON_PUNCTUATION & set(stripped)):
        return "no words, only digits or punctuation"
    return None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def field_problem(q: Question) -> str | None:
    """Why ``q`` is unfit beyond its text, or None: a dimension that is JSON debris (the writer's reply was split
    in the wrong place, so the question's fields are not what it meant)."""
    why = json_debris(q.dimension, name=True)
    return f"has a dimension that is JSON debris ({why}): {q.dimension[:40]!r}" if why else None


def _cleaned(q: Question) -> tuple[Question, list[str]]:
    """``q`` without a no_example or lineage entries that are debris (a stutter or JSON), and a line per field left out."""
    left_out: list[str] = []
    update: dict[str, Any] = {}
    why = json_debris(q.no_example) or (f"repeats itself ({repeated})" if (repeated := repeats_itself(q.no_example)) else None)
    if why:
        update["no_example"] = ""
        left_out.append(f"the no_example {q.no_example[:40]!r} of {q.text[:60]!r}: {why}")
    lineage = {key: value for key, value in q.lineage.items() if not json_debris(value)}  # a count ("support") is no debris
    if lineage != q.lineage:
        update["lineage"] = lineage
        left_out += [f"the lineage {key}={value[:40]!r} of {q.text[:60]!r}: JSON debris" for key, value in q.lineage.items() if key not in lineage]
    return (q.model_copy(update=update) if update else q), left_out


@dataclass
class Screened:
    """What the screen let through, the problems left, and how many writer attempts it took."""

    checklist: Checklist | None
    problems: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # one line per question or field left out, with why
    attempts: int = 1


def checklist_problems(checklist: Checklist, dimensions: list[str], minimum: int) -> list[str]:
    """Problems of the checklist as a whole: fewer questions than promised, a requested dimension with none."""
    problems = []
    if len(checklist.questions) < minimum:
        problems.append(f"{len(checklist.questions)} question(s); the method promises at least {minimum}")
    covered = {q.dimension.strip().lower() for q in checklist.questions}
    problems += [f"dimension '{d}' has no question" for d in dimensions if d.strip().lower() not in covered]
    return problems


def screen(checklist: Checklist, dimensions: list[str], minimum: int) -> list[str]:
    """Every problem of ``checklist``, one line each: the checklist's own, then each unfit question's."""
    return checklist_problems(checklist, dimensions, minimum) + [
        f"question {q.id} {problem}: {q.text[:80]!r}" for q in checklist.questions if (problem := question_problem(q.text) or field_problem(q))
    ]


def promised_minimum(writer: Any, dimensions: list[str]) -> int:
    """The fewest questions ``writer`` promises: TICK its lower bound (per dimension), others one per dimension."""
    from bineval_dspy.checklists.tick import TickWriter

    if isinstance(writer, TickWriter):
        return writer.write.n_questions[0] * max(1, len(dimensions))
    return max(1, len(dimensions))


Unrelated = Callable[[str], "str | None"]  # why a question is not about the task (``relevance.Relevance.problem``), or None


def _kept(checklists: list[Checklist], unrelated: Unrelated | None = None) -> tuple[list[Question], list[str], list[str]]:
    """The fit questions of every attempt (first wins on repeats), cleaned of debris fields; a line per question
    left out, and one per field left out (no reason to ask again: the question stays)."""
    kept: dict[str, Question] = {}
    dropped: dict[str, str] = {}
    fields: list[str] = []
    for checklist in checklists:
        for q in checklist.questions:
            key = " ".join(q.text.lower().split())
            if key in kept or key in dropped:
                continue
            problem = question_problem(q.text) or field_problem(q) or (unrelated(q.text) if unrelated else None)
            if problem:
                dropped.setdefault(key, f"{q.text[:80]!r} {problem}")
            else:
                kept[key], left_out = _cleaned(q)
                fields += left_out
    return list(kept.values()), list(dropped.values()), fields


def _merged(first: Checklist, questions: list[Question]) -> Checklist | None:
    """The first attempt's task with the kept questions, renumbered, and the dimensions they use (in the first
    attempt's order); None when none is kept."""
    if not questions:
        return None
    renumbered = [q.model_copy(update={"id": f"q{k}"}).model_dump() for k, q in enumerate(questions, start=1)]
    used = {q.dimension for q in questions}
    dimensions = [d for d in first.dimensions if d in used] + sorted(used - set(first.dimensions))
    return Checklist.model_validate({**first.model_dump(), "dimensions": dimensions, "questions": renumbered})


def write_screened(
    write: Callable[[int], Checklist | None], dimensions: list[str], minimum: int, retries: int = RETRIES, unrelated: Unrelated | None = None
) -> Screened:
    """Write (``write(attempt)``; None: that attempt gave nothing), screen, and write again while problems remain,
    at most ``retries`` more times; the result holds the fit questions of every attempt and the problems none of
    them fixed. ``unrelated``: also leave out questions that are not about the task."""
    attempts: list[Checklist] = []
    result = Screened(checklist=None)
    for attempt in range(retries + 1):
        written = write(attempt)
        if written is not None:
            attempts.append(written)
        questions, dropped, fields = _kept(attempts, unrelated)
        merged = _merged(attempts[0], questions) if attempts else None
        left = checklist_problems(merged, dimensions, minimum) if merged is not None else ["no question passed the screen"]
        result = Screened(checklist=merged, problems=left, dropped=dropped + fields, attempts=attempt + 1)
        if not left and (not dropped or attempt > 0):  # a dropped question is worth one retry to replace it
            break
    return result


def with_constraints(
    write: Callable[[int], Checklist | None],
    task: str,
    dimensions: list[str],
    minimum: int,
    relevance: Any = None,
    constraints: list[Question] | None = None,
    retries: int = RETRIES,
) -> Screened:
    """``write_screened`` with the task's own checkable constraints: questions ``relevance`` (a
    ``relevance.Relevance``) finds unrelated are left out, and ``constraints`` (``constraints.stated_constraints``)
    join the written questions as code questions, replacing any written question that asks the same."""
    from bineval_dspy.checklists.stated import with_stated_constraints

    screened = write_screened(write, dimensions, minimum, retries, relevance.problem if relevance is not None else None)
    if not constraints:
        return screened
    merged = with_stated_constraints(task, screened.checklist, constraints, relevance.duplicate if relevance is not None else lambda a, b: False)
    assert merged is not None  # constraints were given
    return Screened(checklist=merged, problems=checklist_problems(merged, dimensions, minimum), dropped=screened.dropped, attempts=screened.attempts)
