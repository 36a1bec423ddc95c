"""Whether a written question is about the task at all: the checklist screen's test for questions a small writer
makes up ("Is it true that the sky is blue?" for a haiku).

A question counts as related when its embedding is close to the task (or one of its clauses: a long task states
several requirements), or closer still to one of a few questions any response may fairly be asked (fluency,
accuracy, doing what was asked): generic questions sit near those anchors whatever they ask, so the bar there is
higher. The thresholds were set on hand-made examples with all-MiniLM-L6-v2 (on-task questions from 0.32 up to the
task, sound generic ones from 0.40 up to an anchor; made-up ones below both); their effect on written checklists is
measured in experiments/README.md (issue 33).
"""

from __future__ import annotations

import re

import numpy as np

from bineval_dspy.core.embeddings import Embedder, default_embedder, unit_rows

THRESHOLD = 0.30  # to the task or a clause of it
ANCHOR_THRESHOLD = 0.40  # to a question any response may be asked
DUPLICATE = 0.80  # a written question this close to a code question asks the same thing
ANCHORS = (
    "Is the response well written, clear and fluent?",
    "Does the response do what the task asks?",
    "Is the response free of grammar and spelling mistakes?",
    "Is the response accurate and free of false claims?",
    "Is the response concise, without irrelevant content?",
    "Is the response in the requested format?",
)


def clauses(task: str) -> list[str]:
    """The task and each of its clauses of two words or more (split at sentence marks, commas and 'and')."""
    parts = [c.strip() for c in re.split(r"[.;:,!?]\s+|\n+|\band\b", task) if len(c.split()) >= 2]
    return [task, *parts]


class Relevance:
    """How related questions are to one task (``score``), and the screen's verdict on one (``problem``)."""

    def __init__(self, task: str, embed: Embedder | None = None) -> None:
        self.embed = embed or default_embedder()
        parts = clauses(task)
        references = unit_rows(self.embed([*parts, *ANCHORS]))
        self._task, self._anchors = references[: len(parts)], references[len(parts) :]

    def score(self, texts: list[str]) -> np.ndarray:
        """Each text's relatedness as a margin over the bars: its best cosine to the task or a clause minus
        ``THRESHOLD``, or to an anchor minus ``ANCHOR_THRESHOLD``, whichever is higher (negative: unrelated)."""
        if not texts:
            return np.zeros(0)
        rows = unit_rows(self.embed(list(texts)))
        return np.maximum((rows @ self._task.T).max(axis=1) - THRESHOLD, (rows @ self._anchors.T).max(axis=1) - ANCHOR_THRESHOLD)

    def problem(self, text: str) -> str | None:
        """Why the screen leaves the question out, or None when it is about the task."""
        margin = float(self.score([text])[0])
        if margin < 0:
            return f"is unrelated to the task ({-margin:.2f} short of the similarity it needs)"
        return None

    def duplicate(self, a: str, b: str) -> bool:
        """Whether two questions ask the same thing (cosine at least ``DUPLICATE``)."""
        rows = unit_rows(self.embed([a, b]))
        return float(rows[0] @ rows[1]) >= DUPLICATE
