"""The methods a meta-evaluation compares, each scoring one output per dimension on the run's one LM.

- ``bineval``: a checklist per dimension judged by ``BinaryJudge`` (the checklist from a file, generated once by
  ``BinEvalWriter``, or, for InFoBench, each instruction's own decomposed questions).
- ``holistic``: a 1-5 rating per dimension, G-Eval style, probability-weighted when the LM gives logprobs.
- ``unieval``: one yes/no question per dimension, UniEval style, scored by P(yes).
- ``rouge`` (``rouge_l``: its ROUGE-L form): ROUGE-1, ROUGE-2, ROUGE-L or summary-level ROUGE-L F1 against the
  references (Google's ``rouge-score`` package), the same for every dimension.

A method that gets no usable answer for a dimension of an output leaves that score None (counted, never guessed).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from bineval_dspy.core.schema import Answer, Checklist, Question, Scorecard
from bineval_dspy.judges.binary import BinaryJudge, Calibration, Explanations
from bineval_dspy.meta.datasets import MetaRow
from bineval_dspy.meta.holistic import HolisticJudge, Rating
from bineval_dspy.meta.prompts import DEFINITIONS, QUESTIONS

Wording = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
MethodName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")]  # also a file name


class MethodProblem(ValueError):
    """A method that cannot run on this dataset or these dimensions; ``field`` is the option at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class _Method(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: MethodName
    lm: str | None = None  # this method's own LM spec (an ablation over judge LMs); None: the run's LM
    uses_lm: ClassVar[bool] = True

    def check(self, dimensions: Sequence[str], genre: str, rows: Sequence[MetaRow]) -> None:
        """Raise MethodProblem when the method cannot score these rows on these dimensions (before any LM call)."""

    def fingerprint_options(self) -> dict[str, Any]:
        """The options that decide the scores, as the run's fingerprint records them."""
        return self.model_dump(mode="json")


class BinEvalMethod(_Method):
    """BinEval. ``explanations`` defaults to ``none`` here (answers only, the fastest decoding): correlations need
    scores, not reasons; the scorecards in the run directory still hold every verdict."""

    kind: Literal["bineval"]
    checklist: Literal["generate", "dataset"] | Path = "generate"
    max_questions: int = Field(default=24, ge=1)  # for a generated checklist
    probability: bool = False
    chain_of_thought: bool = False
    samples: int = Field(default=1, ge=1)
    explanations: Explanations = "none"
    calibration: Calibration = "none"

    def check(self, dimensions: Sequence[str], genre: str, rows: Sequence[MetaRow]) -> None:
        if self.calibration != "none" and self.samples > 1:
            raise MethodProblem("calibration", "calibration needs samples = 1")
        has_questions = any(row.questions for row in rows)
        if self.checklist == "dataset" and not has_questions:
            raise MethodProblem("checklist", "\"dataset\" needs a dataset with questions per output (InFoBench)")


class HolisticMethod(_Method):
    """G-Eval-style 1-5 rating; ``definitions`` adds or replaces the wording of a dimension's definition."""

    kind: Literal["holistic"]
    probability: bool = True
    definitions: dict[str, Wording] = Field(default_factory=dict)

    def check(self, dimensions: Sequence[str], genre: str, rows: Sequence[MetaRow]) -> None:
        _wording(self.definitions, DEFINITIONS.get(genre, {}), dimensions, "definitions")


class UniEvalMethod(_Method):
    """UniEval-style single yes/no question per dimension, scored by P(yes) (the hard answer, 1 or 0, when the LM
    gives no logprobs); ``questions`` adds or replaces a dimension's question."""

    kind: Literal["unieval"]
    questions: dict[str, Wording] = Field(default_factory=dict)

    def check(self, dimensions: Sequence[str], genre: str, rows: Sequence[MetaRow]) -> None:
        _wording(self.questions, QUESTIONS.get(genre, {}), dimensions, "questions")


RougeVariant = Literal["rouge1", "rouge2", "rougeL", "rougeLsum"]
_ADDED_ROUGE_OPTIONS = {"rouge": "rougeL", "aggregate": "max"}  # options newer than kind = "rouge_l", at their defaults
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class RougeMethod(_Method):
    """ROUGE F1 against the references. ``rouge``: unigram, bigram or LCS overlap, the LCS over the whole text
    (``rougeL``) or ROUGE-1.5.5's summary-level LCS, the union over sentences (``rougeLsum``, what published
    "ROUGE-L" rows report). ``aggregate``: with several references, the best (``max``) or the mean F1 (``mean``,
    ROUGE-1.5.5's default, which SummEval's published rows use). ``kind = "rouge_l"`` is the ROUGE-L form."""

    kind: Literal["rouge", "rouge_l"]
    rouge: RougeVariant = "rougeL"
    references: Literal["all", "first"] = "all"
    aggregate: Literal["max", "mean"] = "max"
    stemmer: bool = True
    uses_lm: ClassVar[bool] = False

    def check(self, dimensions: Sequence[str], genre: str, rows: Sequence[MetaRow]) -> None:
        if self.kind == "rouge_l" and self.rouge != "rougeL":
            raise MethodProblem("rouge", f"kind \"rouge_l\" is ROUGE-L; for {self.rouge} use kind = \"rouge\"")
        if not any(row.references for row in rows):
            raise MethodProblem("kind", "ROUGE needs references, and this dataset has none")

    def fingerprint_options(self) -> dict[str, Any]:
        """Options added after ``rouge_l`` are left out at their defaults, so earlier runs still resume."""
        options = self.model_dump(mode="json")
        return {k: v for k, v in options.items() if _ADDED_ROUGE_OPTIONS.get(k, object()) != v}


def sentence_lines(text: str) -> str:
    """One sentence a line (a split after ``.``, ``!`` or ``?`` and a space): ``rougeLsum`` reads sentences from lines."""
    return "\n".join(part for part in _SENTENCE_END.split(text.strip()) if part)


MethodConfig = Annotated[BinEvalMethod | HolisticMethod | UniEvalMethod | RougeMethod, Field(discriminator="kind")]


def _wording(given: dict[str, str], defaults: dict[str, str], dimensions: Sequence[str], field: str) -> dict[str, str]:
    """The text per dimension: the config's, else the default for the genre; a dimension with neither is refused."""
    texts = {dim: given.get(dim, defaults.get(dim)) for dim in dimensions}
    missing = [dim for dim, text in texts.items() if not text]
    if missing:
        raise MethodProblem(field, f"no default wording for dimension {missing[0]!r}; give one, e.g. {field}.{missing[0]} = \"...\"")
    return {dim: text for dim, text in texts.items() if text}


# -- scoring one output -------------------------------------------------------------------------------------------
class Scored(BaseModel):
    """What a method said about one output: a score per dimension (None: no usable answer) and what lies behind it."""

    scores: dict[str, float | None]  # a dimension the method cannot score (no question about it) is absent
    answers: list[Answer] | None = None  # per labeled question of the row, in order (InFoBench agreement)
    scorecard: Scorecard | None = None
    ratings: dict[str, Rating] | None = None


Scorer = Callable[[MetaRow], Scored]


def row_checklist(row: MetaRow) -> Checklist:
    """A row's own labeled questions as a checklist (ids by position: an instruction may repeat a question)."""
    questions = [Question(id=f"q{k}", text=q.text, dimension=q.dimension) for k, q in enumerate(row.questions)]
    return Checklist(task=row.input, dimensions=list(dict.fromkeys(q.dimension for q in questions)), questions=questions)


def card_scores(card: Scorecard, dimensions: Sequence[str]) -> dict[str, float | None]:
    """The card's score per asked dimension; ``overall`` is the card's overall unless a dimension of that name exists."""
    scores = {dim: card.dimension_scores[dim] for dim in dimensions if dim in card.dimension_scores}
    if "overall" in dimensions and "overall" not in scores:
        scores["overall"] = card.overall
    return scores


def build_scorer(
    method: MethodConfig,
    dimensions: Sequence[str],
    genre: str,
    *,
    checklist: Checklist | None = None,
    judge_threads: int | None = None,
) -> Scorer:
    """The scoring function of a checked method; ``checklist`` is BinEval's (None: each row's own questions)."""
    if isinstance(method, BinEvalMethod):
        judge = BinaryJudge(
            probability=method.probability,
            chain_of_thought=method.chain_of_thought,
            samples=method.samples,
            explanations=method.explanations,
            calibration=method.calibration,
            threads=judge_threads,
        )

        def bineval(row: MetaRow) -> Scored:
            own = checklist is None
            card = judge(input=row.input, output=row.output, checklist=row_checklist(row) if own else checklist)
            answers = [v.answer for v in card.verdicts] if own else None
            return Scored(scores=card_scores(card, dimensions), answers=answers, scorecard=card)

        return bineval
    if isinstance(method, UniEvalMethod):
        texts = _wording(method.questions, QUESTIONS.get(genre, {}), dimensions, "questions")
        single = Checklist(task="one question per dimension", dimensions=list(texts), questions=[Question(text=t, dimension=d) for d, t in texts.items()])
        unieval_judge = BinaryJudge(probability=True, explanations="none", threads=judge_threads)

        def unieval(row: MetaRow) -> Scored:
            card = unieval_judge(input=row.input, output=row.output, checklist=single)
            return Scored(scores=card_scores(card, dimensions), scorecard=card)

        return unieval
    if isinstance(method, HolisticMethod):
        holistic_judge = HolisticJudge(_wording(method.definitions, DEFINITIONS.get(genre, {}), dimensions, "definitions"), probability=method.probability)

        def holistic(row: MetaRow) -> Scored:
            ratings = holistic_judge(input=row.input, output=row.output)
            return Scored(scores={dim: rating.value for dim, rating in ratings.items()}, ratings=ratings)

        return holistic
    return _rouge_scorer(method, dimensions)


def _rouge_scorer(method: RougeMethod, dimensions: Sequence[str]) -> Scorer:
    """The ROUGE F1 of each output against its references, best or mean over them."""
    from rouge_score import rouge_scorer  # loads nltk's stemmer only (no NLTK data), and only when asked for

    variant = method.rouge
    scorer = rouge_scorer.RougeScorer([variant], use_stemmer=method.stemmer)
    lines = sentence_lines if variant == "rougeLsum" else str.strip

    def rouge(row: MetaRow) -> Scored:
        references = row.references if method.references == "all" else row.references[:1]
        output = lines(row.output)
        f1s = [scorer.score(lines(ref), output)[variant].fmeasure for ref in references]
        f1 = (max(f1s) if method.aggregate == "max" else sum(f1s) / len(f1s)) if f1s else None
        return Scored(scores=dict.fromkeys(dimensions, f1))

    return rouge
