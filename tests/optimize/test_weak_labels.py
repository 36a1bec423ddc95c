"""Weak labels from people's scores per dimension: yes from the dimension's median up, each row carrying its
dimension so the head can place a threshold of its own per dimension."""

from __future__ import annotations

from bineval_dspy.meta.datasets import MetaRow
from bineval_dspy.optimize.calibrate import weak_examples


def test_each_dimension_has_its_own_median_and_rows_carry_their_dimension():
    rows = [
        MetaRow(id=f"s{k}", doc_id=f"d{k // 2}", system_id="m", input="article", output=f"summary {k}", scores={"coherence": k, "fluency": 5 - k})
        for k in range(4)
    ]
    examples = weak_examples(rows, {"coherence": "Is it coherent?", "fluency": "Is it fluent?"})
    assert [(e.dimension, e.reference) for e in examples] == [
        ("coherence", "no"), ("fluency", "yes"), ("coherence", "no"), ("fluency", "yes"),
        ("coherence", "yes"), ("fluency", "no"), ("coherence", "yes"), ("fluency", "no"),
    ]  # fmt: skip
    assert {e.group for e in examples[:4]} == {"d0"} and {e.question for e in examples if e.dimension == "fluency"} == {"Is it fluent?"}
