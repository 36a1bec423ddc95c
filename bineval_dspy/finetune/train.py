"""Training a LoRA adapter on the embedded model with trl's SFT or DPO trainer, on the CPU, resumable.

Checkpoints go to ``folder/checkpoints`` every ``save_steps``; a run killed mid-way resumes from the last one
(same data, same settings: the caller's fingerprint guards that); a checkpoint whose write the kill cut short is
discarded. The adapter is exported to GGUF
(``export.write_gguf_adapter``) as ``folder/adapter.gguf`` for the embedded engine.
"""

from __future__ import annotations

import json
import logging
import resource
import shutil
import time
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import sha256_of
from bineval_dspy.core.jsonio import load_model, write_error, write_json
from bineval_dspy.finetune.settings import FinetuneSettings

logger = logging.getLogger(__name__)

ADAPTER_FILE = "adapter.gguf"
TRAINED_FILE = "trained.json"
TORCH_SUFFIXES = (".pt", ".pth", ".bin")  # the trainer's torch.save files: optimizer, scheduler, RNG state, arguments


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
    adapter_sha256: str  # the exported adapter's: a rerun reuses only the very file it trained


def trained_report(folder: Path) -> TrainingReport | None:
    """The report of the training whose adapter ``folder`` holds, or None (said why) when the report or the adapter
    is missing, damaged, or not the file the report records: then the caller trains, resuming from the last whole
    checkpoint, and exports again, never blessing a damaged adapter with a new digest."""
    record, adapter = folder / TRAINED_FILE, folder / ADAPTER_FILE
    if not record.is_file() or not adapter.is_file():
        return None
    try:
        report = load_model(record, TrainingReport)
    except InputError as exc:
        logger.warning(f"finetune: {exc}; training again from the last checkpoint")
        return None
    if sha256_of(adapter) != report.adapter_sha256:
        logger.warning(f"finetune: {adapter}: not the adapter {record.name} records (sha256 differs); exporting it again")
        return None
    return report


def _progress_callback() -> Any:
    """trl's progress bar with the latest loss beside steps and time left."""
    from transformers.trainer_callback import ProgressCallback

    class LossOnBar(ProgressCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            if self.training_bar is not None and logs and "loss" in logs:
                self.training_bar.set_postfix(loss=f"{logs['loss']:.3f}")

    return LossOnBar()


def last_complete_checkpoint(checkpoints: Path) -> Path | None:
    """The newest whole checkpoint; newer ones a kill cut short or the disk damaged are removed, so that resuming
    never reads half a checkpoint."""
    if not checkpoints.is_dir():
        return None
    steps = sorted(
        (int(path.name.split("-")[1]), path) for path in checkpoints.glob("checkpoint-*")
        if path.is_dir() and path.name.split("-")[1].isdigit()
    )
    for _, path in reversed(steps):
        damage = _damage(path)
        if damage is None:
            return path
        logger.info(f"finetune: discarding {path.name}: {damage}")
        shutil.rmtree(path)
    return None


def _damage(checkpoint: Path) -> str | None:
    """Why the trainer could not resume from ``checkpoint`` (None: it can): its state file, written last, is
    missing or torn, or a tensor or torch file is shorter than its own header or index says."""
    state = checkpoint / "trainer_state.json"
    if not state.is_file():
        return "its write was interrupted"
    try:
        json.loads(state.read_bytes())
    except ValueError:
        return f"{state.name} is torn"
    for path in sorted(checkpoint.iterdir()):
        if path.suffix == ".safetensors" and not _whole_safetensors(path):
            return f"{path.name} is torn"
        if path.suffix in TORCH_SUFFIXES and not zipfile.is_zipfile(path):  # torch.save's zip keeps its index last
            return f"{path.name} is torn"
    return None


def _whole_safetensors(path: Path) -> bool:
    """Whether a safetensors file holds every byte its header promises."""
    try:
        with path.open("rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            header = json.loads(handle.read(size))
        end = max((entry["data_offsets"][1] for name, entry in header.items() if name != "__metadata__"), default=0)
        return bool(path.stat().st_size == 8 + size + end)
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return False


@contextmanager
def _writing(path: Path, kept: str) -> Iterator[None]:
    """A write that fails (a full disk) as the one located line every failed write is (``jsonio.write_error``):
    the writers under the trainer say it their own way, torch's serializer as a RuntimeError, the tokenizer's and
    safetensors' as an error carrying the OS error ("File too large (os error 27)")."""
    try:
        yield
    except Exception as exc:
        if not isinstance(exc, OSError | RuntimeError) and "os error" not in str(exc):
            raise
        raise write_error(path, exc, kept) from None


def train_adapter(
    method: str,
    rows: Sequence[dict[str, str]],
    base_gguf: Path,
    settings: FinetuneSettings,
    folder: Path,
) -> TrainingReport:
    """Train on ``rows`` (sft: prompt and completion texts; dpo: prompt, chosen and rejected), export the adapter
    to ``folder/adapter.gguf`` and return the report (also kept in ``folder/trained.json``)."""
    from bineval_dspy.core.quiet import quiet

    quiet("transformers", "datasets", "peft")
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
    save_checkpoint = trainer._save_checkpoint

    def saved_or_one_line(*args: Any, **kwargs: Any) -> Any:
        with _writing(checkpoints, "the last whole checkpoint is kept"):
            return save_checkpoint(*args, **kwargs)

    trainer._save_checkpoint = saved_or_one_line
    started = time.perf_counter()
    last = last_complete_checkpoint(checkpoints)
    if last is not None:
        logger.info(f"finetune: resuming training from {last.name}")
    trainer.train(resume_from_checkpoint=str(last) if last is not None else None)
    seconds = time.perf_counter() - started
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    with _writing(folder / ADAPTER_FILE, "the checkpoints are kept"):
        write_gguf_adapter(trainer.model, settings.lora_alpha, folder / ADAPTER_FILE)
    with _writing(folder / "peft", "the checkpoints are kept"):
        trainer.model.save_pretrained(str(folder / "peft"))  # the adapter as peft saves it: for PyTorch users and the export test
    report = TrainingReport(
        method=method, examples=len(rows), steps=int(trainer.state.global_step), first_loss=losses[0] if losses else None,
        last_loss=losses[-1] if losses else None, seconds=round(seconds, 1),
        peak_memory_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1), threads=threads,
        adapter_sha256=sha256_of(folder / ADAPTER_FILE),
    )
    write_json(folder / TRAINED_FILE, report.model_dump())  # atomic: a kill never leaves half a record
    return report
