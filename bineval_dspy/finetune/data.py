"""Training data from the library's own feedback: samples of the program being tuned, scored by its checklists.

Each train prompt gets ``samples`` sampled responses (and the greedy one), each judged by the metric's checklist:
code verifiers where a constraint is checkable, LM questions elsewhere. ``samples.jsonl`` keeps one line per
prompt as soon as it is scored (a rerun with the same settings resumes; other settings are refused), and the
data set a method trains on (``sft.jsonl`` or ``dpo.jsonl``) is derived from it with each example's scores and
failed questions, so what the model learned from can be read back.

Fail closed: a sample whose generation failed, or whose checklist has an unanswered question, is no evidence
either way; its prompt is not written, and the run stops with what is missing (a rerun retries it from the cache).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy
from pydantic import BaseModel

from bineval_dspy.core.errors import InputError, RunError, one_line
from bineval_dspy.core.fingerprint import Fingerprint
from bineval_dspy.core.runlog import RunLog, model_log
from bineval_dspy.core.scoring import join, outcomes
from bineval_dspy.finetune.settings import FinetuneSettings
from bineval_dspy.lm.budget import BudgetMeter, metered_map
from bineval_dspy.lm.usage import Cost
from bineval_dspy.optimize.metric import BinEvalMetric
from bineval_dspy.programs.sampling import draw
from bineval_dspy.runs.execute import Here, execute
from bineval_dspy.runs.kinds import RUN_KINDS
from bineval_dspy.runs.protocol import Worker

SAMPLES_FILE = "samples.jsonl"


class Sample(BaseModel):
    """One response to a train prompt and what its checklist said: ``passed`` is every code check passing (every
    question, where the checklist has no code check)."""

    rollout: int | None  # None: the greedy response
    response: str
    score: float
    passed: bool
    failed: list[str]


class PromptSamples(BaseModel):
    key: str
    prompt: str
    samples: list[Sample]


class SftExample(BaseModel):
    """A passing sample: rejection-sampling fine-tuning's data."""

    key: str
    prompt: str
    response: str
    score: float


class PreferencePair(BaseModel):
    """A passing and a failing sample of one prompt, ``margin`` or more apart in checklist score (RLCF's pairs)."""

    key: str
    prompt: str
    chosen: str
    rejected: str
    chosen_score: float
    rejected_score: float
    rejected_failed: list[str]


def score_sample(metric: BinEvalMetric, example: dspy.Example, rollout: int | None, response: str) -> Sample:
    """The checklist's verdicts on one response; an unanswered question raises (the sample proves nothing)."""
    result = metric.judged(example, dspy.Prediction(response=response))
    if result.unanswered:
        raise RunError(f"{result.unanswered} checklist question(s) unanswered")
    checklist = metric.checklist_for(example)
    pairs = join(checklist, result.scorecard.verdicts)
    code = [verdict.answer == "yes" for question, verdict in pairs if question.verifier is not None]
    passed = all(code) if code else result.score == 1.0
    failed = [question.text for question, _ in outcomes(pairs)["failed"]]
    return Sample(rollout=rollout, response=response, score=float(result.score), passed=passed, failed=failed)


def sample_prompt(student: dspy.Module, metric: BinEvalMetric, example: dspy.Example, settings: FinetuneSettings) -> PromptSamples:
    """The greedy response (``greedy_too``) and ``samples`` sampled ones, each with its own rollout id and seed (so
    samples differ, the same command draws the same ones, and a rerun replays them from the cache), each scored."""
    prompt = str(example[metric.input_field])
    samples = []
    if settings.greedy_too:
        samples.append(score_sample(metric, example, None, metric.output_of(student(prompt=prompt))))
    rollouts = range(settings.samples)
    drawn = draw(student, prompt, rollouts, temperature=settings.temperature, seed=settings.seed, read=metric.output_of)
    for rollout, response in zip(rollouts, drawn):
        if isinstance(response, Exception):
            raise response
        samples.append(score_sample(metric, example, rollout, response))
    return PromptSamples(key=metric.example_id(example), prompt=prompt, samples=samples)


def collect(
    student: dspy.Module,
    metric: BinEvalMetric,
    examples: Sequence[dspy.Example],
    settings: FinetuneSettings,
    folder: Path,
    fingerprint: Fingerprint,
    threads: int = 1,
) -> list[PromptSamples]:
    """Every example's samples (a ``SamplesRun`` executed here), resuming ``folder/samples.jsonl`` when it was made
    under ``fingerprint``; a prompt that could not be sampled or scored stops the run after the others are written
    (``RunError``)."""
    folder.mkdir(parents=True, exist_ok=True)
    run = SamplesRun(student, metric, list(examples), settings, folder, fingerprint, threads)
    done = execute(run, Here())
    if done.failed:
        raise RunError(f"{len(done.failed)} train prompt(s) could not be sampled and scored (first: {done.failed[0][0]}); rerun to retry them")
    return [done.records[metric.example_id(ex)] for ex in examples]


