"""The registry of candidate kinds, in a module of its own below its two users: ``OptimizerSettings`` refuses a
``kinds`` entry it does not name, and ``optimize.proposers`` registers the built-in kinds (the package imports it,
so they are there before any settings are read) and types the entries (``proposers.PROPOSERS`` is this registry)."""

from __future__ import annotations

from typing import Any

from bineval_dspy.core.registry import Registry

KINDS: Registry[Any] = Registry("candidate kind")  # in the order the kinds take turns
