"""The methods a meta-evaluation compares, each scoring one output per dimension on the run's one LM.

- ``bineval``: a checklist per dimension judged by ``BinaryJudge`` (the checklist from a file, generated once by
  ``writer`` (BinEval's two steps unless set: any method of ``checklists.writers``), written per input by it
  (``per_input``: from the input, its reference and the outputs beside it), or, for InFoBench, each instruction's
  own decomposed questions); ``scoring`` per question or batch, ``code_routing`` off lets the LM answer all.
- ``holistic``: a 1-5 rating per dimension, G-Eval style, probability-weighted when the LM gives logprobs.
- ``unieval``: one yes/no question per dimension, UniEval style, scored by P(yes).
- ``rouge`` (``rouge_l``: its ROUGE-L form): ROUGE-1, ROUGE-2, ROUGE-L or summary-level ROUGE-L F1 against the
  references (Google's ``rouge-score`` package), the same for every dimension.
- ``probe``: a learned metric: a probe on the LM's hidden state for each dimension's question (UniEval's wording),
  trained on the human scores of the other folds' inputs (``meta.probe``: weak labels, cross-fitted by input).
- ``length``: the output's length in words (runs of letters and digits), the same for every dimension: the baseline that shows how much of a
  method's correlation length alone would give.

A method that gets no usable answer for a dimension of an output leaves that score None (counted, never guessed).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import dspy
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from bineval_dspy.core.errors import BinevalError, InputError
from bineval_dspy.core.schema import (
    Answer,
    Checklist,
    Explanations,
    JudgeFields,
    JudgeSpec,
    Question,
    Scorecard,
    Scoring,
    VerdictFormat,
)
from bineval_dspy.core.settings import added, settled_json
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.meta.datasets import MetaRow
from bineval_dspy.meta.holistic import HolisticJudge, Rating
from bineval_dspy.meta.prompts import DEFINITIONS, QUESTIONS

logger = logging.getLogger(__name__)

Wording = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
MethodName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")]  # also a file name


class MethodProblem(BinevalError, ValueError):
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
        """The options that decide the scores, as the run's fingerprint records them (those added after the first
        runs left out at their defaults, so earlier runs still resume)."""
        return json.loads(settled_json(self))


def _added_judge_option(name: str) -> Any:
    """A judge option as ``JudgeFields`` declares it, marked as added to the ``bineval`` method after its first runs."""
    declared = JudgeFields.model_fields[name]
    return added("0.2", declared.default, json_schema_extra=declared.json_schema_extra)


class BinEvalMethod(_Method, JudgeFields):
    """BinEval, with every judge option as a key. ``explanations`` defaults to ``none`` here (answers only, the
    fastest decoding): correlations need scores, not reasons; the scorecards in the run directory still hold every
    verdict."""

    kind: Literal["bineval"]
    checklist: Literal["generate", "dataset", "per_input"] | Path = "generate"
    max_questions: int = Field(default=24, ge=1)  # for a generated checklist
    writer: str = added("0.2", "bineval")  # the method that writes a generated or per-input checklist
    explanations: Explanations = "none"
    code_routing: bool = added("0.2", True)  # False: the LM answers questions a code verifier would
    probe: Path | None = added("0.2", None)  # a probe judge's run folder (``bineval calibrate``'s) or its probe.json: its head answers the LM questions
    verifier_mode: Literal["strict", "loose"] = _added_judge_option("verifier_mode")
    partial: bool = _added_judge_option("partial")
    scoring: Scoring = _added_judge_option("scoring")
    verdict_format: VerdictFormat = _added_judge_option("verdict_format")

    def judge_spec(self, model: str) -> JudgeSpec:
        """The judge this method runs, on the LM named ``model``."""
        return JudgeSpec(model=model, **self.model_dump(include=set(JudgeFields.model_fields)))

    def check(self, dimensions: Sequence[str], genre: str, rows: Sequence[MetaRow]) -> None:
        from bineval_dspy.checklists.templates import TEMPLATES
        from bineval_dspy.checklists.writers import methods

        if (conflict := self.conflict()) is not None:
            raise MethodProblem(*conflict)
        if self.writer not in methods():
            raise MethodProblem("writer", f"unknown checklist method {self.writer!r} (choose from {', '.join(methods())})")
        if self.writer != "bineval" and self.checklist not in ("generate", "per_input"):
            raise MethodProblem("writer", "a writer writes a \"generate\" or \"per_input\" checklist only")
        needs = TEMPLATES[self.writer].needs() if self.writer in TEMPLATES else []
        if needs and self.checklist != "per_input":
            raise MethodProblem("writer", f"{self.writer} needs {needs[0]} per input: use checklist = \"per_input\"")
        if "reference" in needs and not any(row.references for row in rows):
            raise MethodProblem("writer", f"{self.writer} needs a reference per input, and this dataset has none")
        if "observations" in needs:
            raise MethodProblem("writer", f"{self.writer} needs observations (feedback notes), which no meta-eval dataset has")
        has_questions = any(row.questions for row in rows)
        if self.checklist == "dataset" and not has_questions:
            raise MethodProblem("checklist", "\"dataset\" needs a dataset with questions per output (InFoBench)")
        if self.probe is not None:
            from bineval_dspy.judges.probe import probe_clash

            self.trained_probe()
            if clash := probe_clash(self.chain_of_thought, self.samples, self.calibration, self.scoring, self.verdict_format):
                raise MethodProblem("probe", clash)

    def trained_probe(self) -> Any:
        """The head ``probe`` names (None without one), read as ``judge --program`` reads it (``head_of_run``: its
        digest checked against its program's), refused in one line when it cannot be read or was edited."""
        from bineval_dspy.judges.probe import head_of_run
        from bineval_dspy.judges.standing import announce

        if self.probe is None:
            return None
        try:
            head = head_of_run(self.probe)
        except InputError as exc:
            raise MethodProblem("probe", str(exc)) from None
        announce(self.probe if self.probe.is_dir() else self.probe.parent, head)  # its test figures, a warning at chance
        return head


    def fingerprint_options(self) -> dict[str, Any]:
        """The options as every method records them, a probe by its head's digest."""
        options = super().fingerprint_options()
        if self.probe is not None:
            options["probe"] = self.trained_probe().digest()  # the head itself, wherever its file lies
        return options


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
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+")  # words, not whitespace tokens: tokenized data has its punctuation spaced out


class RougeMethod(_Method):
    """ROUGE F1 against the references. ``rouge``: unigram, bigram or LCS overlap, the LCS over the whole text
    (``rougeL``) or ROUGE-1.5.5's summary-level LCS, the union over sentences (``rougeLsum``, what published
    "ROUGE-L" rows report). ``aggregate``: with several references, the best (``max``) or the mean F1 (``mean``,
    ROUGE-1.5.5's default, which SummEval's published rows use). ``kind = "rouge_l"`` is the ROUGE-L form."""

    kind: Literal["rouge", "rouge_l"]
    rouge: RougeVariant = added("0.2", "rougeL")  # options newer than kind = "rouge_l"
    references: Literal["all", "first"] = "all"
    aggregate: Literal["max", "mean"] = added("0.2", "max")
    stemmer: bool = True
    uses_lm: ClassVar[bool] = False

    def check(self, dimensions: Sequence[str], genre: str, rows: Sequence[MetaRow]) -> None:
        if self.kind == "rouge_l" and self.rouge != "rougeL":
            raise MethodProblem("rouge", f"kind \"rouge_l\" is ROUGE-L; for {self.rouge} use kind = \"rouge\"")
        if not any(row.references for row in rows):
            raise MethodProblem("kind", "ROUGE needs references, and this dataset has none")


def sentence_lines(text: str) -> str:
    """One sentence a line (a split after ``.``, ``!`` or ``?`` and a space): ``rougeLsum`` reads sentences from lines."""
    return "\n".join(part for part in _SENTENCE_END.split(text.strip()) if part)


class LengthMethod(_Method):
    """The output's length in words. Overlap with the article grows with a summary's length, and some human labels
    do too (QAGS' share of supported sentences), so a correlation means little until it beats this row."""

    kind: Literal["length"]
    uses_lm: ClassVar[bool] = False


class ProbeMethod(_Method):
    """A learned metric, cross-fitted: each dimension's question (UniEval's wording, or ``questions``) read as a
    probe's P(yes), the head trained on weak labels (the human score on the question's dimension, yes from the
    training rows' median up) of the inputs in the other ``folds`` folds, never the output's own input; each fold's
    layer, C (from ``strengths``) and threshold chosen by ``inner_folds`` grouped folds inside its training rows."""

    kind: Literal["probe"]
    questions: dict[str, Wording] = Field(default_factory=dict)
    folds: int = Field(default=5, ge=2)
    inner_folds: int = Field(default=3, ge=2)
    layers: list[int] | None = None
    strengths: list[float] = Field(default=[0.001, 0.01], min_length=1)
    seed: int = 0

    def check(self, dimensions: Sequence[str], genre: str, rows: Sequence[MetaRow]) -> None:
        _wording(self.questions, QUESTIONS.get(genre, {}), dimensions, "questions")
        if any(not 0 < c < float("inf") for c in self.strengths):
            raise MethodProblem("strengths", "each C is a positive number")
        if not any(row.scores for row in rows):
            raise MethodProblem("kind", "a probe learns from human scores, and this dataset has none")
        if len({row.doc_id for row in rows}) < self.folds:
            raise MethodProblem("folds", f"{self.folds} folds need at least as many inputs; the run has {len({row.doc_id for row in rows})}")


MethodConfig = Annotated[
    BinEvalMethod | HolisticMethod | UniEvalMethod | RougeMethod | LengthMethod | ProbeMethod, Field(discriminator="kind")
]


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
    rows: Sequence[MetaRow] = (),
    task: str | None = None,
) -> Scorer:
    """The scoring function of a checked method; ``checklist`` is BinEval's (None: each row's own questions, or with
    ``per_input`` one written per input, from ``task``, the input, and the outputs of ``rows`` beside it)."""
    if isinstance(method, BinEvalMethod):
        model = str(getattr(dspy.settings.lm, "model", "unknown-lm"))  # the method's LM: build_scorer runs in its context
        judge = BinaryJudge.from_spec(
            method.judge_spec(model), threads=judge_threads, code_router=None if method.code_routing else _no_code, probe=method.trained_probe()
        )
        per_input = _per_input_checklists(method, dimensions, genre, rows, task) if method.checklist == "per_input" else None

        def bineval(row: MetaRow) -> Scored:
            own = checklist is None and per_input is None
            written = per_input(row) if per_input is not None else checklist
            if not own and written is None:  # the writer gave nothing usable for this input: no score, never a guess
                return Scored(scores=dict.fromkeys(dimensions, None))
            card = judge(input=row.input, output=row.output, checklist=row_checklist(row) if own else written)
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
    if isinstance(method, ProbeMethod):
        return _probe_scorer(method, dimensions, genre, rows)
    if isinstance(method, LengthMethod):
        return lambda row: Scored(scores=dict.fromkeys(dimensions, float(len(_WORD.findall(row.output)))))
    return _rouge_scorer(method, dimensions)


