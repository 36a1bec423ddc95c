"""Meta-evaluation datasets: typed rows (source, output, references, human scores) from the published files.

The library ships no data; a run config names the files. Every loader checks each line against the file's
published format and stops at the first bad one with one located line (``file:line: field 'x': ...``), before
any LM is called. Formats: ``shared/data/SOURCES.md`` of the project.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import read_jsonl_models

Text = Annotated[str, StringConstraints(min_length=1)]
Task = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class LabeledQuestion(BaseModel):
    """A decomposed yes/no question about an output with its reference label (InFoBench's GPT-4 verdicts)."""

    text: str
    dimension: str  # the question's first InFoBench label: Content, Format, Style, Linguistic or Number
    label: Literal["yes", "no"]


class MetaRow(BaseModel):
    """One output to score, with what people (or a reference judge) said about it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    doc_id: str  # the source document: summary-level correlation is computed across its outputs
    system_id: str
    input: str  # what the judge reads as the output's input (article, dialogue and fact, instruction)
    output: str
    references: list[str] = Field(default_factory=list)
    scores: dict[str, float] = Field(default_factory=dict)  # human score per dimension; absent: not rated
    questions: list[LabeledQuestion] = Field(default_factory=list)


# -- the files' rows, as published --------------------------------------------------------------------------------
class _Row(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


RowT = TypeVar("RowT", bound=_Row)


def _parse(path: Path, model: type[RowT]) -> Iterator[tuple[int, RowT]]:
    """Each line of a JSON Lines file as ``model``; the first bad line is one located InputError."""
    yield from read_jsonl_models(path, model)


class _Unique:
    """Refuses a second row with an id already seen, naming both lines."""

    def __init__(self, path: Path, what: str) -> None:
        self.path, self.what = path, what
        self.seen: dict[str, int] = {}

    def check(self, key: str, number: int) -> None:
        if key in self.seen:
            raise InputError(f"{self.path}:{number}: field '{self.what}': {key!r} repeats line {self.seen[key]}")
        self.seen[key] = number


class _SummEvalScores(_Row):
    coherence: float
    consistency: float
    fluency: float
    relevance: float


class _SummEvalSummary(_Row):
    id: Text
    doc_id: Text
    system_id: Text
    summary: str
    summary_bartscore: str
    scores: _SummEvalScores


class _SummEvalArticle(_Row):
    doc_id: Text
    source: Text
    source_bartscore: Text
    references: list[str] = Field(min_length=1)


class _UsrScores(_Row):
    naturalness: float
    coherence: float
    engagingness: float
    groundedness: float
    understandability: float
    overall: float


class _TopicalChatRow(_Row):
    id: Text
    dialogue_id: int
    system_id: Text
    source: Text
    context: str
    system_output: str
    scores: _UsrScores


class _Response(_Row):
    worker_id: int
    response: Literal["yes", "no"]


class _Sentence(_Row):
    sentence: str
    responses: list[_Response] = Field(min_length=1)


class _QagsRow(_Row):
    article: Text
    summary_sentences: list[_Sentence] = Field(min_length=1)


class _QagsScores(_Row):
    consistency: float


class _QagsUniEvalRow(_Row):
    doc_id: int
    system_id: int
    source: Text
    reference: str
    system_output: str
    scores: _QagsScores


class _InfoBenchTask(_Row):
    id: Text
    input: str
    instruction: Text
    decomposed_questions: list[Text] = Field(min_length=1)
    question_label: list[list[Text]]


class _InfoBenchOutput(_Row):
    id: Text
    output: str
    eval: list[bool]


# -- loaders ------------------------------------------------------------------------------------------------------
SummEvalText = Literal["bartscore", "release"]


def load_summeval(summaries: Path, articles: Path, text: SummEvalText = "bartscore") -> Iterator[MetaRow]:
    """SummEval's 16 systems' summaries per article with the mean of 3 experts (1-5) on four dimensions.

    ``text = "bartscore"`` reads the sentence-cased article and summaries of the BARTScore/UniEval/G-Eval files
    (what the papers scored); ``"release"`` the untokenized article with the lower-cased, PTB-tokenized summaries
    of SummEval's own release. References: the 11 of each article (original highlights first).
    """
    documents: dict[str, _SummEvalArticle] = {}
    unique = _Unique(articles, "doc_id")
    for number, article in _parse(articles, _SummEvalArticle):
        unique.check(article.doc_id, number)
        documents[article.doc_id] = article
    ids = _Unique(summaries, "id")
    for number, row in _parse(summaries, _SummEvalSummary):
        ids.check(row.id, number)
        document = documents.get(row.doc_id)
        if document is None:
            raise InputError(f"{summaries}:{number}: field 'doc_id': no article {row.doc_id!r} in {articles}")
        yield MetaRow(
            id=row.id,
            doc_id=row.doc_id,
            system_id=row.system_id,
            input=document.source_bartscore if text == "bartscore" else document.source,
            output=row.summary_bartscore if text == "bartscore" else row.summary,
            references=document.references,
            scores=row.scores.model_dump(),
        )


def load_topical_chat(path: Path) -> Iterator[MetaRow]:
    """USR's Topical-Chat ratings: 6 responses per dialogue context, 3 annotators' means on six dimensions
    (naturalness, coherence, engagingness 1-3; groundedness, understandability 0-1; overall 1-5).

    The judge reads the dialogue history and the knowledge fact the response should use; there is no reference.
    """
    ids = _Unique(path, "id")
    for number, row in _parse(path, _TopicalChatRow):
        ids.check(row.id, number)
        yield MetaRow(
            id=row.id,
            doc_id=f"tc-{row.dialogue_id:02d}",
            system_id=row.system_id,
            input=f"Dialogue history:\n{row.source.strip()}\n\nKnowledge fact:\n{row.context.strip()}",
            output=row.system_output.strip(),
            scores=row.scores.model_dump(),
        )


QagsFormat = Literal["mturk", "unieval"]


def load_qags(path: Path, format: QagsFormat = "mturk") -> Iterator[MetaRow]:
    """QAGS factual consistency (CNN/DM or XSum): one summary per article, so only dataset-level correlation is
    defined. ``mturk``: the crowd's 3 votes per summary sentence; consistency is the share of sentences whose
    majority says "yes" (what the UniEval copy records). ``unieval``: that copy (tokenized text; its reference is
    the article). Document ids are the 0-based row index, as the UniEval copy numbers them.
    """
    if format == "mturk":
        for index, (_, row) in enumerate(_parse(path, _QagsRow)):
            supported = [2 * sum(r.response == "yes" for r in s.responses) > len(s.responses) for s in row.summary_sentences]
            yield MetaRow(
                id=f"qags-{index}",
                doc_id=f"qags-{index}",
                system_id="0",
                input=row.article,
                output=" ".join(s.sentence.strip() for s in row.summary_sentences),
                scores={"consistency": sum(supported) / len(supported)},
            )
        return
    ids = _Unique(path, "doc_id")
    for number, unieval in _parse(path, _QagsUniEvalRow):
        ids.check(str(unieval.doc_id), number)
        yield MetaRow(
            id=f"qags-{unieval.doc_id}",
            doc_id=f"qags-{unieval.doc_id}",
            system_id=str(unieval.system_id),
            input=unieval.source,
            output=unieval.system_output,
            references=[unieval.reference] if unieval.reference.strip() else [],
            scores=unieval.scores.model_dump(),
        )


def load_infobench(instructions: Path, outputs: Path) -> Iterator[MetaRow]:
    """InFoBench: per instruction, GPT-4's output and GPT-4's verdict on each decomposed question (silver labels,
    not human ones). A question's dimension is its first label; a row's score per dimension is the share of its
    questions there labeled "yes", and ``overall`` the share of all of them (InFoBench's DRFR)."""
    tasks: dict[str, _InfoBenchTask] = {}
    unique = _Unique(instructions, "id")
    for number, task in _parse(instructions, _InfoBenchTask):
        unique.check(task.id, number)
        if len(task.question_label) != len(task.decomposed_questions) or not all(task.question_label):
            raise InputError(
                f"{instructions}:{number}: field 'question_label': needs one non-empty label list per decomposed question "
                f"({len(task.decomposed_questions)})"
            )
        tasks[task.id] = task
    ids = _Unique(outputs, "id")
    for number, answer in _parse(outputs, _InfoBenchOutput):
        ids.check(answer.id, number)
        found = tasks.get(answer.id)
        if found is None:
            raise InputError(f"{outputs}:{number}: field 'id': no instruction {answer.id!r} in {instructions}")
        task = found
        if len(answer.eval) != len(task.decomposed_questions):
            raise InputError(
                f"{outputs}:{number}: field 'eval': {len(answer.eval)} verdicts for {len(task.decomposed_questions)} decomposed questions"
            )
        questions = [
            LabeledQuestion(text=text, dimension=labels[0], label="yes" if verdict else "no")
            for text, labels, verdict in zip(task.decomposed_questions, task.question_label, answer.eval)
        ]
        scores = {dim: _yes_share([q for q in questions if q.dimension == dim]) for dim in dict.fromkeys(q.dimension for q in questions)}
        context = task.input.strip()
        yield MetaRow(
            id=task.id,
            doc_id=task.id,
            system_id="gpt-4",
            input=f"{task.instruction.strip()}\n\n{context}" if context else task.instruction.strip(),
            output=answer.output,
            scores={**scores, "overall": _yes_share(questions)},
            questions=questions,
        )


def _yes_share(questions: list[LabeledQuestion]) -> float:
    return sum(q.label == "yes" for q in questions) / len(questions)


# -- the dataset section of a run config --------------------------------------------------------------------------
class _Dataset(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dimensions: ClassVar[tuple[str, ...]]  # the human-rated dimensions, the default of a config's ``dimensions``
    genre: ClassVar[str]  # which default baseline wording fits the outputs (``meta.prompts``)
    task: Task | None = None  # what the outputs do: the task a generated checklist is written for

    def load(self) -> list[MetaRow]:
        """Every row of the files, in file order (each kind calls its loader)."""
        raise NotImplementedError

    def paths(self) -> dict[str, Path]:
        """The data files, by field name (resolved against the config's folder, fingerprinted by content)."""
        return {name: value for name, value in self if isinstance(value, Path)}


class SummEvalData(_Dataset):
    kind: Literal["summeval"]
    summaries: Path
    articles: Path
    text: SummEvalText = "bartscore"
    genre: ClassVar[str] = "summary"
    dimensions: ClassVar[tuple[str, ...]] = ("coherence", "consistency", "fluency", "relevance")
    task: Task | None = "Summarize the news article in a few sentences."

    def load(self) -> list[MetaRow]:
        return list(load_summeval(self.summaries, self.articles, self.text))


class TopicalChatData(_Dataset):
    kind: Literal["topical_chat"]
    path: Path
    genre: ClassVar[str] = "dialogue"
    dimensions: ClassVar[tuple[str, ...]] = ("naturalness", "coherence", "engagingness", "groundedness", "understandability", "overall")
    task: Task | None = "Write the next turn of the conversation, using the knowledge fact."

    def load(self) -> list[MetaRow]:
        return list(load_topical_chat(self.path))


class QagsData(_Dataset):
    kind: Literal["qags"]
    path: Path
    format: QagsFormat = "mturk"
    genre: ClassVar[str] = "summary"
    dimensions: ClassVar[tuple[str, ...]] = ("consistency",)
    task: Task | None = "Summarize the news article."

    def load(self) -> list[MetaRow]:
        return list(load_qags(self.path, self.format))


class InfoBenchData(_Dataset):
    kind: Literal["infobench"]
    instructions: Path
    outputs: Path
    genre: ClassVar[str] = "instruction"
    dimensions: ClassVar[tuple[str, ...]] = ("overall",)

    def load(self) -> list[MetaRow]:
        return list(load_infobench(self.instructions, self.outputs))


DatasetConfig = Annotated[SummEvalData | TopicalChatData | QagsData | InfoBenchData, Field(discriminator="kind")]


def sample_documents(rows: Sequence[MetaRow], limit: int | None, seed: int) -> list[MetaRow]:
    """Every output of ``limit`` documents drawn at random (seeded; from the sorted ids, so file order does not
    matter), in file order; all rows when ``limit`` is None or covers every document. Never part of a document."""
    documents = sorted({row.doc_id for row in rows})
    if limit is None or limit >= len(documents):
        return list(rows)
    chosen = set(random.Random(seed).sample(documents, limit))
    return [row for row in rows if row.doc_id in chosen]
