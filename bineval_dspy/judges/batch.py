"""Batch scoring: every LM-answered question of one output in one call, with a schema of one verdict per question.

The schema has one required key per question (``q1`` .. ``qN``), so a grammar-constrained local model writes every
verdict, in order. A reply is read leniently, key by key: a verdict that is missing or not yes/no (a reply cut off
by the token limit, a remote LM that skipped one) leaves that question unanswered, never yes, and the others stand.
P(yes) is read per question at its own answer token when the LM sends logprobs. ``BatchJudge`` is the judge kind that
asks this way.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import dspy
from dspy.utils.exceptions import LMAuthError
from pydantic import BaseModel, Field, create_model

from bineval_dspy.core.errors import InputError, one_line
from bineval_dspy.core.schema import Question, Scoring, Verdict
from bineval_dspy.judges.logprobs import p_yes_from_logprobs
from bineval_dspy.judges.question import CONTENT_FREE_OUTPUT, NO_P_YES, Front, QuestionJudge, majority
from bineval_dspy.judges.verdict import BatchAdapter
from bineval_dspy.lm.cache import reply_journal

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


class BatchJudge(QuestionJudge):
    """The per-question options, with every LM question of one output answered in one call per sample (its
    content-free prior one call too) through the judge's ``answer_all``; a failure's explanation and a lone
    question (``verdict``) are still asked per question."""

    scoring: ClassVar[Scoring] = "batch"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._batch_adapter = BatchAdapter()

    def verdicts(self, judge: Front, input: str, output: str, questions: Sequence[Question]) -> dict[str, Verdict]:
        explain = self.explanations == "all"
        votes = [self._batch(judge, input, output, questions, i, explain) for i in range(self.samples)]
        answers = votes[0] if self.samples == 1 else {q.id: majority(q.id, [vote[q.id] for vote in votes], self.partial) for q in questions}
        priors = self._batch(judge, input, CONTENT_FREE_OUTPUT, questions, 0, False) if self.calibration == "content_free" else {}
        return self.settled(judge, input, output, questions, answers, priors)

    def _batch(self, judge: Front, input: str, output: str, questions: Sequence[Question], sample: int, explain: bool) -> dict[str, Verdict]:
        """One LM call answering every question; an error or a reply with no verdicts leaves them all unanswered."""
        if not questions:
            return {}
        lm = judge.answer_lm()
        judge_name = getattr(lm, "model", "unknown-lm")
        config: dict[str, Any] = {"max_tokens": max_tokens(len(questions), explain, int((getattr(lm, "kwargs", None) or {}).get("max_tokens") or 0))}
        config.update(self.rollout(judge, sample))
        reads_p = self.reads_p_yes()
        if reads_p:
            config.update(logprobs=True, top_logprobs=10)
        assert judge.answer_all is not None  # a batch judge is built with its batch predictor
        signature = batch_signature(len(questions), explain).with_instructions(judge.answer_all.signature.instructions)
        with reply_journal() as journal:
            try:
                with dspy.context(adapter=self._batch_adapter):
                    pred = judge.answer_all(input=input, output=output, questions=numbered(questions), config=config, signature=signature)
                verdicts = read_batch(pred.verdicts, questions, getattr(pred, "logprobs", None), judge_name, reads_p)
            except LMAuthError as exc:
                raise InputError(f"{judge_name}: the LM refused the API key ({one_line(exc)}); check `api_key_env`") from None
            except Exception as exc:  # any other LM or parse failure leaves every question unanswered, never yes
                why = f"no usable batch answer: {one_line(exc)}"
                verdicts = {q.id: Verdict(question_id=q.id, answer="unanswered", explanation=why, judge=judge_name) for q in questions}
            if any(v.answer == "unanswered" for v in verdicts.values()):
                journal.forget()  # a reply that left a verdict out is not replayed: a rerun asks again
        if self.needs_p_yes():
            verdicts = {
                qid: v.model_copy(update={"explanation": f"{v.explanation} {NO_P_YES}".strip()}) if v.p_yes is None and v.answer != "unanswered" else v
                for qid, v in verdicts.items()
            }
        return verdicts
