"""The checklist-writer seam: anything that turns a task into a ``Checklist`` of yes/no questions."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from bineval_dspy.core.schema import Checklist


@runtime_checkable
class ChecklistWriter(Protocol):
    """``writer(task=..., dimensions=...) -> Checklist``; BinEval's two steps implement it, TICK and Qworld can."""

    def __call__(self, *, task: str, dimensions: list[str] | None = None) -> Checklist:
        """A checklist for the task; given dimensions are the only ones its questions use."""
        ...
