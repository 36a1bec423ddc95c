"""Hybrid checklists: code verifiers for the verifiable constraints, TICK questions for the rest.

Each constraint of an IFBench-style suite row becomes a question that code answers exactly;
an LM writes 2-8 instruction-specific yes/no questions (TICK) for what code cannot check:
content, relevance, accuracy, tone. ``code_router`` plugs into ``BinaryJudge`` so code-checked
questions never reach the LM, and each verdict names the judge that gave it.
"""

from __future__ import annotations

import dspy
from pydantic import BaseModel, Field, create_model

from bineval_dspy.checklist import QuestionText
from bineval_dspy.errors import InputError
from bineval_dspy.judge import BinaryJudge, CodeRouter
from bineval_dspy.schema import Checklist, Question, Verdict
from bineval_dspy.suite import SuiteRow
from bineval_dspy.verifiers import Mode, VerifierError, build_check, follows

CODE_DIMENSION = "instruction-following"
LLM_DIMENSION = "content"
DEFAULT_LLM_QUESTIONS = (2, 8)
MAX_KWARG_CHARS = 60


def _question_list(low: int, high: int) -> type[BaseModel]:
    """The output model; its bounds live on a model field because DSPy drops Annotated constraints on
    top-level output fields, and a field's bounds reach the JSON schema (and a local model's grammar)."""
    return create_model(
        "TickQuestionList",
        items=(list[QuestionText], Field(min_length=low, max_length=high)),  # type: ignore[valid-type]
    )


TickQuestionList = _question_list(*DEFAULT_LLM_QUESTIONS)


class TickQuestions(dspy.Signature):
    """Write an evaluation checklist for responses to the instruction: yes/no questions, each targeting one
    distinct requirement of the instruction, explicit or implicit, that a good response must meet (its content,
    relevance, accuracy, completeness, tone). "Yes" must always mean the requirement is met. Do not ask about
    the constraints listed as code-checked: code verifies those exactly."""

    instruction: str = dspy.InputField(desc="the instruction a response must follow")
    code_checked: str = dspy.InputField(desc="constraints already verified by code, one per line")
    questions: TickQuestionList = dspy.OutputField()  # type: ignore[valid-type]


class TickQuestionWriter(dspy.Module):
    """TICK checklist writer: ``forward(instruction, code_checked) -> list[str]`` of yes/no questions.

    Repeated questions are dropped. An answer that cannot be parsed (or breaks the count bounds) gives no
    questions, counted in ``self.fallbacks``: the code checks still judge the response, and a made-up
    question would be worse than none.
    """

    def __init__(self, n_questions: tuple[int, int] = DEFAULT_LLM_QUESTIONS, max_tokens: int = 600) -> None:
        super().__init__()
        low, high = n_questions
        if not 1 <= low <= high:
            raise ValueError(f"n_questions must satisfy 1 <= low <= high, got {n_questions}")
        signature = TickQuestions
        if (low, high) != DEFAULT_LLM_QUESTIONS:
            bounded = _question_list(low, high)
            signature = signature.delete("questions").append("questions", dspy.OutputField(), type_=bounded)
        self.write = dspy.Predict(signature)
        self.max_tokens = max_tokens
        self.fallbacks = 0

    def forward(self, instruction: str, code_checked: list[str]) -> list[str]:
        listed = "\n".join(code_checked) or "(none)"
        try:
            with dspy.context(adapter=dspy.JSONAdapter()):
                pred = self.write(instruction=instruction, code_checked=listed, config={"max_tokens": self.max_tokens})
        except dspy.utils.exceptions.AdapterParseError:
            self.fallbacks += 1
            return []
        return list(dict.fromkeys(q.strip() for q in pred.questions.items))


def constraint_question(instruction_id: str, kwargs: dict | None) -> Question:
    """The code-checked question for one constraint; its text names the constraint and its set arguments."""
    args = {k: v for k, v in (kwargs or {}).items() if v is not None}
    shown = ", ".join(f"{k}={_short(v)}" for k, v in args.items())
    text = f"Does the response satisfy the constraint '{instruction_id}'" + (f" ({shown})?" if shown else "?")
    return Question(text=text, dimension=CODE_DIMENSION, verifier=instruction_id, verifier_kwargs=args)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= MAX_KWARG_CHARS else text[: MAX_KWARG_CHARS - 3] + "..."


def hybrid_checklist(
    row: SuiteRow,
    *,
    generator: TickQuestionWriter | None = None,
    n_llm_questions: tuple[int, int] = DEFAULT_LLM_QUESTIONS,
) -> Checklist:
    """Code questions for the row's constraints, then LM-written TICK questions (``n_llm_questions=(0, 0)``:
    none, no LM call). ``generator`` defaults to a ``TickQuestionWriter`` with those bounds."""
    code_questions: list[Question] = []
    for instruction_id, kwargs in zip(row.instruction_id_list, row.kwargs, strict=True):
        try:
            build_check(instruction_id, kwargs, row.prompt)
        except VerifierError as exc:
            raise InputError(f"suite row {row.key!r}: {exc}") from None
        question = constraint_question(instruction_id, kwargs)
        if all(q.id != question.id for q in code_questions):
            code_questions.append(question)
    llm_texts: list[str] = []
    if n_llm_questions[1] > 0:
        writer = TickQuestionWriter(n_llm_questions) if generator is None else generator
        llm_texts = writer(instruction=row.prompt, code_checked=[q.text for q in code_questions])
    llm_questions = [Question(text=text, dimension=LLM_DIMENSION) for text in llm_texts]
    dimensions = [CODE_DIMENSION] + ([LLM_DIMENSION] if llm_questions else [])
    return Checklist(task=row.prompt, dimensions=dimensions, questions=code_questions + llm_questions)


def make_code_router(mode: Mode = "strict") -> CodeRouter:
    """A ``BinaryJudge`` hook that answers verifier questions by code in ``mode``; others go to the LM (None)."""

    def route(question: Question, input: str, output: str) -> Verdict | None:
        if question.verifier is None:
            return None
        judge = f"code:{question.verifier}"
        try:
            passed = follows(build_check(question.verifier, question.verifier_kwargs, prompt=input), output, mode)
        except Exception as exc:  # a verifier that cannot run leaves the question unanswered, never yes
            return Verdict(
                question_id=question.id, answer="unanswered", explanation=f"verifier failed: {exc}", judge=judge
            )
        outcome = "passed" if passed else "failed"
        return Verdict(
            question_id=question.id,
            answer="yes" if passed else "no",
            explanation=f"constraint '{question.verifier}' {outcome} ({mode} check)",
            judge=judge,
        )

    return route


code_router: CodeRouter = make_code_router("strict")


def hybrid_judge(mode: Mode = "strict", **judge_options) -> BinaryJudge:
    """A ``BinaryJudge`` that answers verifier questions by code (``mode``) and the rest with the LM."""
    return BinaryJudge(code_router=make_code_router(mode), **judge_options)
