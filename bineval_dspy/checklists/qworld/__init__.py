"""Qworld: question-specific evaluation criteria grown by a recursive expansion tree (RET).

task -> scenarios (intent, audience, stakes, assumed knowledge) -> perspectives (evaluation axes) -> criteria
(yes/no conditions with integer weights in Qworld's bands: 1..10 for a criterion a good response meets, -1..-10
for a flaw to penalize if present; the question of a negative criterion asks whether the flaw is there, so "yes"
lowers the score, see ``core.scoring``). Each level is written by a hierarchical decomposition R_h of every node of
the level above, then up to ``w`` rounds of horizontal expansion R_w ("what is missing at this level?"): ``w1``
for scenarios, ``w2`` for perspectives (the paper's 3 and 4) and ``w3`` for criteria (0 in the paper).

Two things the paper leaves open are fixed here. Near-duplicates are merged at every level (exact text first, then
sentence-embedding cosine similarity at ``threshold``), since expansion rounds and sibling nodes repeat each other;
a round that adds nothing new ends that node's expansion early (at temperature 0 the next round would ask the same
prompt again). And every criterion keeps its scenario and perspective in ``Question.lineage``, so scores can be
reported per perspective and per scenario (``core.scoring.lineage_scores``). An answer that cannot be parsed adds
nothing and is counted, and is not retried: a node it left without children is not expanded. Criteria are never
invented.

LM calls per task (each at most, fewer when a round adds nothing or a cap is reached):
``1 + w1 + S * (1 + w2) + P * (1 + w3)``, S scenarios (<= ``max_scenarios``) and P perspectives after dedup
(<= S * ``max_perspectives``); decomposition of perspectives stops once ``max_criteria`` criteria are kept.
"""

from bineval_dspy.checklists.qworld.tree import DEFAULT_DIMENSION, QworldConfig, QworldTree
from bineval_dspy.checklists.qworld.writer import QworldWriter

__all__ = ["DEFAULT_DIMENSION", "QworldConfig", "QworldTree", "QworldWriter"]
