"""The embedded engine's own sampler: seeded, and cut by top-k, top-p and min-p as llama.cpp's defaults are."""

from __future__ import annotations

import numpy as np
from dspy.lm15 import Config

from bineval_dspy.lm._decoding import Sampler


def draws(logits: list[float], n: int = 400, seed: int = 7, **config: float) -> list[int]:
    sampler = Sampler(Config(temperature=config.pop("temperature", 1.0), seed=seed, **config))  # type: ignore[arg-type]
    return [sampler.draw(np.array(logits, dtype=np.float32)) for _ in range(n)]


def test_a_seed_gives_the_same_tokens_and_another_seed_others():
    logits = [2.0, 1.9, 1.8, 1.7, 1.6]
    assert draws(logits, seed=1) == draws(logits, seed=1)
    assert draws(logits, seed=1) != draws(logits, seed=2)


def test_top_k_top_p_and_min_p_cut_the_tail():
    logits = [3.0, 2.5, 2.0, 1.5, -np.inf]  # p = 0.46, 0.28, 0.17, 0.10; a grammar's rejected token is never drawn
    assert set(draws(logits)) == {0, 1, 2, 3}
    assert set(draws(logits, top_k=2)) == {0, 1}
    assert set(draws(logits, top_p=0.7)) == {0, 1}  # the smallest head whose mass reaches 0.7
    assert set(draws([5.0, 5.0 + np.log(0.06)], top_p=1.0)) == {0, 1}
    assert set(draws([5.0, 5.0 + np.log(0.04)], top_p=1.0)) == {0}  # min-p 0.05 drops a token at 4% of the best


def test_temperature_sharpens_toward_the_best_token():
    logits = [1.0, 0.5, 0.0]
    hot, cold = draws(logits, temperature=2.0), draws(logits, temperature=0.2)
    assert cold.count(0) > hot.count(0)
