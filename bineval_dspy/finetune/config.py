"""`bineval finetune CONFIG.toml`: an optimize run description plus ``[finetune]`` and ``train_data``.

``mode = "self"`` trains the generator on its own samples that the checklists approve; ``mode = "cross"`` trains
the judge on the train examples' reference verdicts (distillation). The train examples are the data's train split
plus, when ``train_data`` is given, every row of that file (a suite such as a ``bineval suite synth`` file, or
judge examples), refused where it shares a prompt or an example with val or test.
"""

from __future__ import annotations

from pathlib import Path

import dspy
from pydantic import Field

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_toml
from bineval_dspy.core.neardup import LeakIndex
from bineval_dspy.finetune.settings import FinetuneSettings
from bineval_dspy.optimize.config import RunConfig, load_judge_examples, resolve_paths
from bineval_dspy.suites.rows import load_suite


class FinetuneConfig(RunConfig):
    """A run config with the fine-tuning settings and an optional file of extra train examples."""

    train_data: Path | None = Field(default=None, description="more train examples: a suite (self mode) or judge examples (cross mode)")
    finetune: FinetuneSettings = FinetuneSettings()

    @property
    def learns_from(self) -> tuple[str, ...]:
        """Fine-tuning trains on train and has no val loop: ``val = 0`` is a run of its own."""
        return ("train",)


def load_finetune_config(path: Path) -> FinetuneConfig:
    config = resolve_paths(load_toml(path, FinetuneConfig), path)
    if not config.data.split_files and config.data.test == 0:
        raise InputError(f"{path}: field 'data.test': the fine-tuned program is scored against the start on a test split; give test > 0 or a file")
    if config.train_data is None:
        return config
    return config.model_copy(update={"train_data": (path.parent / config.train_data).resolve()})


def extra_train(path: Path | None, held_out: list[dspy.Example], mode: str = "self") -> list[dspy.Example]:
    """More train examples: a suite's rows (self mode) or judge examples (cross mode); one that shares a key or an
    example id with val or test, or whose prompt (a judge example's input and output) nearly duplicates one of
    theirs (``core.neardup``: a copy with other spacing, punctuation or look-alike letters), is refused: it would
    leak into training."""
    if path is None:
        return []
    if mode == "self":
        examples = [row.to_example() for row in load_suite(path)]
        name, text = (lambda ex: str(ex.key)), (lambda ex: str(ex.prompt))
    else:
        examples = load_judge_examples(path)
        name, text = (lambda ex: str(ex.example_id)), (lambda ex: f"{ex.input}\n{ex.output}")
    held = {name(ex) for ex in held_out}
    index = LeakIndex([(name(ex), text(ex)) for ex in held_out])
    for example in examples:
        if name(example) in held:
            raise InputError(f"{path}: {name(example)!r} is also in the val or test split: it would leak into training")
        copied = index.copied(text(example))
        if copied is not None:
            raise InputError(f"{path}: {name(example)!r} nearly duplicates {copied!r} of the val or test split: it would leak into training")
    return examples
