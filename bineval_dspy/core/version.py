"""The library's version, at the bottom layer: every output's header records it, and a module of any layer may say it
without importing the package face (``bineval_dspy/__init__.py`` re-exports it as ``__version__``)."""

from __future__ import annotations

__version__ = "0.2.0"  # kept equal to pyproject.toml's `version` (tests/core/test_imports.py checks it)
