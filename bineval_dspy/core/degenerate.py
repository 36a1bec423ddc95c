"""Whether a run's LM verdicts carry information: a judge that answers (nearly) every question the same way, or
whose explanations repeat a phrase or echo its prompt, scores nothing about the outputs, and a run must say so.

The rule, in one place (``degeneracy``): over at least ``MIN_VERDICTS`` answered LM verdicts (code-answered and
recorded reference verdicts do not count; unanswered ones are reported apart), the run is degenerate when one answer
is at least ``ONE_ANSWER_SHARE`` of them, or when at least ``DEGENERATE_SHARE`` of the explained ones repeat a
phrase (a 4-word run three times) or hold prompt text (``LEAKED``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel

from bineval_dspy.core.schema import Verdict

MIN_VERDICTS = 10  # fewer LM verdicts say too little to call the judge degenerate
ONE_ANSWER_SHARE = 0.95  # one answer at least this share of the LM verdicts: the judge does not tell outputs apart
DEGENERATE_SHARE = 0.5  # explanations at least this share degenerate: the LM is not reading the question
REPEATS = 3  # a 4-word run this many times in one explanation is a repeated phrase
LEAKED = ("your input fields are", "your output fields are", "[[ ##", "all interactions will be structured", "respond with a json object")
_WORD = re.compile(r"\w+")


def degenerate_explanation(text: str) -> bool:
    """An explanation that repeats a phrase or holds the judge's prompt text."""
    lowered = text.lower()
    if any(marker in lowered for marker in LEAKED):
        return True
    words = _WORD.findall(lowered)
    runs = Counter(tuple(words[i : i + 4]) for i in range(len(words) - 3))
    return bool(runs) and max(runs.values()) >= REPEATS


class Degenerate(BaseModel):
    """What made a run's LM verdicts degenerate: ``one_answer`` (``count`` of ``verdicts`` were ``answer``) or
    ``explanations`` (``count`` of the ``verdicts`` explained ones repeat a phrase or hold prompt text, e.g.
    ``example``)."""

    kind: Literal["one_answer", "explanations"]
    verdicts: int
    count: int
    answer: Literal["yes", "no"] | None = None
    example: str = ""

    @property
    def what(self) -> str:
        """What is wrong, without advice: the mark a table of the run's scores carries."""
        if self.kind == "one_answer":
            return f"{self.count} of {self.verdicts} LM verdicts are '{self.answer}'"
        return f"{self.count} of {self.verdicts} LM explanations repeat a phrase or echo the prompt (e.g. {self.example[:60]!r})"

    def message(self, lm: str = "`lm`") -> str:
        """One line: what is wrong and what to do; ``lm`` names the setting that picks the judge's LM (a command
        says its flag for the parameter in backticks)."""
        return (
            f"degenerate judge: {self.what}, so the scores say little about the outputs; "
            f"train a probe judge on reference labels (bineval calibrate) or judge with a stronger {lm}"
        )


class Tally(BaseModel):
    """The counts the rule reads, added one verdict at a time (memory flat in the number of verdicts)."""

    yes: int = 0
    no: int = 0
    explained: int = 0
    degenerate: int = 0
    example: str = ""

    def add(self, verdict: Verdict) -> None:
        """Count an answered LM verdict; code, reference and unanswered ones are left out."""
        if verdict.answer == "unanswered" or verdict.judge.startswith("code:") or verdict.judge == "reference":
            return
        self.yes += verdict.answer == "yes"
        self.no += verdict.answer == "no"
        if verdict.explanation.strip():
            self.explained += 1
            if degenerate_explanation(verdict.explanation):
                self.degenerate += 1
                self.example = self.example or " ".join(verdict.explanation.split())

    @classmethod
    def of(cls, verdicts: Iterable[Verdict]) -> Tally:
        tally = cls()
        for verdict in verdicts:
            tally.add(verdict)
        return tally


def degeneracy(tally: Tally) -> Degenerate | None:
    """The run's LM verdicts judged by the rule above: what is degenerate about them, or None."""
    answered = tally.yes + tally.no
    if answered < MIN_VERDICTS:
        return None
    top: Literal["yes", "no"] = "yes" if tally.yes >= tally.no else "no"
    count = max(tally.yes, tally.no)
    if count >= ONE_ANSWER_SHARE * answered:
        return Degenerate(kind="one_answer", verdicts=answered, count=count, answer=top)
    if tally.explained >= MIN_VERDICTS and tally.degenerate >= DEGENERATE_SHARE * tally.explained:
        return Degenerate(kind="explanations", verdicts=tally.explained, count=tally.degenerate, example=tally.example)
    return None


_FINISHED = re.compile(r"""[.!?:;)\]}>*"'`\d]$""")


def degenerate_text(text: str) -> str | None:
    """Why a generated reply is degenerate, or None: ``empty``; ``loop``, a 6-word run three times (a model
    repeating itself); ``unfinished``, ending mid-sentence (cut at its token limit). Counted beside accuracy, so a
    decoder that satisfies a rule by wrecking the text shows it."""
    if not text.strip():
        return "empty"
    words = _WORD.findall(text.lower())
    runs = Counter(tuple(words[i : i + 6]) for i in range(len(words) - 5))
    if runs and max(runs.values()) >= REPEATS:
        return "loop"
    return None if _FINISHED.search(text.rstrip()) else "unfinished"
