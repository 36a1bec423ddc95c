"""BinaryJudge: answer every checklist question independently, one LM call per question.

The shared context (input, output) precedes the question in every prompt, so an in-process
model reuses its KV cache across the questions of one output. A question with a code
verifier is answered by code, never by the LM. Any failure to get a parseable answer
(garbage, an exception, a timeout) is an "unanswered" verdict, never a yes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Literal

import dspy
from pydantic import BaseModel, Field

from bineval_dspy.schema import Checklist, Question, Scorecard, Verdict
from bineval_dspy.scoring import score

class Answer(BaseModel):
    """Your verdict on the question: "yes" or "no", and one short sentence saying why."""

    # Output models are shown to the LM as JSON schema (docstring included); bounds live on their fields
    # so they reach the schema and a local model's grammar.

    answer: Literal["yes", "no"]
    explanation: str = Field(max_length=160, description="one short sentence saying why")


class AnswerQuestion(dspy.Signature):
    """You are a strict evaluator. Read the input and the output, then answer the yes/no question about the output.
    Answer "yes" only if the output clearly satisfies what the question asks; otherwise answer "no"."""

    input: str = dspy.InputField(desc="the task input the output responds to")
    output: str = dspy.InputField(desc="the output being evaluated")
    question: str = dspy.InputField(desc="a yes/no question about the output")
    verdict: Answer = dspy.OutputField()


CodeRouter = Callable[[Question, str, str], Verdict | None]


class BinaryJudge(dspy.Module):
    """Answers each question of a checklist on its own and aggregates the verdicts into a Scorecard.

    Options: ``chain_of_thought`` (reason before answering), ``samples`` (k-sample majority vote,
    as in TICK), ``probability`` (score with P(yes)/(P(yes)+P(no)) read from token logprobs).
    ``code_router`` answers questions that have a code verifier without calling the LM.
    """

    def __init__(
        self,
        *,
        chain_of_thought: bool = False,
        samples: int = 1,
        probability: bool = False,
        sample_temperature: float = 0.7,
        adapter: dspy.Adapter | None = None,
        code_router: CodeRouter | None = None,
    ) -> None:
        super().__init__()
        if samples < 1:
            raise ValueError("samples must be at least 1")
        self.answer = dspy.ChainOfThought(AnswerQuestion) if chain_of_thought else dspy.Predict(AnswerQuestion)
        self.samples = samples
        self.probability = probability
        self.sample_temperature = sample_temperature
        self.adapter = adapter or dspy.JSONAdapter()
        self.code_router = code_router

    def forward(self, input: str, output: str, checklist: Checklist) -> Scorecard:
        verdicts = [self.judge_question(input, output, q) for q in checklist.questions]
        return score(checklist, verdicts, use_probability=self.probability)

    def judge_question(self, input: str, output: str, question: Question) -> Verdict:
        """One verdict for one question: by code when a verifier applies, else by the LM."""
        if self.code_router is not None:
            routed = self.code_router(question, input, output)
            if routed is not None:
                return routed
        votes = [self._ask(input, output, question, i) for i in range(self.samples)]
        return votes[0] if self.samples == 1 else _majority(question.id, votes)

    def _ask(self, input: str, output: str, question: Question, sample: int) -> Verdict:
        lm = self.answer_lm()
        judge_name = getattr(lm, "model", "unknown-lm")
        config: dict = {}
        if self.samples > 1:
            config.update(temperature=self.sample_temperature, rollout_id=sample)
        if self.probability:
            config.update(logprobs=True, top_logprobs=10)
        try:
            with dspy.context(adapter=self.adapter):
                pred = self.answer(input=input, output=output, question=question.text, config=config)
            answer, explanation = pred.verdict.answer, pred.verdict.explanation
        except Exception as exc:  # any LM or parse failure is an unanswered question, never a yes
            return Verdict(
                question_id=question.id, answer="unanswered", explanation=f"no usable answer: {one_line(exc)}", judge=judge_name
            )
        if answer not in ("yes", "no"):
            return Verdict(question_id=question.id, answer="unanswered", explanation=f"unparseable answer {answer!r}", judge=judge_name)
        p_yes = p_yes_from_logprobs(getattr(pred, "logprobs", None)) if self.probability else None
        if p_yes is not None:
            answer = "yes" if p_yes >= 0.5 else "no"
        return Verdict(question_id=question.id, answer=answer, p_yes=p_yes, explanation=explanation, judge=judge_name)

    def answer_lm(self) -> dspy.LM | None:
        """The LM this judge calls: its own if set, else the configured one."""
        return self.answer.predictors()[0].lm or dspy.settings.lm


def p_yes_from_logprobs(logprobs) -> float | None:
    """P(yes)/(P(yes)+P(no)) at the answer token: the first yes/no token generated after "answer".

    Reads the raw top candidates there, so "Yes"/"No" variants add to the mass.
    """
    content = logprobs.get("content") if isinstance(logprobs, dict) else logprobs
    generated = ""
    for entry in content or []:
        token = _field(entry, "token")
        if "answer" in generated and _word(token) in ("yes", "no"):
            mass = {"yes": 0.0, "no": 0.0}
            for cand in _field(entry, "top_logprobs") or []:
                word = _word(_field(cand, "token"))
                if word in mass:
                    mass[word] += math.exp(_field(cand, "logprob"))
            total = mass["yes"] + mass["no"]
            return mass["yes"] / total if total > 0 else None
        generated += token
    return None


def _field(obj, name: str):
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _word(token: str) -> str:
    return token.strip().strip('"').strip().lower()


def _majority(question_id: str, votes: list[Verdict]) -> Verdict:
    """Majority of answered votes; a tie or no answered vote is unanswered."""
    counts = Counter(v.answer for v in votes if v.answer != "unanswered")
    yes, no = counts["yes"], counts["no"]
    answer = "unanswered" if yes == no else ("yes" if yes > no else "no")
    winner = next((v for v in votes if v.answer == answer), votes[0])
    p_yes = yes / (yes + no) if yes + no else None
    return Verdict(
        question_id=question_id,
        answer=answer,
        p_yes=p_yes,
        explanation=f"{yes} yes / {no} no of {len(votes)} samples. {winner.explanation}".strip(),
        judge=votes[0].judge,
    )


def one_line(exc: BaseException) -> str:
    """An exception as one short line, for verdict explanations and run records."""
    text = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return text[:200]
