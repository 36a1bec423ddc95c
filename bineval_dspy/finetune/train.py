"""Training a LoRA adapter on the embedded model with trl's SFT or DPO trainer, on the CPU, resumable.

Checkpoints go to ``folder/checkpoints`` every ``save_steps``; a run killed mid-way resumes from the last one
(same data, same settings: the caller's fingerprint guards that); a checkpoint whose write the kill cut short is
discarded. The adapter is exported to GGUF
(``export.write_gguf_adapter``) as ``folder/adapter.gguf`` for the embedded engine.
"""

from __future__ import annotations

import json
import resource
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bineval_dspy.core.console import console
from bineval_dspy.finetune.settings import FinetuneSettings

ADAPTER_FILE = "adapter.gguf"
TRAINED_FILE = "trained.json"


class TrainingReport(BaseModel):
    """What one training run did: its data, steps, losses, time and the process's peak memory."""

    method: str
    examples: int
    steps: int
    first_loss: float | None
    last_loss: float | None
    seconds: float
    peak_memory_mb: float
    threads: int


def _progress_callback() -> Any:
    """trl's progress bar with the latest loss beside steps and time left."""
    from transformers.trainer_callback import ProgressCallback

    class LossOnBar(ProgressCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            if self.training_bar is not None and logs and "loss" in logs:
                self.training_bar.set_postfix(loss=f"{logs['loss']:.3f}")

    return LossOnBar()


def last_complete_checkpoint(checkpoints: Path) -> Path | None:
    """The newest checkpoint the trainer finished writing (its state file is written last); newer ones a kill cut
    short are removed, so that resuming never reads half a checkpoint."""
    if not checkpoints.is_dir():
        return None
    steps = sorted(
        (int(path.name.split("-")[1]), path) for path in checkpoints.glob("checkpoint-*")
        if path.is_dir() and path.name.split("-")[1].isdigit()
    )
    for _, path in reversed(steps):
        if (path / "trainer_state.json").is_file():
            return path
        console.print(f"finetune: discarding {path.name}: its write was interrupted")
        shutil.rmtree(path)
    return None


def train_adapter(
    method: str,
    rows: Sequence[dict[str, str]],
    base_gguf: Path,
    settings: FinetuneSettings,
    folder: Path,
) -> TrainingReport:
    """Train on ``rows`` (sft: prompt and completion texts; dpo: prompt, chosen and rejected), export the adapter
    to ``folder/adapter.gguf`` and return the report (also kept in ``folder/trained.json``)."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers.trainer_callback import ProgressCallback

    from bineval_dspy.finetune.export import write_gguf_adapter
    from bineval_dspy.finetune.torch_model import load_model, load_tokenizer, set_threads

    threads = set_threads()
    torch.manual_seed(settings.seed)
    tokenizer = load_tokenizer(base_gguf)
    model = load_model(base_gguf)
    lora = LoraConfig(
        r=settings.lora_rank, lora_alpha=settings.lora_alpha, lora_dropout=0.0, target_modules=list(settings.target_modules),
        task_type="CAUSAL_LM",
    )
    checkpoints = folder / "checkpoints"
    common: dict[str, Any] = dict(
        output_dir=str(checkpoints), per_device_train_batch_size=settings.batch_size, num_train_epochs=settings.epochs,
        max_steps=settings.max_steps or -1, learning_rate=settings.learning_rate, logging_steps=1,
        save_strategy="steps", save_steps=settings.save_steps, save_total_limit=2, use_cpu=True, report_to=[],
        seed=settings.seed, data_seed=settings.seed, dataloader_num_workers=0, max_length=settings.max_length,
        lr_scheduler_type="linear", warmup_steps=0, gradient_checkpointing=False,  # recomputing activations only costs time here
    )
    dataset = Dataset.from_list(list(rows))
    if method == "sft":
        from trl import SFTConfig, SFTTrainer

        trainer: Any = SFTTrainer(
            model=model, args=SFTConfig(**common, completion_only_loss=True), train_dataset=dataset,
            processing_class=tokenizer, peft_config=lora,
        )
    else:
        from trl import DPOConfig, DPOTrainer

        trainer = DPOTrainer(
            model=model, args=DPOConfig(**common, beta=settings.beta), train_dataset=dataset, processing_class=tokenizer,
            peft_config=lora,
        )
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(_progress_callback())
    started = time.perf_counter()
    last = last_complete_checkpoint(checkpoints)
    if last is not None:
        console.print(f"finetune: resuming training from {last.name}")
    trainer.train(resume_from_checkpoint=str(last) if last is not None else None)
    seconds = time.perf_counter() - started
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    write_gguf_adapter(trainer.model, settings.lora_alpha, folder / ADAPTER_FILE)
    trainer.model.save_pretrained(str(folder / "peft"))  # the adapter as peft saves it: for PyTorch users and the export test
    report = TrainingReport(
        method=method, examples=len(rows), steps=int(trainer.state.global_step), first_loss=losses[0] if losses else None,
        last_loss=losses[-1] if losses else None, seconds=round(seconds, 1),
        peak_memory_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1), threads=threads,
    )
    (folder / TRAINED_FILE).write_text(json.dumps(report.model_dump(), indent=2), encoding="utf-8")
    return report
