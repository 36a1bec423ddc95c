"""Process-wide setup shared by the CLI and scripts: LM, disk cache, thread policy."""

from __future__ import annotations

import os
from pathlib import Path

import dspy

from bineval_dspy.core.console import console
from bineval_dspy.lm.specs import DEFAULT_LM, is_local, make_lm

DEFAULT_THREADS = 4  # parallel calls for remote LMs when --threads is not given
DEFAULT_CACHE_DIR = Path(os.environ.get("BINEVAL_CACHE_DIR", Path.home() / ".cache" / "bineval_dspy"))


def configure(lm_spec: str | None = None, cache_dir: Path | None = DEFAULT_CACHE_DIR, **lm_kwargs) -> dspy.LM:
    """Configure DSPy with one LM (``None``: the embedded default) and an on-disk LM cache, so reruns are free."""
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(cache_dir))
    lm = make_lm(lm_spec or DEFAULT_LM, **lm_kwargs)
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
