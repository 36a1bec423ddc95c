"""What a fine-tuning run is told: how to sample, which samples become training data, and how to train."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class FinetuneSettings(BaseModel):
    """``BinEvalFinetune``'s settings, the ``[finetune]`` table of a config and a ``finetune`` arm's fields.

    Sampling: ``samples`` responses per train prompt at ``temperature`` (each its own rollout, cached and replayed
    on a rerun). Selection: ``sft`` keeps each sample that passes every code check (rejection-sampling
    fine-tuning), at most ``keep_per_prompt`` a prompt; ``dpo`` pairs a passing sample with a failing one of the same
    prompt whose checklist scores differ by at least ``margin`` (up to ``keep_per_prompt`` pairs). Training: a
    LoRA adapter of rank ``lora_rank`` on ``target_modules``, ``epochs`` over the data at ``learning_rate``.
    """

    model_config = ConfigDict(extra="forbid")

    method: Literal["sft", "dpo"] = "sft"
    samples: int = Field(default=4, ge=1, description="responses sampled per train prompt")
    temperature: float = Field(default=0.8, gt=0, le=2)
    greedy_too: bool = Field(default=True, description="also score the greedy response (a passing one is training data too)")
    enforce: Literal["extracted", "annotated"] | None = Field(
        default=None,
        description="draw the samples under each prompt's code-checkable constraints (the compiled decoder as a teacher); the trained program decodes without",
    )
    margin: float = Field(default=0.25, ge=0, le=1, description="dpo: least checklist-score gap between chosen and rejected")
    keep_per_prompt: int = Field(default=2, ge=1, description="sft: passing samples kept per prompt; dpo: pairs per prompt")
    balance: bool = Field(default=False, description="a judge's reference verdicts: keep as many of the commoner answer as of the rarer")
    lora_rank: int = Field(default=8, ge=1)
    lora_alpha: int = Field(default=16, ge=1)
    target_modules: list[str] = Field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    epochs: float = Field(default=2.0, gt=0, allow_inf_nan=False)
    learning_rate: float = Field(default=2e-4, gt=0, allow_inf_nan=False)
    batch_size: int = Field(default=4, ge=1)
    max_steps: int = Field(default=0, ge=0, description="stop after this many optimizer steps (0: the epochs decide)")
    beta: float = Field(default=0.1, gt=0, allow_inf_nan=False, description="dpo: the KL weight")
    max_length: int = Field(default=512, ge=32, description="tokens per training sequence (prompt and response)")
    save_steps: int = Field(default=10, ge=1, description="a checkpoint every N steps, so a killed run resumes")
    seed: int = 0

    @field_validator("target_modules")
    @classmethod
    def _exportable(cls, names: list[str]) -> list[str]:
        """Only the decoder layers' linear modules have a llama.cpp tensor to adapt: any other name (the embeddings,
        the head, a typo) would fail after training, at the export, or adapt nothing."""
        from bineval_dspy.finetune.export import LLAMA_TENSORS

        if not names:
            raise ValueError("name at least one module to adapt")
        for name in names:
            if not any(path == name or path.endswith("." + name) for path in LLAMA_TENSORS):
                known = ", ".join(path.split(".")[-1] for path in LLAMA_TENSORS)
                raise ValueError(f"{name!r} is no linear module of a decoder layer (the adapter exports only {known})")
        return names
