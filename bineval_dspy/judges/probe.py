"""A judge that reads instead of speaks: a linear head on the judge model's hidden state, trained on reference labels.

A small judge's *answers* carry little signal (SmolLM2-135M says "yes" to nearly everything), but its hidden state
at the answer position still tells the outputs a strong judge passes from those it fails. A probe reads it: one
prefill, no decoding, the yes-bias removed by construction (class-balanced loss, a fitted threshold). Training it is
calibration: the labels are a stronger judge's question-level verdicts or people's.

The head is chosen without the test split: for each candidate layer and L2 strength, grouped k-fold predictions
over the training rows (a task's questions never on both sides of a fold) rank the candidates by AUROC; the decision
threshold is the one that maximizes Cohen's kappa on the chosen candidate's out-of-fold predictions; the head is then
refitted on every training row.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.core.errors import InputError, one_line
from bineval_dspy.core.fingerprint import digest
from bineval_dspy.core.jsonio import load_model, write_text_atomic
from bineval_dspy.core.schema import Question, Verdict
from bineval_dspy.lm.budget import metered_map
from bineval_dspy.lm.hidden import HiddenStates, Reading
from bineval_dspy.stats.classification import auroc_statistic, balanced_accuracy_statistic, kappa_statistic, point

PROMPT_FORMAT = 1  # the probe prompt's layout (``probe_prompt``): a head reads states of prompts laid out this way
STRENGTHS = (0.001, 0.003, 0.01, 0.03)  # candidate C (inverse L2 strength, on standardized features)
FOLDS = 5
INSTRUCTIONS = (
    "You are a strict evaluator. Read the input and the output, then answer the yes/no question about the output. "
    'Answer "yes" only if the output clearly satisfies what the question asks; otherwise answer "no".'
)


def probe_prompt(tokenizer: Any, instructions: str, input: str, output: str, question: str) -> str:
    """The text whose last token's state the head reads: the judge's chat prompt, ready for the answer. Input and
    output come first, so the questions of one output share everything before the question."""
    user = f"Input:\n{input}\n\nOutput:\n{output}\n\nQuestion: {question}\nAnswer yes or no."
    messages = [{"role": "system", "content": instructions}, {"role": "user", "content": user}]
    return str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))


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
        x = (_features(readings, self.layer) - np.array(self.mean)) / np.array(self.scale)
        return np.asarray(_sigmoid(x @ np.array(self.weights) + self.bias))


class Candidate(BaseModel):
    """One (layer, C) on the training rows' out-of-fold predictions."""

    layer: int
    strength: float
    auroc: float | None


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
    head: ProbeHead
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
        try:
            tokenizer = reader.tokenizer()
            prompts = [probe_prompt(tokenizer, self.instructions, input, output, q.text) for q in questions]
            p = self.head.p_yes(reader.read(prompts))
        except Exception as exc:  # a state that cannot be read is no verdict
            why = f"no probe reading: {one_line(exc)}"
            return {q.id: Verdict(question_id=q.id, answer="unanswered", explanation=why, judge=judge) for q in questions}
        head = self.head
        out = {}
        for q, value in zip(questions, p):
            answer: Literal["yes", "no"] = "yes" if value >= head.threshold else "no"
            note = f"probe: P(yes) {value:.2f} against threshold {head.threshold:.2f} (layer {head.layer})"
            out[q.id] = Verdict(question_id=q.id, answer=answer, p_yes=round(float(value), 6), explanation=note, judge=judge)
        return out


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


def fit_probe(
    examples: Sequence[LabeledExample],
    reader: HiddenStates,
    *,
    labels: str,
    data: dict[str, str] | None = None,
    instructions: str = INSTRUCTIONS,
    layers: Sequence[int] | None = None,
    strengths: Sequence[float] = STRENGTHS,
    folds: int = FOLDS,
    seed: int = 0,
    test_groups: Sequence[str] = (),
    label: str | None = None,
) -> Probe:
    """A head trained on ``examples`` (features read through ``reader``), its layer and strength chosen by grouped
    ``folds``-fold AUROC, its threshold by out-of-fold kappa. ``test_groups``: tasks a caller will test on; one that
    is also trained on is refused (a leak)."""
    leaked = sorted({e.group for e in examples} & set(test_groups))
    if leaked:
        raise InputError(f"probe training data: task {leaked[0]!r} is also in the test split ({len(leaked)} task(s) on both sides)")
    if len({e.reference for e in examples}) < 2:
        raise InputError("probe training data: the references need both answers, yes and no")
    _check_layers(layers, reader.depth())
    readings = read_examples(reader, instructions, examples, label)
    y = np.array([e.reference == "yes" for e in examples], dtype=float)
    groups = [e.group for e in examples]
    head, candidates, oof = fit_head(readings, y, groups, layers=layers, strengths=strengths, folds=folds, seed=seed)
    answers = ["yes" if p >= head.threshold else "no" for p in oof]
    refs = [e.reference for e in examples]
    record = ProbeRecord(
        model=reader.model, labels=labels, data=dict(data or {}), rows=len(examples), yes_share=float(y.mean()),
        groups=sorted(set(groups)), folds=folds, candidates=candidates, validation=metrics(answers, list(oof), refs),
    )
    return Probe(instructions=instructions, head=head, record=record)


def read_examples(reader: HiddenStates, instructions: str, examples: Sequence[Any], label: str | None = None) -> list[Reading]:
    """The readings of every (input, output, question), one output's questions read together (they share a prefix),
    in the examples' order; with ``label``, a progress bar over the outputs."""
    tokenizer = reader.tokenizer()
    by_output: dict[tuple[str, str], list[int]] = {}
    for i, e in enumerate(examples):
        by_output.setdefault((e.input, e.output), []).append(i)
    out: list[Reading | None] = [None] * len(examples)

    def read(group: tuple[tuple[str, str], list[int]]) -> None:
        (inp, outp), members = group
        prompts = [probe_prompt(tokenizer, instructions, inp, outp, examples[i].question) for i in members]
        for i, r in zip(members, reader.read(prompts)):
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


