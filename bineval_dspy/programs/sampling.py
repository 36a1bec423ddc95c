"""Drawing several samples of one prompt at once: Best-of-N's draw and fine-tuning's sampler.

Why together: an in-process engine decodes the samples of one prompt as parallel sequences sharing its prefill
(announced with ``expect`` so they form one batch), and a server gets them in parallel. Each sample has its own
``rollout_id`` (its own cache entry) and seed, so the same command draws the same samples whichever way they are
decoded, and a rerun replays them from the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dspy

from bineval_dspy.lm.budget import metered_map
from bineval_dspy.lm.engine import engine_of


def _expectation(program: dspy.Module, n: int) -> Any:
    """``engine.expect(n)`` of the LM ``program`` calls, when that engine batches (else a no-op)."""
    lms = [p.lm for p in program.predictors() if getattr(p, "lm", None) is not None] if hasattr(program, "predictors") else []
    lm = lms[0] if lms else dspy.settings.lm
    return engine_of(lm).expect(n)


def draw(
    program: dspy.Module, prompt: str, rollouts: Sequence[int], *, temperature: float, seed: int, read: Callable[[Any], str]
) -> list[str | Exception]:
    """``read(program(prompt=prompt))`` for each rollout, sampled at ``temperature`` with seed ``seed + rollout``,
    all at once; a failed sample is its exception, in its place."""

    def one(rollout: int) -> str | Exception:
        config = {"rollout_id": rollout, "temperature": temperature, "seed": seed + rollout}
        try:
            return read(program(prompt=prompt, config=config))
        except Exception as exc:  # one bad sample must not lose the others
            return exc

    if len(rollouts) <= 1:
        return [one(r) for r in rollouts]
    with _expectation(program, len(rollouts)):
        return [sample for sample, _ in metered_map(one, rollouts, "samples", threads=len(rollouts), show=False)]
