"""Prompt editing (BinEval part 3): a lesson applied as a surgical edit of the instructions.

``PromptUpdater`` asks an LM for the passage a lesson concerns and its rewrite, ``instructions.replace(s_k, s'_k)``
on that one passage, appending the lesson only when no passage fits. A verifier's rule is already a clean
instruction sentence: ``rule_edit`` adds it as a line of its own with no LM (a small LM's rewrite of it was babble
the guard rolled back), and ``already_says`` tells when the instructions state it already.
"""

from __future__ import annotations

import re

import dspy
from pydantic import BaseModel, Field

from bineval_dspy.core.embeddings import Embedder, NearDuplicateIndex, text_key
from bineval_dspy.optimize.lessons import Lesson


class EditDraft(BaseModel):
    """The passage of the instructions to replace (copied exactly, or "" to add a new sentence) and its new text."""

    target: str = Field(max_length=600, description='an exact passage copied from the instructions, or ""')
    rewrite: str = Field(max_length=800, description="the passage rewritten to carry the lesson, or a new sentence")


class ApplyLesson(dspy.Signature):
    """Apply one lesson to a prompt with a surgical edit, not a full rewrite. Find the shortest passage of the
    current instructions that the lesson concerns and copy it exactly, character for character, into `target`.
    In `rewrite`, write that passage revised so it carries the lesson while keeping everything else it said. If no
    passage concerns the lesson, set `target` to "" and write the lesson as one new sentence in `rewrite`."""

    current_instructions: str = dspy.InputField(desc="the current instructions")
    lesson: str = dspy.InputField(desc="the lesson to build into the instructions")
    edit: EditDraft = dspy.OutputField()


class Edit(BaseModel):
    """One applied edit: what was replaced (``before``, "" when appended) and by what."""

    lesson_id: str
    before: str
    after: str
    appended: bool


class PromptUpdater(dspy.Module):
    """Surgical edit: picks the substring of the instructions a lesson concerns and rewrites it
    (instructions.replace(s_k, s'_k)); appends only when no substring fits.

    The LM's target must occur in the instructions (verbatim, else up to whitespace); only its first occurrence
    is replaced. A missing target, an unchanged rewrite or an unusable reply appends instead, so the result always
    differs from the input.
    """

    def __init__(self, adapter: dspy.Adapter | None = None) -> None:
        super().__init__()
        self.apply = dspy.Predict(ApplyLesson)
        self.adapter = adapter or dspy.JSONAdapter()

    def forward(self, instructions: str, lesson: Lesson) -> tuple[str, Edit]:
        if not instructions.strip():
            return lesson.text, Edit(lesson_id=lesson.id, before="", after=lesson.text, appended=True)
        try:
            with dspy.context(adapter=self.adapter):
                draft: EditDraft = self.apply(current_instructions=instructions, lesson=lesson.text).edit
        except Exception:  # an unusable reply still applies the lesson, as a new sentence
            return _append(instructions, lesson.text, lesson)
        rewrite = draft.rewrite.strip()
        span = _find(instructions, draft.target) if draft.target.strip() else None
        if span is not None and rewrite and rewrite.split() != instructions[span[0] : span[1]].split():
            start, end = span
            edit = Edit(lesson_id=lesson.id, before=instructions[start:end], after=rewrite, appended=False)
            return instructions[:start] + rewrite + instructions[end:], edit
        usable = span is None and _has_letters(rewrite) and text_key(rewrite) not in text_key(instructions)
        return _append(instructions, rewrite if usable else lesson.text, lesson)


def rule_edit(instructions: str, lesson: Lesson) -> tuple[str, Edit]:
    """The lesson's sentence as a new line of the instructions, capitalized and ended, with no LM call."""
    sentence = " ".join(lesson.text.split())
    text, edit = _append(instructions, sentence[:1].upper() + sentence[1:], lesson)
    return (text if instructions.strip() else edit.after), edit


def already_says(instructions: str, sentence: str, threshold: float, embed: Embedder | None = None) -> bool:
    """Whether the instructions state ``sentence``: contain it (up to case and spacing), or hold a sentence or line
    that is its near-duplicate (embedding cosine at least ``threshold``, as the lesson bank merges)."""
    if text_key(sentence) in text_key(instructions):
        return True
    index = NearDuplicateIndex(threshold, embed)
    for part in re.split(r"(?<=[.!?])\s+|\n+", instructions):
        if _has_letters(part):
            index.keep(part.strip())
    return index.duplicate_of(sentence) is not None


def _find(instructions: str, target: str) -> tuple[int, int] | None:
    """The span of the first occurrence of ``target``: verbatim, else with any run of whitespace matching any other.

    Whitespace at the ends of the span is left out, so the line breaks around a replaced passage survive.
    """
    start = instructions.find(target)
    if start >= 0:
        end = start + len(target)
    else:
        match = re.search(r"\s+".join(re.escape(word) for word in target.split()), instructions)
        if match is None:
            return None
        start, end = match.span()
    passage = instructions[start:end]
    return start + len(passage) - len(passage.lstrip()), end - len(passage) + len(passage.rstrip())


def _has_letters(text: str) -> bool:
    return re.search(r"[^\W\d_]", text) is not None


def _append(instructions: str, sentence: str, lesson: Lesson) -> tuple[str, Edit]:
    sentence = " ".join(sentence.split())
    if sentence.rstrip("'\"”’)]")[-1:] not in (".", "!", "?"):  # "... such as '* A point.'" is ended already
        sentence += "."
    edit = Edit(lesson_id=lesson.id, before="", after=sentence, appended=True)
    return instructions.rstrip() + "\n" + sentence, edit
