"""Judged sets built from answer tables: real scorecards (``core.scoring.score``) of a hand-made checklist."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import ValidationError

from bineval_dspy.analysis.judged import JudgedOutput, JudgedSet
from bineval_dspy.core.schema import Checklist, Question, Scorecard, Verdict
from bineval_dspy.core.scoring import score

LM = "custom/scripted"


def make_checklist(dimensions: dict[str, int], code: Sequence[str] = (), weights: dict[str, float] | None = None) -> Checklist:
    """Questions ``<dim>-1`` .. ``<dim>-n`` per dimension; those named in ``code`` carry a verifier."""
    questions = [
        Question(
            id=f"{dim}-{k}",
            text=f"Question {k} about {dim}?",
            dimension=dim,
            verifier="text:word_count" if f"{dim}-{k}" in code else None,
            weight=(weights or {}).get(f"{dim}-{k}", 1.0),
        )
        for dim, n in dimensions.items()
        for k in range(1, n + 1)
    ]
    return Checklist(task="Summarize.", dimensions=list(dimensions), questions=questions)


def make_card(checklist: Checklist, answers: dict[str, int | None], p_yes: dict[str, float] | None = None) -> Scorecard:
    """A scorecard with the given answer per question id: 1 yes, 0 no, None unanswered (P(yes) optional)."""
    verdicts = []
    for q in checklist.questions:
        value = answers[q.id]
        answer = "unanswered" if value is None else ("yes" if value else "no")
        judge = f"code:{q.verifier}" if q.verifier else LM
        verdicts.append(Verdict(question_id=q.id, answer=answer, p_yes=(p_yes or {}).get(q.id), judge=judge))
    return score(checklist, verdicts, partial=True, use_probability=p_yes is not None)


def make_set(
    checklist: Checklist,
    columns: dict[str, Sequence[int | None]],
    groups: Sequence[str] | None = None,
    p_yes: dict[str, Sequence[float]] | None = None,
) -> JudgedSet:
    """One output per row of the columns (question id -> answers); ``groups`` names each output's document."""
    size = len(next(iter(columns.values())))
    outputs = []
    for i in range(size):
        answers = {qid: column[i] for qid, column in columns.items()}
        probabilities = {qid: column[i] for qid, column in p_yes.items()} if p_yes else None
        group = groups[i] if groups is not None else f"doc-{i}"
        outputs.append(JudgedOutput(id=f"out-{i}", group=group, card=make_card(checklist, answers, probabilities)))
    return JudgedSet(source="test", checklist=checklist, outputs=outputs)


def needs_negative_weights() -> None:
    """Skip where the schema still requires positive weights (criteria to penalize are another change)."""
    try:
        Question(text="Does it insult the reader?", dimension="d", weight=-1.0)
    except ValidationError:
        pytest.skip("this schema has no negative weights")
