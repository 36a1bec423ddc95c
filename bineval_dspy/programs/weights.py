"""A fine-tuned program's weights, as ``program.json`` records them: the base model, the adapter and how it was made.

The adapter is a GGUF LoRA file the embedded engine applies to the base model, so a program that carries weights
runs on its own LM (``attach``): ``generate --program``, ``judge --program`` and every experiment load it with no
other step. Both files' digests are kept: a program never runs on an adapter or a base other than the one it was
measured with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import dspy
from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.core.errors import InputError


class Weights(BaseModel):
    """The weights a program runs on: ``base`` (an embedded spec or a .gguf path) plus a LoRA ``adapter``."""

    model_config = ConfigDict(extra="forbid")

    base: str
    base_sha256: str
    adapter: Path  # in program.json: relative to the file's folder
    adapter_sha256: str
    method: Literal["sft", "dpo"]
    training: dict[str, Any] = Field(default_factory=dict, description="settings, data set size, steps, time, peak memory, losses")

    def base_path(self) -> Path:
        from bineval_dspy.lm.specs import model_file

        return model_file(self.base, "weights.base")

    def check(self, where: str) -> None:
        """Both files exist and are the ones recorded; else one located error."""
        from bineval_dspy.core.fingerprint import sha256_of

        for field, path, recorded in (
            ("weights.adapter", self.adapter, self.adapter_sha256),
            ("weights.base", self.base_path(), self.base_sha256),
        ):
            if not path.is_file():
                raise InputError(f"{where}: field '{field}': {path} not found")
            if sha256_of(path) != recorded:
                raise InputError(f"{where}: field '{field}': {path} is not the file this program was trained with (its sha256 differs)")

    def lm(self) -> dspy.LM:
        """The base model with the adapter applied, through the same embedded engine as any ``--lm``, loaded now:
        an adapter llama.cpp cannot apply is one located error before any call, not a failure at every call."""
        from bineval_dspy.core.errors import one_line
        from bineval_dspy.lm.specs import make_lm

        lm = make_lm(self.base, lora=self.adapter, source="weights.base")
        try:
            lm.engine.load()
        except Exception as exc:
            raise InputError(f"field 'weights.adapter': {self.adapter}: {exc if isinstance(exc, RuntimeError) else one_line(exc)}") from None
        return lm

    def relative_to(self, folder: Path) -> Weights:
        """These weights with the adapter's path written from ``folder`` (where program.json goes)."""
        import os

        return self.model_copy(update={"adapter": Path(os.path.relpath(self.adapter.resolve(), folder.resolve()))})

    def resolved(self, folder: Path) -> Weights:
        """These weights with a relative adapter path taken from ``folder`` (where program.json was read)."""
        return self.model_copy(update={"adapter": (folder / self.adapter).resolve()})


def attach(program: dspy.Module, weights: Weights) -> dspy.Module:
    """Make ``program`` run on ``weights``: every predictor gets the adapted LM, and the program remembers them."""
    program.set_lm(weights.lm())
    program.weights = weights
    return program


def weights_of(program: dspy.Module) -> Weights | None:
    """The weights a program runs on, or None when it runs on whatever LM is configured."""
    weights = getattr(program, "weights", None)
    return weights if isinstance(weights, Weights) else None
