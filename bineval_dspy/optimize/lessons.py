"""Lessons for iterative prompt optimization (BinEval part 3): what failed, what was learned, and the bank.

A ``Failure`` is one failed check (self-update) or one disagreement with a reference evaluator (cross-model);
``optimize.notes`` turns it into a ``Lesson``, one generalized instruction sentence. A ``LessonBank`` merges
lessons that say the same thing (sentence-embedding cosine), so support accumulates instead of the prompt growing
near-duplicate rules; ``optimize.edits`` applies a lesson to the prompt.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from bineval_dspy.core.embeddings import Embedder, NearDuplicateIndex, text_key
from bineval_dspy.core.schema import stable_id

DEFAULT_THRESHOLD = 0.7  # MiniLM: paraphrased rules ~0.77, related-but-different rules ~0.6, unrelated ~0.1


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
    # of the rows evaluated with it, how many carry this rule in their checklist (None: not counted): a rule only a
    # few rows ask for is their own constraint, not an instruction for every row
    rule_rows: int | None = None
    rows: int | None = None

    @property
    def rule_share(self) -> float | None:
        """The share of the evaluated rows whose checklist states this failure's rule (None: not counted)."""
        if self.rule is None or self.rule_rows is None or not self.rows:
            return None
        return self.rule_rows / self.rows

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


def lesson_id(text: str) -> str:
    """A content id, equal for texts that differ only in case, spacing or a final period."""
    return "l-" + stable_id(text_key(text))


class LessonBank:
    """Deduplicates lessons by sentence-embedding cosine similarity; merges near-duplicates, counting support.

    A new lesson merges into the most similar bank lesson (the earliest on ties) when the cosine reaches
    ``threshold``; exact duplicates (case, spacing, final period) merge without embeddings. Retired lessons stay
    in the bank and still absorb duplicates, so a rule whose edit was rolled back is not proposed again.
    ``embed`` defaults to ``core.embeddings.default_embedder()``, made on first need.
    """

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, embed: Embedder | None = None) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self.threshold = threshold
        self.embed = embed
        self.lessons: list[Lesson] = []
        self._index = NearDuplicateIndex(threshold, embed)

    def add(self, lesson: Lesson) -> Lesson:
        """The bank lesson ``lesson`` merged into (support and sources added), or ``lesson`` itself, now in the bank."""
        for known in self.lessons[len(self._index.texts) :]:  # lessons restored or appended directly
            self._index.keep(known.text)
        found = self._index.duplicate_of(lesson.text)
        if found is None:
            self._index.keep(lesson.text)
            self.lessons.append(lesson)
            return lesson
        match = self.lessons[found]
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

    def to_json(self) -> list[dict[str, object]]:
        """The lessons in insertion order, for the optimizer's sidecar state."""
        return [lesson.model_dump() for lesson in self.lessons]

    @classmethod
    def from_json(
        cls, data: list[dict[str, object]], threshold: float = DEFAULT_THRESHOLD, embed: Embedder | None = None
    ) -> LessonBank:
        """A bank restored as saved (no re-merging); embeddings are recomputed when first needed."""
        bank = cls(threshold=threshold, embed=embed)
        bank.lessons = [Lesson.model_validate(item) for item in data]
        return bank

    def _lookup(self, lesson_ids: Iterable[str]) -> list[Lesson]:
        by_id = {x.id: x for x in self.lessons}
        ids = list(lesson_ids)
        unknown = [i for i in ids if i not in by_id]
        if unknown:
            raise KeyError(f"no lesson with id {', '.join(unknown)} in the bank")
        return [by_id[i] for i in ids]
