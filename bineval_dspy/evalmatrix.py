"""``bineval eval``: prompts x LMs on one suite, side by side, with the paired difference of every column from a
baseline and its bootstrap interval.

Each column (one prompt on one LM) generates its responses into ``RUN_DIR/columns/NAME/responses.jsonl``,
fingerprinted and resumed as ``bineval generate`` does; every response is then graded by the suite's code
verifiers and, with a ``checklist``, judged by ``judge_lm``. A row's score is the share of its instructions
followed (ungraded ones leave the row incomplete, never a pass), or with a checklist the mean of that share and
the checklist's overall score. ``results.json`` is an experiment's results (one arm per column, so ``bineval show``
and ``report`` read it); ``matrix.md`` holds every row's verdicts, ``grid.jsonl`` every row's outputs with them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_toml, read_text
from bineval_dspy.experiment.grid import GridCell

MATRIX_FILE = "matrix.md"


class PromptSpec(BaseModel):
    """One prompt: instructions given inline, from a file, or an optimizer's ``program.json``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_.+-]+$", description="the prompt's part of a column name")
    instructions: str | None = Field(default=None, description="the generator's instructions")
    file: Path | None = Field(default=None, description="a file holding the instructions")
    program: Path | None = Field(default=None, description="an optimizer's program.json (instructions and demos)")

    @model_validator(mode="after")
    def _one_source(self) -> PromptSpec:
        given = [n for n in ("instructions", "file", "program") if getattr(self, n) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of instructions, file and program, not {' and '.join(given)}")
        return self


class LMSpec(BaseModel):
    """One LM the prompts run on."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_.+-]+$", description="the LM's part of a column name")
    lm: str = Field(min_length=1, description="smollm2, gemma3-270m, a .gguf path or a LiteLLM string")
    max_tokens: int = Field(default=256, ge=8, description="token limit per response")


class EvalConfig(BaseModel):
    """An eval matrix: every prompt on every LM, graded by the suite's verifiers (and a checklist when given)."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(default="", exclude=True, description="the config file, for error messages")
    run_dir: Path = Field(description="where columns, results.json and matrix.md go")
    suite: Path = Field(description="JSONL suite: key, prompt, instruction_id_list, kwargs")
    limit: int | None = Field(default=None, ge=1, description="only the first N suite rows")
    checklist: Path | None = Field(default=None, description="a checklist every response is also judged against")
    judge_lm: str = Field(default="smollm2", description="the LM answering the checklist's questions")
    baseline: str | None = Field(default=None, description="the column (PROMPT@LM) others are compared with; default the first")
    resamples: int = Field(default=1000, ge=0, description="bootstrap resamples over rows")
    seed: int = 0
    prompts: list[PromptSpec] = Field(min_length=1)
    lms: list[LMSpec] = Field(min_length=1)

    def columns(self) -> list[tuple[str, PromptSpec, LMSpec]]:
        """Every prompt on every LM, named ``PROMPT@LM``, prompts first."""
        return [(f"{p.name}@{m.name}", p, m) for p in self.prompts for m in self.lms]

    @model_validator(mode="after")
    def _names(self) -> EvalConfig:
        names = [name for name, _, _ in self.columns()]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"column {repeated[0]!r} appears twice: give prompts and lms distinct names")
        if self.baseline is not None and self.baseline not in names:
            raise ValueError(f"baseline {self.baseline!r} is not a column ({', '.join(names)})")
        return self


def load_eval_config(path: Path) -> EvalConfig:
    """Read an eval config; relative paths are taken from its folder."""
    config = load_toml(path, EvalConfig)
    config.source = str(path)
    base = path.parent
    config.run_dir, config.suite = (base / config.run_dir).resolve(), (base / config.suite).resolve()
    if config.checklist is not None:
        config.checklist = (base / config.checklist).resolve()
    for prompt in config.prompts:
        for name in ("file", "program"):
            if getattr(prompt, name) is not None:
                setattr(prompt, name, (base / getattr(prompt, name)).resolve())
    return config


def build_program(prompt: PromptSpec, max_tokens: int) -> Any:
    """The generator a prompt describes (its demos too, from a program file)."""
    from bineval_dspy.programs.generator import Generator
    from bineval_dspy.programs.state import load_program

    if prompt.program is not None:
        program = load_program(prompt.program, kind="generator").build()
        program.max_tokens = max_tokens
        return program
    text = read_text(prompt.file) if prompt.file is not None else prompt.instructions
    if text is not None and not text.strip():
        raise InputError(f"prompt {prompt.name!r}: the instructions are empty")
    return Generator(text, max_tokens=max_tokens)


def row_score(followed: list[bool | None], checklist: float | None, judged: bool) -> float | None:
    """The share of instructions followed (with a checklist, its mean with the checklist score); None when an
    instruction is ungraded or the checklist has no score: an incomplete row is never scored as a pass."""
    if not followed or None in followed or (judged and checklist is None):
        return None
    share = sum(bool(f) for f in followed) / len(followed)
    return (share + checklist) / 2 if judged and checklist is not None else share


def matrix_markdown(keys: list[str], columns: dict[str, dict[str, GridCell]], summary: dict[str, str]) -> str:
    """Rows x columns, each verdict visible (Y followed, n not, ? ungraded; then the checklist score), and one
    summary line per column."""
    names = list(columns)
    lines = ["| row | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for key in keys:
        lines.append(f"| {key} | " + " | ".join(columns[n][key].text() if key in columns[n] else "-" for n in names) + " |")
    lines.append("| **mean** | " + " | ".join(summary[n] for n in names) + " |")
    return "\n".join(lines) + "\n"


def column_fingerprint(suite: Path, program: Any, lm_identity: str) -> dict[str, str]:
    """What decides a column's responses, as ``generate`` records it."""
    from bineval_dspy.core.fingerprint import digest, file_digest
    from bineval_dspy.programs.state import demos_of

    return {
        "suite": file_digest(suite),
        "instructions": digest(program.generate.signature.instructions),
        **({"demos": digest(json.dumps(demos_of(program), sort_keys=True))} if program.generate.demos else {}),
        "lm": lm_identity,
        "max_tokens": str(program.max_tokens),
        "refine": "0",
        "best_of": "1",
        "judge": "none",
    }
