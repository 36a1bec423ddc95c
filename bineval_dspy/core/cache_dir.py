"""Where the library keeps what it caches (LM replies, matplotlib's fonts): one place every layer may ask."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "BINEVAL_CACHE_DIR"


def default_cache_dir() -> Path:
    """``$BINEVAL_CACHE_DIR``, else ``~/.cache/bineval_dspy``: read when a command runs, not at import."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "bineval_dspy")
