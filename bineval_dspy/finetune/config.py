"""`bineval finetune CONFIG.toml`: an optimize run description plus ``[finetune]``.

``mode = "self"`` trains the generator on its own samples that the checklists approve; ``mode = "cross"`` trains
the judge on the train examples' reference verdicts (distillation). The train examples are the data's train split
plus, when ``train_data`` is given, every row of that file (a suite such as a ``bineval suite synth`` file, or
judge examples), refused where it shares a prompt or an example with val or test. The program is scored on the
test split beside the start, with paired intervals.
"""

from __future__ import annotations

from pathlib import Path

import dspy
from pydantic import BaseModel

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import file_digest
from bineval_dspy.core.jsonio import load_toml
from bineval_dspy.finetune.optimizer import BinEvalFinetune
from bineval_dspy.finetune.settings import FinetuneSettings
from bineval_dspy.optimize.config import (
    RunConfig,
    build,
    load_judge_examples,
    resolve_paths,
    run_fingerprint,
    splits_of,
    test_scorer,
)
from bineval_dspy.optimize.results import SplitScore
from bineval_dspy.programs.state import PROGRAM_FILE, ProgramFile
from bineval_dspy.programs.weights import weights_of
from bineval_dspy.stats.bootstrap import Interval
from bineval_dspy.suites.rows import load_suite


class FinetuneConfig(RunConfig):
    """A run config with the fine-tuning settings and an optional file of extra train examples."""

    train_data: Path | None = None
    finetune: FinetuneSettings = FinetuneSettings()


class FinetuneResults(BaseModel):
    """``results.json`` of a finetune run: its splits, what it trained on, and start vs fine-tuned on test."""

    splits: dict[str, int]
    samples: int
    passing_samples: int
    training_examples: int
    training: dict
    start: SplitScore | None = None
    finetuned: SplitScore | None = None
    difference: dict[str, Interval] = {}


def load_finetune_config(path: Path) -> FinetuneConfig:
    config = resolve_paths(load_toml(path, FinetuneConfig), path)
    if config.train_data is not None:
        config.train_data = (path.parent / config.train_data).resolve()
    return config


def extra_train(path: Path | None, held_out: list[dspy.Example], mode: str = "self") -> list[dspy.Example]:
    """More train examples: a suite's rows (self mode) or judge examples (cross mode); one that shares a key, a
    prompt or an example id with val or test is refused: it would leak into training."""
    if path is None:
        return []
    if mode == "self":
        examples = [row.to_example() for row in load_suite(path)]
        ids, held = (lambda ex: str(ex.key)), {str(ex.key) for ex in held_out} | {str(ex.prompt) for ex in held_out}
        prompts = lambda ex: str(ex.prompt)  # noqa: E731
    else:
        examples = load_judge_examples(path)
        ids, held = (lambda ex: str(ex.example_id)), {str(ex.example_id) for ex in held_out}
        prompts = ids
    for example in examples:
        if ids(example) in held or prompts(example) in held:
            raise InputError(f"{path}: {ids(example)!r} is also in the val or test split: it would leak into training")
    return examples


def tuner_for(config: FinetuneConfig, lm_identity: str, metric, run_dir: Path, settings: FinetuneSettings) -> BinEvalFinetune:  # type: ignore[no-untyped-def]
    """The optimizer for a config (its fingerprint: the run description, the extra suite's bytes, the LM)."""
    fingerprint = {k: str(v) for k, v in run_fingerprint(config, lm_identity).items()}
    if config.train_data is not None:
        fingerprint["train_data"] = file_digest(config.train_data)
    return BinEvalFinetune(
        metric, run_dir=run_dir, settings=settings, base=config.lm, threads=config.program.threads, fingerprint=fingerprint
    )


def run_finetune(config: FinetuneConfig, lm_identity: str) -> FinetuneResults:
    """Sample, select, train, export; then score the start and the fine-tuned program on test (when there is one)."""
    student, optimizer, (train, val, test) = build(config, progress=True)
    splits_of(config, (train, val, test)).save(config.run_dir)
    metric = getattr(optimizer.feedback, "metric", None)  # a judge learns from references, not from a metric
    tuner = tuner_for(config, lm_identity, metric, config.run_dir, config.finetune)
    program = tuner.compile(student, trainset=[*train, *extra_train(config.train_data, [*val, *test], config.mode)])
    ProgramFile.of(program).save(config.run_dir / PROGRAM_FILE)
    weights = weights_of(program)
    results = FinetuneResults(
        splits={"train": len(tuner.samples), "val": len(val), "test": len(test)},
        samples=sum(len(p.samples) for p in tuner.samples),
        passing_samples=sum(s.passed for p in tuner.samples for s in p.samples),
        training_examples=len(tuner.data),
        training=weights.training if weights is not None else {},
    )
    if test:
        scorer = test_scorer(config, student, optimizer, test)
        before = scorer.evaluate(student, "start")
        after = scorer.evaluate(program, "fine-tuned")
        results.start, results.finetuned = scorer.score(before), scorer.score(after)
        results.difference = {"score": scorer.difference(after, before)} | {
            name: scorer.difference(after, before, name) for name in results.finetuned.accuracy
        }
        if results.finetuned.kappa is not None:  # a judge: agreement with the reference beyond chance
            results.difference["kappa"] = scorer.difference(after, before, "kappa")
    (config.run_dir / "results.json").write_text(results.model_dump_json(indent=2), encoding="utf-8")
    return results
