"""Process-wide setup shared by the CLI and scripts: LM, disk cache, thread policy."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import dspy
from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.core.console import console
from bineval_dspy.core.errors import InputError
from bineval_dspy.lm.specs import DEFAULT_LM, is_local, make_lm

DEFAULT_THREADS = 4  # parallel calls for remote LMs when --threads is not given
DEFAULT_CACHE_DIR = Path(os.environ.get("BINEVAL_CACHE_DIR", Path.home() / ".cache" / "bineval_dspy"))


class LMOptions(BaseModel):
    """The LM options the commands share, from the command line (``lm_options``) to ``make_lm``; None: its default."""

    model_config = ConfigDict(frozen=True)

    spec: str = DEFAULT_LM
    api_base: str | None = None
    api_key: str | None = Field(default=None, repr=False)  # the key itself, read from the --api-key-env variable
    temperature: float | None = None
    timeout: float | None = None
    max_tokens: int | None = None
    source: str = "--lm"  # where the spec came from, for error messages


def lm_options(args: argparse.Namespace, spec: str | None = None, source: str = "--lm") -> LMOptions:
    """The LM options of a parsed command line; ``spec`` (a run config's LM, from ``source``) stands in for ``--lm``."""
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if api_key is None:
            raise InputError(f"--api-key-env {args.api_key_env}: environment variable {args.api_key_env} is not set")
    return LMOptions(
        spec=spec or args.lm or DEFAULT_LM,
        api_base=args.api_base,
        api_key=api_key,
        temperature=args.temperature,
        timeout=args.timeout,
        max_tokens=getattr(args, "lm_max_tokens", None),  # only ``judge`` has it; ``generate`` limits per response
        source=source,
    )


def configure(options: LMOptions | str | None = None, cache_dir: Path | None = DEFAULT_CACHE_DIR) -> dspy.LM:
    """Configure DSPy with one LM (a spec, or ``None``: the embedded default) and an on-disk LM cache, so reruns are free."""
    if not isinstance(options, LMOptions):
        options = LMOptions(spec=options or DEFAULT_LM)
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(cache_dir))
    lm = make_lm(**options.model_dump(exclude_none=True))
    dspy.configure(lm=lm)
    return lm


def effective_threads(lm: dspy.LM, threads: int, asked: bool = True) -> int:
    """An in-process model serializes calls; threads would only interleave prompts and defeat prefix reuse."""
    if is_local(lm) and threads > 1:
        if asked:
            console.print("[yellow]note:[/] the embedded model runs one call at a time; --threads ignored")
        return 1
    return threads


def lm_identity(lm: dspy.LM) -> str:
    """Model string and API base: what tells two LMs' answers apart in a fingerprint."""
    api_base = (lm.kwargs or {}).get("api_base")
    return f"{lm.model} @ {api_base}" if api_base else lm.model
