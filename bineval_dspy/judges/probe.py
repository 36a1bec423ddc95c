"""A judge that reads instead of speaks: a linear head on the judge model's hidden state, trained on reference labels.

A small judge's *answers* carry little signal (SmolLM2-135M says "yes" to nearly everything), but its hidden state
at the answer position still tells the outputs a strong judge passes from those it fails. A probe reads it: one
prefill, no decoding, the yes-bias removed by construction (class-balanced loss, a fitted threshold). Training it is
calibration: the labels are a stronger judge's question-level verdicts or people's.

The head is chosen without the test split: grouped k-fold predictions over the training rows (a task's questions
never on both sides of a fold) rank the candidate features (layers, poolings, the gap: ``probe_fit``) and L2
strengths by AUROC; the chosen candidate's out-of-fold P(yes) are calibrated and the threshold placed on them; the
head is then refitted on every training row. A head saved before pooled features (``ProbeHead``: one layer's last
token and the gap) still loads and scores as it did.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.core.errors import InputError, one_line
from bineval_dspy.core.fingerprint import digest
from bineval_dspy.core.jsonio import load_model, write_text_atomic
from bineval_dspy.core.schema import Question, Verdict
from bineval_dspy.core.settings import optional
from bineval_dspy.judges.probe_fit import (
    POOLINGS,
    Candidate,
    FeatureSpec,
    PooledHead,
    Pooling,
    best_threshold,
    default_layers,
    fit_linear,
    fit_platt,
    grouped_folds,
    place_thresholds,
    search,
    sigmoid,
)
from bineval_dspy.judges.question import Front, QuestionJudge
from bineval_dspy.lm.budget import metered_map
from bineval_dspy.lm.hidden import Backend, HiddenStates, Reading, Span
from bineval_dspy.stats.classification import auroc_statistic, balanced_accuracy_statistic, kappa_statistic, point

__all__ = ["Candidate", "PooledHead", "best_threshold", "default_layers", "grouped_folds"]  # the fitting's names, read from here

PROMPT_FORMAT = 1  # the probe prompt's layout (``probe_prompt``): a head reads states of prompts laid out this way
STRENGTHS = (0.001, 0.003, 0.01, 0.03)  # candidate C (inverse L2 strength, on standardized features)
FOLDS = 5
INSTRUCTIONS = (
    "You are a strict evaluator. Read the input and the output, then answer the yes/no question about the output. "
    'Answer "yes" only if the output clearly satisfies what the question asks; otherwise answer "no".'
)


def probe_prompt(tokenizer: Any, instructions: str, input: str, output: str, question: str) -> str:
    """The text whose states the head reads: the judge's chat prompt, ready for the answer (a base model without a
    chat template: the same parts as plain text, ending in "Answer:"). Input and output come first, so the questions
    of one output share everything before the question."""
    return probe_text(tokenizer, instructions, input, output, question)[0]


def probe_text(tokenizer: Any, instructions: str, input: str, output: str, question: str) -> tuple[str, dict[str, Span]]:
    """``probe_prompt``'s text and where the output and the question lie in it (characters), for their mean states.
    A span the template did not keep verbatim is left out (a head that pools it gives no verdict)."""
    head = f"Input:\n{input}\n\nOutput:\n"
    user = f"{head}{output}\n\nQuestion: {question}\nAnswer yes or no."
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "system", "content": instructions}, {"role": "user", "content": user}]
        text = str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
    else:
        text = f"{instructions}\n\n{user}\nAnswer:"
    at = text.rfind(user)
    if at < 0:
        return text, {}
    start = at + len(head)
    asked = start + len(output) + len("\n\nQuestion: ")
    spans = {"output": (start, start + len(output)), "question": (asked, asked + len(question))}
    return text, {name: span for name, span in spans.items() if span[1] > span[0]}


class ProbeHead(BaseModel):
    """Logistic regression on one layer's standardized state and the yes/no logit gap: P(yes), and yes exactly when
    P(yes) reaches ``threshold``."""

    layer: int
    strength: float  # C: inverse L2 strength it was fitted with
    mean: list[float]
    scale: list[float]
    weights: list[float]
    bias: float
    threshold: float

    def p_yes(self, readings: Sequence[Reading]) -> np.ndarray:
        x = (FeatureSpec(layers=[self.layer]).matrix(readings) - np.array(self.mean)) / np.array(self.scale)
        return sigmoid(x @ np.array(self.weights) + self.bias)

    def threshold_for(self, dimension: str | None) -> float:
        return self.threshold

    def describe(self) -> str:
        return f"layer {self.layer}"


class ProbeRecord(BaseModel):
    """How a head was trained: on what, chosen how, and how it did on the rows it never saw while fitting."""

    model: str  # the model string (its file digest): a head reads this model's states only
    prompt_format: int = PROMPT_FORMAT
    labels: str  # where the labels came from ("reference verdicts of FILE", "SummEval dimension scores >= ...")
    data: dict[str, str] = Field(default_factory=dict)  # file -> digest of its bytes
    rows: int
    yes_share: float
    groups: list[str]  # the tasks trained on (a leak check compares them with any test split)
    folds: int
    candidates: list[Candidate]
    validation: dict[str, float | None]  # the chosen candidate's out-of-fold kappa, balanced accuracy, AUROC, agreement
    threshold_rule: str | None = optional()  # how the threshold was placed (heads with pooled features)
    # which reader computed the states it was trained on: a head is read through the same one (left out of the file
    # when torch, so heads saved before there was a choice keep their digests)
    backend: Backend = Field(default="torch", exclude_if=lambda value: value == "torch")


PROBE_FILE = "probe.json"  # beside a judge program: its trained head and the head's training record
PROGRAM_FILE = "program.json"  # the judge program that names the head and records its digest


class ProbeRef(BaseModel):
    """Where a judge program's trained head is (``probe.json``, relative to the program's folder) and its digest: a
    program never runs a head other than the one it was saved with."""

    model_config = ConfigDict(extra="forbid")

    path: Path
    digest: str


class _NamedHead(BaseModel):
    """What ``head_of_run`` reads of a program file: the head it names (the rest is the program's)."""

    probe: ProbeRef | None = None


class Probe(BaseModel):
    """``probe.json``: a trained head, the instructions its prompts carry, and its training record."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["probe"] = "probe"
    instructions: str
    head: PooledHead | ProbeHead
    record: ProbeRecord

    def save(self, path: Path) -> str:
        """Write atomically; returns the file's digest (what a program and a judge spec record)."""
        text = self.model_dump_json(indent=1)
        write_text_atomic(path, text)
        return digest(text)

    @classmethod
    def load(cls, path: Path) -> Probe:
        """The file as it is, its digest unchecked: commands read a head through ``read_head`` or ``head_of_run``."""
        return load_model(path, cls)

    def digest(self) -> str:
        return digest(self.model_dump_json(indent=1))

    def verdicts(self, reader: HiddenStates, input: str, output: str, questions: Sequence[Question], judge: str) -> dict[str, Verdict]:
        """Every question's verdict from one trie walk over the output's prompts; a reading that fails leaves them
        all unanswered (never yes)."""
        if not questions:
            return {}
        if reader.model != self.record.model:
            why = f"the probe reads {self.record.model}'s states, the judge runs {reader.model}"
            return {q.id: Verdict(question_id=q.id, answer="unanswered", explanation=why, judge=judge) for q in questions}
        if reader.backend != self.record.backend:
            why = f"the probe was trained on {self.record.backend} states, the reader computes {reader.backend} states"
            return {q.id: Verdict(question_id=q.id, answer="unanswered", explanation=why, judge=judge) for q in questions}
        try:
            tokenizer = reader.tokenizer()
            texts = [probe_text(tokenizer, self.instructions, input, output, q.text) for q in questions]
            p = self.head.p_yes(reader.read([t for t, _ in texts], [spans for _, spans in texts]))
        except Exception as exc:  # a state that cannot be read is no verdict
            why = f"no probe reading: {one_line(exc)}"
            return {q.id: Verdict(question_id=q.id, answer="unanswered", explanation=why, judge=judge) for q in questions}
        head = self.head
        out = {}
        for q, value in zip(questions, p):
            cut = head.threshold_for(q.dimension)
            answer: Literal["yes", "no"] = "yes" if value >= cut else "no"
            note = f"probe: P(yes) {value:.2f} against threshold {cut:.2f} ({head.describe()})"
            out[q.id] = Verdict(question_id=q.id, answer=answer, p_yes=round(float(value), 6), explanation=note, judge=judge)
        return out


PROBE_JUDGE = "probe:"  # a probe verdict's judge: "probe:<model>", so a report's judge filter tells it from a spoken one


class ProbeJudge(QuestionJudge):
    """The per-question options (what the spec records), the LM questions answered by ``probe``, a trained head on
    the judge LM's hidden state (one prefill each, nothing decoded), not by what the LM says; a dimension's threshold
    still decides."""

    def __init__(self, probe: Probe, **options: Any) -> None:
        super().__init__(**options)
        self.probe = probe

    def recorded(self) -> dict[str, Any]:
        return {**super().recorded(), "probe": self.probe.digest()}

    def verdicts(self, judge: Front, input: str, output: str, questions: Sequence[Question]) -> dict[str, Verdict]:
        """The head's verdicts (its reader is the judge LM's model, refused in one line when that model gives no
        hidden states)."""
        from bineval_dspy.lm.cache import installed_dir
        from bineval_dspy.lm.hidden import reader_for

        lm = judge.answer_lm()
        reader = reader_for(lm, installed_dir(), backend=self.probe.record.backend)  # the states its head was trained on
        answers = self.probe.verdicts(reader, input, output, questions, PROBE_JUDGE + getattr(lm, "model", "unknown-lm"))
        return {q.id: self.decided(answers[q.id], None, q) for q in questions}

    def verdict(self, judge: Front, input: str, output: str, question: Question) -> Verdict:
        return self.verdicts(judge, input, output, [question])[question.id]


def probe_clash(chain_of_thought: bool, samples: int, calibration: str, scoring: str, verdict_format: str) -> str | None:
    """Why a probe cannot go with these options (it decodes nothing: no reasoning, no votes, no prior), or None."""
    if chain_of_thought or samples > 1:
        return "a probe reads one state per question: no chain of thought, no samples"
    if calibration != "none":
        return "a probe's threshold is its calibration: no content-free calibration"
    if scoring != "per_question" or verdict_format != "json":
        return "a probe answers each question from its own prompt: per-question scoring, json verdict format"
    return None


def read_head(program: Path, ref: ProbeRef) -> Probe:
    """The head the program file ``program`` names, refused in one line when missing or not the one saved with it
    (its digest differs): the one door every command reads a head through (``judge --program``, meta-eval's
    ``probe``), so no command judges with a head edited after it was trained."""
    path = program.parent / ref.path
    if not path.is_file():
        raise InputError(f"{program}: field 'probe.path': {path} not found")
    probe = Probe.load(path)
    if probe.digest() != ref.digest:
        raise InputError(f"{program}: field 'probe.digest': {path} is not the head this program was saved with (its digest differs)")
    return probe


def head_of_run(path: Path) -> Probe:
    """The head of a probe judge's run, named by its folder (``bineval calibrate``'s run folder, an experiment's
    arm), its ``program.json`` or its ``probe.json``: read through ``read_head`` against the digest the program
    beside it recorded. A head with no program beside it has no digest to check, and is refused."""
    folder = path if path.is_dir() else path.parent
    program = path if path.is_file() and path.name != PROBE_FILE else folder / PROGRAM_FILE
    if not path.exists():
        raise InputError(f"{path}: no such file or folder (a probe judge's run folder holds {PROGRAM_FILE} and {PROBE_FILE})")
    if not program.is_file():
        raise InputError(f"{path}: no {PROGRAM_FILE} beside it records the head's digest; name the run folder `bineval calibrate` wrote")
    ref = load_model(program, _NamedHead).probe
    if ref is None:
        raise InputError(f"{program}: field 'probe': this program has no probe head")
    if path.is_file() and path.name == PROBE_FILE and (program.parent / ref.path).resolve() != path.resolve():
        raise InputError(f"{path}: {program} names another head ({ref.path}); name the run folder")
    return read_head(program, ref)


class LabeledExample(BaseModel):
    """One training row: a question about an output, the reference's answer, and its task (the unit kept on one
    side of every split)."""

    input: str
    output: str
    question: str
    reference: Literal["yes", "no"]
    group: str
    dimension: str | None = None  # the question's dimension: a threshold of its own where its rows allow


def fit_probe(
    examples: Sequence[LabeledExample],
    reader: HiddenStates,
    *,
    labels: str,
    data: dict[str, str] | None = None,
    instructions: str = INSTRUCTIONS,
    layers: Sequence[int] | None = None,
    strengths: Sequence[float] = STRENGTHS,
    poolings: Sequence[Pooling] = POOLINGS,
    combine: bool = True,
    folds: int = FOLDS,
    seed: int = 0,
    test_groups: Sequence[str] = (),
    label: str | None = None,
) -> Probe:
    """A head trained on ``examples`` (features read through ``reader``), its features and strength chosen by
    grouped ``folds``-fold AUROC, its threshold placed on calibrated out-of-fold P(yes). ``test_groups``: tasks a
    caller will test on; one that is also trained on is refused (a leak)."""
    leaked = sorted({e.group for e in examples} & set(test_groups))
    if leaked:
        raise InputError(f"probe training data: task {leaked[0]!r} is also in the test split ({len(leaked)} task(s) on both sides)")
    if len({e.reference for e in examples}) < 2:
        raise InputError("probe training data: the references need both answers, yes and no")
    _check_layers(layers, reader.depth())
    readings = read_examples(reader, instructions, examples, label)
    y = np.array([e.reference == "yes" for e in examples], dtype=float)
    groups = [e.group for e in examples]
    head, candidates, oof = fit_head(
        readings, y, groups, layers=layers, strengths=strengths, poolings=poolings, combine=combine, folds=folds, seed=seed,
        dimensions=[e.dimension for e in examples],
    )
    answers = ["yes" if p >= head.threshold_for(e.dimension) else "no" for p, e in zip(oof, examples)]
    refs = [e.reference for e in examples]
    record = ProbeRecord(
        model=reader.model, labels=labels, data=dict(data or {}), rows=len(examples), yes_share=float(y.mean()),
        groups=sorted(set(groups)), folds=folds, candidates=candidates, validation=metrics(answers, list(oof), refs),
        threshold_rule=THRESHOLD_RULE, backend=reader.backend,
    )
    return Probe(instructions=instructions, head=head, record=record)


THRESHOLD_RULE = (
    "Platt-calibrated out-of-fold P(yes); the cut maximizing the kappa expected under the calibrated P(yes), "
    "per dimension with >= 20 out-of-fold rows of each answer, else global"
)


def read_examples(reader: HiddenStates, instructions: str, examples: Sequence[Any], label: str | None = None) -> list[Reading]:
    """The readings of every (input, output, question), the output's and question's mean states with them, one
    output's questions read together (they share a prefix), in the examples' order; with ``label``, a progress bar
    over the outputs."""
    tokenizer = reader.tokenizer()
    by_output: dict[tuple[str, str], list[int]] = {}
    for i, e in enumerate(examples):
        by_output.setdefault((e.input, e.output), []).append(i)
    out: list[Reading | None] = [None] * len(examples)

    def read(group: tuple[tuple[str, str], list[int]]) -> None:
        (inp, outp), members = group
        texts = [probe_text(tokenizer, instructions, inp, outp, examples[i].question) for i in members]
        for i, r in zip(members, reader.read([t for t, _ in texts], [spans for _, spans in texts])):
            out[i] = r

    for _ in metered_map(read, list(by_output.items()), label or "", show=label is not None):
        pass
    return [r for r in out if r is not None]


def metrics(answers: Sequence[str], p_yes: Sequence[float], references: Sequence[str]) -> dict[str, float | None]:
    """Kappa, balanced accuracy, AUROC and agreement of answers (and P(yes)) against references."""
    n = len(references)
    return {
        "kappa": point(kappa_statistic(list(zip(answers, references))), n),
        "balanced_accuracy": point(balanced_accuracy_statistic(answers, references), n),
        "auroc": point(auroc_statistic(p_yes, references), n),
        "agreement": sum(a == r for a, r in zip(answers, references)) / n if n else None,
        "yes_rate": sum(a == "yes" for a in answers) / n if n else None,
    }


def fit_head(
    readings: Sequence[Reading],
    y: np.ndarray,
    groups: Sequence[str],
    *,
    layers: Sequence[int] | None = None,
    strengths: Sequence[float] = STRENGTHS,
    poolings: Sequence[Pooling] = POOLINGS,
    combine: bool = True,
    folds: int = FOLDS,
    seed: int = 0,
    dimensions: Sequence[str | None] | None = None,
) -> tuple[PooledHead, list[Candidate], np.ndarray]:
    """The chosen head, every candidate's out-of-fold AUROC, and the chosen candidate's calibrated out-of-fold
    P(yes). Poolings the readings lack (read without spans) are not tried."""
    depth = readings[0].hidden.shape[0] - 1
    layers = list(layers) if layers else default_layers(depth)
    _check_layers(layers, depth)
    usable = [p for p in poolings if p == "last" or all(p in r.pooled for r in readings)]
    if not usable:
        raise InputError(f"probe: no reading holds the poolings asked for ({', '.join(poolings)})")
    (specs, strength, raw), candidates = search(
        readings, y, groups, layers=layers, poolings=usable, strengths=strengths, folds=folds, seed=seed, combine=combine
    )
    calibration = fit_platt(raw, y)
    oof = calibration(raw)
    threshold, own = place_thresholds(oof, y, dimensions or [None] * len(y))
    members = [fit_linear(spec.matrix(readings), y, strength).linear(spec) for spec in specs]
    head = PooledHead(strength=strength, members=members, calibration=calibration, threshold=threshold, thresholds=own)
    return head, candidates, oof


def _check_layers(layers: Sequence[int] | None, depth: int) -> None:
    bad = [layer for layer in layers or () if not 0 <= layer <= depth]
    if bad:
        raise InputError(f"`layers`: the model has layers 0-{depth}, got {bad[0]}")


def examples_file(path: Path) -> list[LabeledExample]:
    """Judge examples from a JSON Lines file (``input``, ``output``, ``question``, ``reference`` and the task id in
    ``example_id``), each bad line refused in one located line."""
    from bineval_dspy.core.jsonio import read_jsonl

    out = []
    for number, row in read_jsonl(path):
        missing = [f for f in ("input", "output", "question", "reference") if not isinstance(row.get(f), str)]
        if missing:
            raise InputError(f"{path}:{number}: field {missing[0]!r}: missing or not text")
        if row["reference"] not in ("yes", "no"):
            raise InputError(f"{path}:{number}: field 'reference': expected \"yes\" or \"no\", got {json.dumps(row['reference'])}")
        group = row.get("example_id") or row.get("id") or row["input"]
        dimension = row.get("dimension") if isinstance(row.get("dimension"), str) else None
        out.append(LabeledExample(
            input=row["input"], output=row["output"], question=row["question"], reference=row["reference"], group=str(group), dimension=dimension,
        ))
    return out
