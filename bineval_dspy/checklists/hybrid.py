"""Hybrid checklists: code verifiers for the verifiable constraints, TICK questions for the rest.

Each constraint of an IFBench-style suite row becomes a question that code answers exactly;
an LM writes 2-8 instruction-specific yes/no questions (TICK) for what code cannot check:
content, relevance, accuracy, tone. ``BinaryJudge`` answers the code-checked questions by code,
never by the LM, and each verdict names the judge that gave it.
"""

from __future__ import annotations

from typing import Any

from bineval_dspy.checklists.tick import DEFAULT_LLM_QUESTIONS, TickQuestionWriter
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.suites.rows import SuiteRow
from bineval_dspy.verifiers import VerifierError

CODE_DIMENSION = "instruction-following"
LLM_DIMENSION = "content"
MAX_KWARG_CHARS = 60


def constraint_question(instruction_id: str, kwargs: dict[str, Any] | None) -> Question:
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
    also: Checklist | None = None,
) -> Checklist:
    """Code questions for the row's constraints, then LM-written TICK questions (``n_llm_questions=(0, 0)``:
    none, no LM call), then ``also``'s questions (one checklist asked of every row). ``generator`` defaults to a
    ``TickQuestionWriter`` with those bounds.

    A constraint whose kwargs its verifier rejects gets no question (code could not answer it); an unknown
    instruction id, or a row left with no question at all, is an InputError.
    """
    try:
        checks = row.checks()
    except VerifierError as exc:
        raise InputError(f"suite row {row.key!r}: {exc}") from None
    code_questions: list[Question] = []
    for instruction_id, kwargs, check in zip(row.instruction_id_list, row.kwargs, checks, strict=True):
        if isinstance(check, str):
            continue
        question = constraint_question(instruction_id, kwargs)
        if all(q.id != question.id for q in code_questions):
            code_questions.append(question)
    llm_texts: list[str] = []
    if n_llm_questions[1] > 0:
        writer = TickQuestionWriter(n_llm_questions) if generator is None else generator
        llm_texts = writer(instruction=row.prompt, code_checked=[q.text for q in code_questions])
    llm_questions = [Question(text=text, dimension=LLM_DIMENSION) for text in llm_texts]
    questions = code_questions + llm_questions
    questions += [q for q in (also.questions if also is not None else []) if all(q.id != mine.id for mine in questions)]
    if not questions:
        raise InputError(f"suite row {row.key!r}: no constraint code can check and no LM questions asked")
    dimensions = [CODE_DIMENSION] + ([LLM_DIMENSION] if llm_questions else [])
    return Checklist.of(row.prompt, dimensions, questions)
