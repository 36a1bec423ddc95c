"""Note-taking (BinEval part 3): one failure, seen in context, becomes one generalized lesson, screened before use.

A ``NoteTaker`` writes the lesson with an LM; ``lesson_problem`` refuses the two kinds of draft a weak note-taker
often writes (one naming no constraint, one restating the response); ``rule_lesson`` is the lesson a code-checked
failure teaches without an LM. A refused draft becomes a ``Discarded`` entry of the audit.
"""

from __future__ import annotations

import re

import dspy
from pydantic import BaseModel, Field

from bineval_dspy.core.errors import BinevalError, one_line
from bineval_dspy.optimize.lessons import Failure, Lesson

LESSON_MAX_CHARS = 200
CONTEXT_MAX_CHARS = 1500


def clip(text: str, limit: int = CONTEXT_MAX_CHARS) -> str:
    """Long task inputs and outputs are cut so one failure cannot flood the note-taker's prompt."""
    return text if len(text) <= limit else text[:limit].rstrip() + " …[truncated]"


class LessonDraft(BaseModel):
    """The lesson: one general instruction sentence."""

    # shown to the LM as JSON schema: the bound lives on the field so it reaches it

    text: str = Field(
        min_length=1,
        max_length=LESSON_MAX_CHARS,
        description="one general, actionable instruction sentence, with no details specific to this example",
    )


class SelfUpdateLesson(dspy.Signature):
    """An output written under the current instructions failed one yes/no check of its evaluation checklist.
    Write ONE general, actionable instruction sentence that, added to the instructions, would make future outputs
    pass checks like this one. Generalize: do not mention details of this particular input or output. Do not
    restate something the instructions already say unless you make it more precise."""

    current_instructions: str = dspy.InputField(desc="the current instructions of the writer")
    input: str = dspy.InputField(desc="the task input")
    output: str = dspy.InputField(desc="the output that failed the check")
    question: str = dspy.InputField(desc="the yes/no check; 'yes' means satisfied")
    dimension: str = dspy.InputField(desc="the quality dimension the check belongs to")
    rule: str = dspy.InputField(desc="the rule the check tests, stated by its code verifier ('' when an LM judged it)")
    explanation: str = dspy.InputField(desc="the evaluator's reason for answering 'no'; from code: what it found")
    lesson: LessonDraft = dspy.OutputField()


class CrossModelLesson(dspy.Signature):
    """An evaluator following the current instructions answered a yes/no question about an output differently from
    a trusted reference evaluator. Write ONE general, actionable instruction sentence that, added to the evaluator's
    instructions, would make it answer questions like this one the way the reference does. Generalize: do not
    mention details of this particular input or output. Do not restate something the instructions already say
    unless you make it more precise."""

    current_instructions: str = dspy.InputField(desc="the current instructions of the evaluator")
    input: str = dspy.InputField(desc="the task input")
    output: str = dspy.InputField(desc="the output being evaluated")
    question: str = dspy.InputField(desc="the yes/no question; 'yes' means the requirement is satisfied")
    dimension: str = dspy.InputField(desc="the quality dimension the question belongs to")
    evaluator_answer: str = dspy.InputField(desc="the evaluator's answer (wrong)")
    reference_answer: str = dspy.InputField(desc="the reference evaluator's answer (correct)")
    explanation: str = dspy.InputField(desc="the evaluator's reason for its answer")
    lesson: LessonDraft = dspy.OutputField()


class Discarded(BaseModel):
    """A lesson the note-taker wrote and the optimizer refused, with the reason (kept in the audit)."""

    failure_id: str
    text: str
    reason: str


# Words that say nothing about which constraint a lesson addresses: a lesson must share some other word stem with
# the failure's rule or question.
_GENERIC = frozenset(
    """about after again also always answer answers because before being check checks could does doing every
    exactly follow following from future general have into instruction instructions make more must never only other
    output outputs please question questions request requests response responses rule should some sure task than
    that their them then there these they this those through under user very what when where which while will with
    would write writer writing your""".split()
)
_STEM = 5  # words compare by their first five letters: "paragraphs" names "paragraph", "capitals" names "capital"


def _stems(text: str) -> set[str]:
    return {w[:_STEM] for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4 and w not in _GENERIC}


def lesson_problem(text: str, failure: Failure) -> str | None:
    """Why a drafted lesson cannot be used for ``failure``, or None.

    Two checks a weak note-taker often fails: a self-update lesson must name the constraint (share a content word
    stem with the verifier's rule or the question), and no lesson may restate the response (half or more of its
    word 4-grams copied from the output), e.g. "The national symbol of the US is the Eagle." for a failed length
    check. A cross-model lesson is about judging, not one constraint, so it need not repeat the question's words.
    """
    words = re.findall(r"\w+", text.lower())
    grams = {tuple(words[i : i + 4]) for i in range(len(words) - 3)}
    if grams:
        said = re.findall(r"\w+", failure.output.lower())
        copied = grams & {tuple(said[i : i + 4]) for i in range(len(said) - 3)}
        if len(copied) >= len(grams) / 2:
            return "restates the response"
    if failure.expected is None and not _stems(text) & _stems(failure.constraint):
        return "names no constraint of the failed check"
    return None


def rule_lesson(failure: Failure) -> Lesson | None:
    """The lesson a code-checked failure teaches without a note-taker: its verifier's rule sentence, as it is (it
    names the constraint by construction; the guard keeps it only if held-out prompts gain)."""
    if failure.rule is None:
        return None
    return Lesson(text=failure.rule, dimension=failure.dimension, sources=[failure.id], origin="rule")


class NoteTakingError(BinevalError, RuntimeError):
    """The note-taker gave no usable lesson for a failure; callers count it and move on."""


class NoteTaker(dspy.Module):
    """Writes one generalized lesson per failure, seeing it in context (question, input, output, explanation,
    and for cross-model the expected vs given answer) and the current instructions."""

    def __init__(self, adapter: dspy.Adapter | None = None) -> None:
        super().__init__()
        self.self_update = dspy.Predict(SelfUpdateLesson)
        self.cross_model = dspy.Predict(CrossModelLesson)
        self.adapter = adapter or dspy.JSONAdapter()

    def forward(self, failure: Failure, instructions: str) -> Lesson:
        shared = dict(
            current_instructions=instructions,
            input=clip(failure.input),
            output=clip(failure.output),
            question=failure.question,
            dimension=failure.dimension,
            explanation=failure.explanation,
        )
        try:
            with dspy.context(adapter=self.adapter):
                if failure.expected is None:
                    pred = self.self_update(**shared, rule=failure.rule or "")
                else:
                    pred = self.cross_model(**shared, evaluator_answer=failure.got, reference_answer=failure.expected)
            return Lesson(text=pred.lesson.text, dimension=failure.dimension, sources=[failure.id])
        except Exception as exc:
            raise NoteTakingError(f"no lesson for failure {failure.id}: {one_line(exc)}") from exc
