"""Code routing: questions that name a code verifier are answered by the verifier, never by an LM."""

from __future__ import annotations

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import Checklist, Question, Verdict
from bineval_dspy.judges.base import CodeRouter
from bineval_dspy.verifiers import (
    Mode,
    VerifierError,
    build_check,
    describe,
    diagnose,
    known_instruction_ids,
    unknown_id,
)


def make_code_router(mode: Mode = "strict") -> CodeRouter:
    """A ``BinaryJudge`` hook that answers verifier questions by code in ``mode``; others go to the LM (None).

    A code verdict's explanation is the verifier's rule, then what it found: "<rule> Met: <detail>".
    """

    def route(question: Question, input: str, output: str) -> Verdict | None:
        if question.verifier is None:
            return None
        judge = f"code:{question.verifier}"
        try:
            check = build_check(question.verifier, question.verifier_kwargs, prompt=input)
            rule = describe(question.verifier, question.verifier_kwargs, prompt=input)
            finding = diagnose(check, output, mode)
        except Exception as exc:  # a verifier that cannot run leaves the question unanswered, never yes
            return Verdict(
                question_id=question.id, answer="unanswered", explanation=f"verifier failed: {exc}", judge=judge
            )
        # The rule and what was found, so a failure reads as a lesson, not just a verdict.
        outcome = "Met" if finding.passed else "Not met"
        return Verdict(
            question_id=question.id,
            answer="yes" if finding.passed else "no",
            explanation=f"{rule} {outcome}: {finding.detail}",
            judge=judge,
        )

    return route


def _own_check_hint(verifier: str, known: set[str]) -> str:
    """An id in a group no known id has (``mine:`` of ``mine:no_emoji``) is most likely the user's own check, not
    loaded: say how it loads."""
    group = verifier.split(":", 1)[0] + ":"
    if any(name.startswith(group) for name in known):
        return ""
    return "; a check of your own loads from its file with `verifier_files` (a FILE.py of @bineval_dspy.verifier functions)"


def check_verifiers(checklist: Checklist, source: str) -> None:
    """Raise InputError naming the first question whose verifier id is unknown or whose kwargs it rejects."""
    known = set(known_instruction_ids())
    for index, question in enumerate(checklist.questions):
        if question.verifier is None:
            continue
        where = f"{source}: field 'questions.{index}.verifier'"
        if question.verifier not in known:
            raise InputError(f"{where}: {unknown_id(question.verifier, 'verifier id')}{_own_check_hint(question.verifier, known)}")
        try:
            build_check(question.verifier, question.verifier_kwargs, prompt="")
        except VerifierError as exc:
            raise InputError(f"{where}: {exc}") from None