def _probe_scorer(method: ProbeMethod, dimensions: Sequence[str], genre: str, rows: Sequence[MetaRow]) -> Scorer:
    """Every output's P(yes) per dimension from the head of the fold that held its input out: the states of every
    row are read first (an input's outputs one after another, so its text is evaluated once), then the heads fitted."""
    from bineval_dspy.judges.probe import INSTRUCTIONS, LabeledExample, read_examples
    from bineval_dspy.lm.cache import installed_dir
    from bineval_dspy.lm.hidden import reader_for
    from bineval_dspy.meta.probe import cross_fitted

    texts = _wording(method.questions, QUESTIONS.get(genre, {}), dimensions, "questions")
    reader = reader_for(dspy.settings.lm, installed_dir(), f"method {method.name}: the LM")
    first = {doc: k for k, doc in reversed(list(enumerate(row.doc_id for row in rows)))}
    ordered = sorted((row for row in rows if all(dim in row.scores for dim in texts)), key=lambda row: first[row.doc_id])
    pairs = [(row, dim) for row in ordered for dim in texts]
    examples = [LabeledExample(input=row.input, output=row.output, question=texts[dim], reference="yes", group=row.doc_id) for row, dim in pairs]
    readings = read_examples(reader, INSTRUCTIONS, examples, label=f"  {method.name}: reading states")
    p, heads = cross_fitted(
        readings, [row.scores[dim] for row, dim in pairs], [dim for _, dim in pairs], [row.doc_id for row, _ in pairs],
        folds=method.folds, inner_folds=method.inner_folds, layers=method.layers, strengths=method.strengths, seed=method.seed,
    )
    for head in heads:
        logger.info(f"  {method.name}: fold {head['fold']}: {head['features']}, C {head['strength']}, medians {head['medians']}")
    found: dict[str, dict[str, float | None]] = {}
    for (row, dim), value in zip(pairs, p):
        found.setdefault(row.id, {})[dim] = None if np.isnan(value) else round(float(value), 6)

    def probe(row: MetaRow) -> Scored:
        return Scored(scores=found.get(row.id, dict.fromkeys(texts, None)))

    return probe


