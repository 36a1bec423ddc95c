"""Batch scoring: every LM-answered question of one output in one call, with a schema of one verdict per question.

The schema has one required key per question (``q1`` .. ``qN``), so a grammar-constrained local model writes every
verdict, in order. A reply is read leniently, key by key: a verdict that is missing or not yes/no (a reply cut off
by the token limit, a remote LM that skipped one) leaves that question unanswered, never yes, and the others stand.
P(yes) is read per question at its own answer token when the LM sends logprobs.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any, Literal

import dspy
from pydantic import BaseModel, Field, create_model

from bineval_dspy.core.schema import Question, Verdict
from bineval_dspy.judges.logprobs import p_yes_from_logprobs

TOKENS_PER_ANSWER = 16  # '"q12": {"answer": "yes"}, ' and some slack
TOKENS_PER_EXPLAINED = 72


class AnswerQuestions(dspy.Signature):
    """You are a strict evaluator. Read the input and the output, then answer every numbered yes/no question about
    the output. Answer "yes" only if the output clearly satisfies what the question asks; otherwise answer "no"."""

    input: str = dspy.InputField(desc="the task input the output responds to")
    output: str = dspy.InputField(desc="the output being evaluated")
    questions: str = dspy.InputField(desc="numbered yes/no questions about the output, one a line (q1: ...)")


class BriefVerdict(BaseModel):
    """Your verdict on this question: "yes" or "no"."""

    answer: Literal["yes", "no"]


class ExplainedVerdict(BaseModel):
    """Your verdict on this question: "yes" or "no", and one short sentence saying why."""

    answer: Literal["yes", "no"]
    explanation: str = Field(max_length=160, description="one short sentence saying why")


@functools.cache
def batch_signature(n: int, explain: bool) -> type[dspy.Signature]:
    """``AnswerQuestions`` with an output of ``n`` verdicts, keys ``q1`` .. ``qn`` in order."""
    item = ExplainedVerdict if explain else BriefVerdict
    verdicts = create_model("Verdicts", __doc__="One verdict per numbered question.", **{f"q{k}": (item, ...) for k in range(1, n + 1)})  # type: ignore[call-overload]
    return AnswerQuestions.append("verdicts", dspy.OutputField(desc="one verdict per question, q1 to qN"), type_=verdicts)


def numbered(questions: Sequence[Question]) -> str:
    return "\n".join(f"q{k}: {q.text}" for k, q in enumerate(questions, start=1))


def read_batch(verdicts: dict[str, Any], questions: Sequence[Question], logprobs: Any, judge: str, read_p: bool) -> dict[str, Verdict]:
    """One verdict per question from the reply's verdicts object: its answer (a missing or non-yes/no one is
    unanswered), explanation, and P(yes) at its own answer token when ``read_p``."""
    read: dict[str, Verdict] = {}
    for k, question in enumerate(questions, start=1):
        entry = verdicts.get(f"q{k}")
        answer = entry.get("answer") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or answer not in ("yes", "no"):
            why = "no verdict for this question in the batch reply" if entry is None else f"unparseable answer {answer!r} in the batch reply"
            read[question.id] = Verdict(question_id=question.id, answer="unanswered", explanation=why, judge=judge)
            continue
        given = entry.get("explanation")
        explanation = given if isinstance(given, str) else ""
        key = re.compile(rf'"q{k}"\s*:\s*\{{\s*"answer"\s*:\s*"')
        p_yes = p_yes_from_logprobs(logprobs, key) if read_p else None
        read[question.id] = Verdict(question_id=question.id, answer=answer, p_yes=p_yes, explanation=explanation, judge=judge)
    return read


def max_tokens(n: int, explain: bool, floor: int) -> int:
    """A token limit that fits ``n`` verdicts (never below the LM's own limit ``floor``)."""
    return max(floor, n * (TOKENS_PER_EXPLAINED if explain else TOKENS_PER_ANSWER) + 16)
