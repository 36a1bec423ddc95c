"""Every cost counts the calls its LM cache answered and what those replies billed when made, beside the calls sent
(issue 57, item 18): a user sees what a rerun will cost, on the same cache and without it."""

from __future__ import annotations

import dspy
from dspy.lm15 import Usage

from bineval_dspy.lm import cache
from bineval_dspy.lm.usage import Cost, measuring
from bineval_dspy.testing.scripted import ScriptedEngine


def test_a_repeated_call_is_a_cache_hit_with_the_tokens_it_saved(tmp_path):
    cache.install(tmp_path / "cache")
    lm = dspy.LM("custom/scripted", engine=ScriptedEngine(lambda request: "a reply", Usage(input_tokens=100, output_tokens=10)), cache=True, num_retries=0)
    with measuring() as first:
        lm("hi")
    with measuring() as second:
        lm("hi")
        lm("something new")
    assert (first.cost.lm_calls, first.cost.cache_hits, first.cost.cache_misses, first.cost.tokens) == (1, 0, 1, 110)
    assert (second.cost.lm_calls, second.cost.cache_hits, second.cost.cache_misses) == (2, 1, 1)
    assert (second.cost.cache_hit_tokens, second.cost.tokens) == (110, 110)  # the hit billed nothing this time
    assert "cache: 1 hit(s) (110 tokens not billed again), 1 miss(es) (110 tokens billed)" in second.cost.summary()


def test_hits_add_up_and_no_call_says_nothing_of_the_cache():
    total = Cost(lm_calls=3, cache_hits=2, cache_hit_tokens=40) + Cost(lm_calls=1, cache_hits=1, cache_hit_tokens=5)
    assert (total.cache_hits, total.cache_hit_tokens, total.cache_misses) == (3, 45, 1)
    assert "cache" not in Cost().summary()