def _no_code(question: Question, input: str, output: str) -> None:
    """Code routing off: every question goes to the LM, verifier or not."""
    return None


def checklist_writer(method: BinEvalMethod, genre: str) -> Any:
    """The method's checklist writer; a template gets the genre's dimension definitions (CheckEval reads them)."""
    from bineval_dspy.checklists.templates import TEMPLATES
    from bineval_dspy.checklists.writers import make_writer

    extra = {"definitions": DEFINITIONS.get(genre, {})} if method.writer in TEMPLATES else {}
    return make_writer(method.writer, max_questions=method.max_questions, **extra)


INPUT_CHARS = 3000  # of the input shown to a per-input writer (an article can be long for a small LM's context)


def _per_input_checklists(
    method: BinEvalMethod, dimensions: Sequence[str], genre: str, rows: Sequence[MetaRow], task: str | None
) -> Callable[[MetaRow], Checklist | None]:
    """A checklist per input, written once when its first output is scored (its cost is that output's): from the
    task and the input, the input's first reference and the other outputs of it as candidates, for a template that
    reads them. A writer failure leaves that input's outputs unscored."""
    from bineval_dspy.checklists.templates import TemplateWriter

    writer = checklist_writer(method, genre)
    outputs: dict[str, list[str]] = {}
    for row in rows:
        outputs.setdefault(row.doc_id, []).append(row.output)
    written: dict[str, Checklist | None] = {}
    lock = threading.Lock()

    def write(row: MetaRow) -> Checklist | None:
        with lock:
            if row.doc_id not in written:
                shown = row.input if len(row.input) <= INPUT_CHARS else row.input[:INPUT_CHARS] + " [...]"
                text = f"{task}\n\n{shown}" if task else shown
                extra: dict[str, Any] = {}
                if isinstance(writer, TemplateWriter):
                    extra = {"reference": row.references[0] if row.references else None, "candidates": outputs.get(row.doc_id)}
                try:
                    written[row.doc_id] = writer(task=text, dimensions=list(dimensions), **extra)
                except Exception:  # an LM that gives no usable checklist for this input
                    written[row.doc_id] = None
            return written[row.doc_id]

    return write


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
