"""Code routing: questions that name a code verifier are answered by the verifier, never by an LM."""

from __future__ import annotations

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import Checklist, Question, Verdict
from bineval_dspy.judges.base import CodeRouter
from bineval_dspy.verifiers import Mode, VerifierError, build_check, follows, known_instruction_ids


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


def check_verifiers(checklist: Checklist, source: str) -> None:
    """Raise InputError naming the first question whose verifier id is unknown or whose kwargs it rejects."""
    known = set(known_instruction_ids())
    for index, question in enumerate(checklist.questions):
        if question.verifier is None:
            continue
        where = f"{source}: field 'questions.{index}.verifier'"
        if question.verifier not in known:
            raise InputError(f"{where}: unknown verifier id {question.verifier!r}")
        try:
            build_check(question.verifier, question.verifier_kwargs, prompt="")
        except VerifierError as exc:
            raise InputError(f"{where}: {exc}") from None