Sampled = tuple["PromptSamples | str", Cost]  # a prompt's samples, or why it has none; what its calls cost


@RUN_KINDS.writes("finetune-samples", spec=FinetuneSettings, results=PromptSamples, legacy=({"key", "prompt", "samples"},))
@dataclass
class SamplesRun:
    """Fine-tuning's samples as a run (``runs.protocol.Run``): each train prompt sampled and scored by its checklist."""

    student: dspy.Module
    metric: BinEvalMetric
    examples: list[dspy.Example]
    settings: FinetuneSettings
    folder: Path
    settled: Fingerprint  # what decided the samples: the program, the data and LM, the sampling settings
    threads: int = 1
    kind: str = "finetune-samples"
    prune: bool = False

    def items(self) -> list[dspy.Example]:
        return self.examples

    def key(self, item: dspy.Example) -> str:
        return self.metric.example_id(item)

    def log(self) -> RunLog[PromptSamples]:
        hint = f"; remove {self.folder} or use a new run_dir"  # no `overwrite` here
        return model_log(self.folder / SAMPLES_FILE, PromptSamples, key=lambda r: r.key, hint=hint)

    def fingerprint(self) -> Fingerprint:
        return self.settled

    def do(self, todo: Sequence[dspy.Example], meter: BudgetMeter) -> Iterator[Sampled]:
        def one(example: dspy.Example) -> PromptSamples | str:
            try:
                return sample_prompt(self.student, self.metric, example, self.settings)
            except Exception as exc:  # one prompt's failure must not lose the others; the rerun retries it
                return f"{self.metric.example_id(example)}: {one_line(exc)}"

        return metered_map(one, todo, "  finetune: sampling", threads=self.threads, meter=meter, kind="prompt", what="prompt(s)")

    def actor(self) -> tuple[type[Worker[dspy.Example, Sampled]], tuple[Any, ...]]:
        raise ValueError("fine-tuning samples are drawn in this process: the model trained next is here")

    def record(self, outcome: Sampled) -> PromptSamples | None:
        return outcome[0] if isinstance(outcome[0], PromptSamples) else None

    def usage(self, outcome: Sampled) -> Cost:
        return outcome[1]


def sft_examples(prompts: Sequence[PromptSamples], settings: FinetuneSettings) -> list[SftExample]:
    """Passing samples, best first, at most ``keep_per_prompt`` distinct responses a prompt."""
    out = []
    for record in prompts:
        seen: set[str] = set()
        for sample in sorted((s for s in record.samples if s.passed), key=lambda s: -s.score):
            if sample.response.strip() and sample.response not in seen and len(seen) < settings.keep_per_prompt:
                seen.add(sample.response)
                out.append(SftExample(key=record.key, prompt=record.prompt, response=sample.response, score=sample.score))
    return out


def preference_pairs(prompts: Sequence[PromptSamples], settings: FinetuneSettings) -> list[PreferencePair]:
    """Per prompt, passing samples (best first) paired with failing ones (worst first) at least ``margin`` apart."""
    out = []
    for record in prompts:
        good = sorted((s for s in record.samples if s.passed and s.response.strip()), key=lambda s: -s.score)
        bad = sorted((s for s in record.samples if not s.passed), key=lambda s: s.score)
        pairs = [(g, b) for g, b in zip(good, bad) if g.score - b.score >= settings.margin and g.response != b.response]
        out += [
            PreferencePair(
                key=record.key, prompt=record.prompt, chosen=g.response, rejected=b.response,
                chosen_score=g.score, rejected_score=b.score, rejected_failed=b.failed,
            )
            for g, b in pairs[: settings.keep_per_prompt]
        ]
    return out


def reference_verdicts(examples: Sequence[dspy.Example], balance: bool) -> list[tuple[dspy.Example, str]]:
    """Each judge example with its recorded ``reference`` verdict; with ``balance`` only the first examples of the
    commoner answer are kept, as many as the rarer one has, so a yes-biased model sees as many "no" as "yes" (and
    training costs two examples per rare one, not a whole skewed set)."""
    pairs = []
    for number, example in enumerate(examples):
        answer = example.get("reference")
        if answer not in ("yes", "no"):
            raise InputError(f"train example {number} ({example.get('question_id', 'no id')}): field 'reference' must be \"yes\" or \"no\" to learn from")
        pairs.append((example, str(answer)))
    if balance:
        rare = min(sum(a == answer for _, a in pairs) for answer in ("yes", "no"))
        seen = {"yes": 0, "no": 0}
        kept = []
        for example, answer in pairs:
            seen[answer] += 1
            if seen[answer] <= rare:
                kept.append((example, answer))
        pairs = kept
    return pairs