# -- fitting --------------------------------------------------------------------------------------------------------
def fit_head(
    readings: Sequence[Reading],
    y: np.ndarray,
    groups: Sequence[str],
    *,
    layers: Sequence[int] | None = None,
    strengths: Sequence[float] = STRENGTHS,
    folds: int = FOLDS,
    seed: int = 0,
) -> tuple[ProbeHead, list[Candidate], np.ndarray]:
    """The chosen head, every candidate's out-of-fold AUROC, and the chosen candidate's out-of-fold P(yes)."""
    depth = readings[0].hidden.shape[0] - 1
    layers = list(layers) if layers else default_layers(depth)
    _check_layers(layers, depth)
    fold_of = grouped_folds(groups, folds, seed)
    refs = ["yes" if v else "no" for v in y]
    best: tuple[float, int, float, np.ndarray] | None = None
    candidates = []
    for layer in layers:
        x = _features(readings, layer)
        for strength in strengths:
            oof = np.zeros(len(y))
            for k in range(folds):
                train, held = fold_of != k, fold_of == k
                if not held.any():
                    continue
                oof[held] = _fit(x[train], y[train], strength).predict(x[held])
            auc = point(auroc_statistic(list(oof), refs), len(y))
            candidates.append(Candidate(layer=layer, strength=strength, auroc=auc))
            if auc is not None and (best is None or auc > best[0]):
                best = (auc, layer, strength, oof)
    if best is None:
        raise InputError("probe training data: no fold held both answers; give more tasks")
    _, layer, strength, oof = best
    threshold = best_threshold(oof, y)
    fitted = _fit(_features(readings, layer), y, strength)
    head = ProbeHead(
        layer=layer, strength=strength, mean=fitted.mean.tolist(), scale=fitted.scale.tolist(),
        weights=fitted.w.tolist(), bias=fitted.b, threshold=threshold,
    )
    return head, candidates, oof


def _check_layers(layers: Sequence[int] | None, depth: int) -> None:
    bad = [layer for layer in layers or () if not 0 <= layer <= depth]
    if bad:
        raise InputError(f"`layers`: the model has layers 0-{depth}, got {bad[0]}")


def default_layers(depth: int) -> list[int]:
    """Every third layer from the third, and the last: middle-to-late layers carry the most, which one is found."""
    return sorted({*range(3, depth + 1, 3), depth})


def best_threshold(p: np.ndarray, y: np.ndarray) -> float:
    """The P(yes) cut with the highest Cohen's kappa (ties: the one nearest 0.5)."""
    refs = ["yes" if v else "no" for v in y]
    cuts = np.unique(np.round(p, 4))
    scored = []
    for t in cuts:
        answers = ["yes" if v >= t else "no" for v in p]
        k = point(kappa_statistic(list(zip(answers, refs))), len(y))
        scored.append((k if k is not None else -1.0, -abs(t - 0.5), float(t)))
    return max(scored)[2] if scored else 0.5


class _Fitted:
    def __init__(self, mean: np.ndarray, scale: np.ndarray, w: np.ndarray, b: float) -> None:
        self.mean, self.scale, self.w, self.b = mean, scale, w, b

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(_sigmoid(((x - self.mean) / self.scale) @ self.w + self.b))


def _fit(x: np.ndarray, y: np.ndarray, strength: float, iterations: int = 30) -> _Fitted:
    """Class-balanced L2 logistic regression by Newton's method (exact; a few steps, each one linear solve at this
    width): each class weighs half of the loss, the penalty is |w|^2 / 2C on standardized features, the bias is not
    penalized. A step that does not lower the loss is halved."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    n, d = z.shape
    positives = y.sum()
    sw = np.where(y > 0, n / (2 * max(positives, 1)), n / (2 * max(n - positives, 1)))
    reg = np.full(d, 1.0 / strength)
    reg[-1] = 0.0

    def loss(theta: np.ndarray) -> float:
        margin = z @ theta
        return float(sw @ (np.logaddexp(0.0, margin) - y * margin) + (reg * theta) @ theta / 2)

    theta = np.zeros(d)
    current = loss(theta)
    for _ in range(iterations):
        p = _sigmoid(z @ theta)
        grad = z.T @ (sw * (p - y)) + reg * theta
        hess = (z.T * (sw * p * (1 - p))) @ z + np.diag(reg + 1e-8)
        step = np.linalg.solve(hess, grad)
        size = 1.0
        while (trial := loss(theta - size * step)) > current and size > 1e-4:
            size /= 2
        theta, done = theta - size * step, current - trial < 1e-9 * max(abs(current), 1.0)
        current = trial
        if done:
            break
    return _Fitted(mean, scale, theta[:-1], float(theta[-1]))


def _features(readings: Sequence[Reading], layer: int) -> np.ndarray:
    return np.array([np.append(r.hidden[layer], r.gap) for r in readings], dtype=np.float64)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -40, 40))))


def grouped_folds(groups: Sequence[str], folds: int, seed: int) -> np.ndarray:
    """A fold per row, whole groups together, groups dealt round-robin after a seeded shuffle."""
    names = sorted(set(groups))
    random.Random(seed).shuffle(names)
    fold = {name: k % folds for k, name in enumerate(names)}
    return np.array([fold[g] for g in groups])


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
        out.append(LabeledExample(input=row["input"], output=row["output"], question=row["question"], reference=row["reference"], group=str(group)))
    return out
