"""Coverage and Uniqueness of a generated checklist against a gold one, as Qworld scores generated criteria.

Coverage: the share of gold questions that at least one generated question matches (how much of what experts
ask the generator found). Uniqueness: the share of generated questions that match no gold question (how much
it adds beyond them). Both lie in [0, 1]. Questions match by what they check, whatever their dimension (two
writers may file one check under different names): by sentence-embedding cosine at or above a threshold
(``embedding_matcher``; the default embedder is ``core.embeddings``'s offline MiniLM), or by asking an LM
whether the two check the same thing (``LLMMatcher``). A pair the LM gave no usable answer for is counted as no
match and reported (``unanswered``): coverage is then a lower bound, uniqueness an upper one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import dspy
import numpy as np
from pydantic import BaseModel, Field, computed_field

from bineval_dspy.core.embeddings import Embedder, default_embedder, unit_rows
from bineval_dspy.core.schema import Checklist
from bineval_dspy.lm.budget import metered_map
from bineval_dspy.lm.usage import Cost, measured, total
from bineval_dspy.stats.bootstrap import Bootstrap, Interval

DEFAULT_THRESHOLD = 0.7  # MiniLM cosine: paraphrased checks ~0.77, related-but-different ones ~0.6 (as LessonBank)
MatchMode = Literal["embedding", "llm"]


@dataclass(frozen=True)
class Matches:
    """Which generated question (rows) matches which gold question (columns)."""

    matched: np.ndarray  # bool
    unanswered: np.ndarray  # bool: the LM gave no usable answer (never a match)
    similarity: np.ndarray | None = None  # the cosine, when matched by embeddings


Matcher = Callable[[Sequence[str], Sequence[str]], Matches]


def embedding_matcher(embed: Embedder | None = None, threshold: float = DEFAULT_THRESHOLD) -> Matcher:
    """Match two questions when the cosine of their embeddings reaches ``threshold`` (default: MiniLM, offline)."""
    if not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [-1, 1], got {threshold}")

    def match(generated: Sequence[str], gold: Sequence[str]) -> Matches:
        nonlocal embed
        if embed is None:
            embed = default_embedder()  # loads the model only when asked
        unit = unit_rows(embed([*generated, *gold]))
        similarity = unit[: len(generated)] @ unit[len(generated) :].T
        return Matches(matched=similarity >= threshold, unanswered=np.zeros(similarity.shape, dtype=bool), similarity=similarity)

    return match


class SameCheck(dspy.Signature):
    """Two yes/no questions from checklists that evaluate responses. Do they check the same thing? Answer true
    when any response would get the same answer to both for the same reason; false when they check different
    requirements, even about the same topic."""

    question_a: str = dspy.InputField()
    question_b: str = dspy.InputField()
    same: bool = dspy.OutputField(desc="true if both questions check the same requirement")


class LLMMatcher(dspy.Module):
    """Asks the configured LM, for every (generated, gold) pair, whether the two questions check the same thing.

    One call per pair (``threads`` at once, for a remote LM); an LM error or unparseable answer leaves the pair
    unanswered, never matched.
    """

    def __init__(self, threads: int = 1) -> None:
        super().__init__()
        self.threads = threads
        self.ask = dspy.Predict(SameCheck)
        self.adapter = dspy.JSONAdapter()

    def same(self, a: str, b: str) -> bool | None:
        """The LM's answer for one pair; None when it gave no usable one."""
        try:
            with dspy.context(adapter=self.adapter):
                answer = self.ask(question_a=a, question_b=b).same
        except Exception:  # any LM or parse failure: no answer, so no match
            return None
        return answer if isinstance(answer, bool) else None

    def forward(self, generated: Sequence[str], gold: Sequence[str]) -> Matches:
        pairs = [(a, b) for a in generated for b in gold]

        def one(pair: tuple[str, str]) -> bool | None:
            return self.same(*pair)

        answers = [answer for answer, _ in metered_map(one, pairs, "pairs", threads=self.threads, show=False)]
        shape = (len(generated), len(gold))
        matched = np.array([a is True for a in answers], dtype=bool).reshape(shape)
        return Matches(matched=matched, unanswered=np.array([a is None for a in answers], dtype=bool).reshape(shape))


class QuestionMatch(BaseModel):
    """A generated question and a gold question that check the same thing."""

    generated: str  # question ids
    gold: str
    similarity: float | None = None


class CoverageResult(BaseModel):
    """How one generated checklist covers the gold one, and what it adds."""

    name: str
    questions: int
    gold_questions: int
    coverage: float  # share of gold questions matched by some generated question
    uniqueness: float  # share of generated questions matching no gold question
    coverage_interval: Interval | None = None  # 95% bootstrap over gold questions (the shared bootstrap)
    uniqueness_interval: Interval | None = None  # ... over generated questions
    matches: list[QuestionMatch]
    missed: list[str]  # gold question ids no generated question matches
    unique: list[str]  # generated question ids that match no gold question
    unanswered: int  # pairs without a usable LM answer, counted as no match
    usage: Cost = Field(default_factory=Cost, description="the LM calls of matching (none by embedding)")


class CoverageReport(BaseModel):
    """What ``bineval coverage -o`` writes: every generated checklist against one gold checklist."""

    gold: str
    mode: MatchMode
    threshold: float | None
    checklists: list[CoverageResult]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def usage(self) -> Cost:
        return total(c.usage for c in self.checklists)


def coverage(generated: Checklist, gold: Checklist, matcher: Matcher, name: str = "") -> CoverageResult:
    """Coverage and Uniqueness of ``generated`` against ``gold``, with every match behind them."""
    found, cost = measured(lambda: matcher([q.text for q in generated.questions], [q.text for q in gold.questions]))
    rows, cols = found.matched.nonzero()
    matches = [
        QuestionMatch(
            generated=generated.questions[i].id,
            gold=gold.questions[j].id,
            similarity=None if found.similarity is None else float(found.similarity[i, j]),
        )
        for i, j in zip(rows.tolist(), cols.tolist())
    ]
    covered: list[bool] = np.asarray(found.matched.any(axis=0), dtype=bool).tolist()
    alone: list[bool] = np.asarray(~found.matched.any(axis=1), dtype=bool).tolist()
    return CoverageResult(
        name=name,
        questions=len(generated.questions),
        gold_questions=len(gold.questions),
        coverage=sum(covered) / len(covered),
        uniqueness=sum(alone) / len(alone),
        coverage_interval=Bootstrap([q.id for q in gold.questions]).mean([float(x) for x in covered]),
        uniqueness_interval=Bootstrap([q.id for q in generated.questions]).mean([float(x) for x in alone]),
        matches=matches,
        missed=[q.id for q, hit in zip(gold.questions, covered) if not hit],
        unique=[q.id for q, lone in zip(generated.questions, alone) if lone],
        unanswered=int(found.unanswered.sum()),
        usage=cost,
    )
