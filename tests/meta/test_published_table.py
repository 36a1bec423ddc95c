"""The correlation code against published tables: SummEval's ROUGE rows (UniEval's evaluation, reprinted as Table 1
of G-Eval, Liu et al. 2023) and QAGS's (UniEval's table), from the ROUGE scores of the shared data stored in
``data/`` (numbers only).

SummEval's published values were on 100 articles; the shared data holds 80 of them, so a row can differ by sampling alone
(about 0.01 for these correlations): the target is 0.02 per cell, the issue's. Every SummEval value here (30) and
QAGS's ROUGE-2 and ROUGE-L rows (12) were checked against the text of G-Eval's EMNLP 2023 version (Table 1 and Table 3,
Proceedings pages 2514 and 2516): they agree digit for digit. QAGS's ROUGE-1 row is not in G-Eval's Table 3 (it is
UniEval's own table) and was not found: those 6 values are unconfirmed (experiments/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy.meta.correlation import correlate
from bineval_dspy.meta.datasets import load_summeval
from bineval_dspy.meta.methods import RougeMethod, build_scorer

DATA = Path(__file__).parent / "data" / "summeval_rouge_scores.json"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "summeval"
DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")
METHODS = ("rouge-1", "rouge-2", "rouge-l")
# summary-level (Spearman, Kendall) per dimension, then the average, as published
PUBLISHED = {
    "rouge-1": [(0.167, 0.126), (0.160, 0.130), (0.115, 0.094), (0.326, 0.252), (0.192, 0.150)],
    "rouge-2": [(0.184, 0.139), (0.187, 0.155), (0.159, 0.128), (0.290, 0.219), (0.205, 0.161)],
    "rouge-l": [(0.128, 0.099), (0.115, 0.092), (0.105, 0.084), (0.311, 0.237), (0.165, 0.128)],
}
# what the harness gives on the 80 shared articles (`bineval meta-eval experiments/meta/summeval_rouge.toml`)
OURS = {
    "rouge-1": [(0.173, 0.130), (0.156, 0.126), (0.119, 0.096), (0.329, 0.254), (0.195, 0.152)],
    "rouge-2": [(0.176, 0.133), (0.190, 0.157), (0.171, 0.138), (0.283, 0.214), (0.205, 0.161)],
    "rouge-l": [(0.125, 0.096), (0.107, 0.084), (0.120, 0.098), (0.310, 0.238), (0.166, 0.129)],
}
SETTINGS = {"rouge-1": "rouge1", "rouge-2": "rouge2", "rouge-l": "rougeLsum"}


def stored() -> tuple[list[str], list[list]]:
    data = json.loads(DATA.read_text())
    return data["documents"], data["rows"]


def summary_level(method: str) -> list[tuple[float, float]]:
    """Summary-level (Spearman, Kendall) per dimension and their average, from the stored scores."""
    documents, rows = stored()
    column = 6 + METHODS.index(method)
    docs, metric = [documents[r[0]] for r in rows], [r[column] for r in rows]
    cells = []
    for k, _ in enumerate(DIMENSIONS):
        result = correlate([r[2 + k] for r in rows], metric, docs, resamples=0)
        assert result.summary.spearman.value is not None and result.summary.kendall.value is not None
        cells.append((result.summary.spearman.value, result.summary.kendall.value))
    cells.append((sum(c[0] for c in cells) / 4, sum(c[1] for c in cells) / 4))
    return cells


@pytest.mark.parametrize("method", METHODS)
def test_the_published_rouge_rows_are_reproduced_within_0_02(method):
    ours = summary_level(method)
    for got, published, recorded in zip(ours, PUBLISHED[method], OURS[method]):
        assert got == pytest.approx(recorded, abs=5e-4)
        assert got == pytest.approx(published, abs=0.02)


@pytest.mark.skipif(not (SHARED / "summaries.jsonl").is_file(), reason="the shared SummEval data is not on this machine")
@pytest.mark.parametrize("method", METHODS)
def test_the_rouge_method_gives_the_stored_scores_on_two_fixed_articles(method):
    documents, rows = stored()
    wanted = set(documents[:2])
    expected = {(documents[r[0]], r[1]): r[6 + METHODS.index(method)] for r in rows if documents[r[0]] in wanted}
    options = RougeMethod(name=method, kind="rouge", rouge=SETTINGS[method], aggregate="mean")  # type: ignore[arg-type]
    scorer = build_scorer(options, ["relevance"], "summary")
    got = {
        (row.doc_id, row.system_id): scorer(row).scores["relevance"]
        for row in load_summeval(SHARED / "summaries.jsonl", SHARED / "articles.jsonl")
        if row.doc_id in wanted
    }
    assert len(got) == len(expected) == 32
    assert got == pytest.approx(expected, abs=1e-6)


# QAGS, dataset level (Spearman, Kendall, Pearson): ROUGE-2 and ROUGE-L as G-Eval's Table 3 prints them (its columns
# are r, rho, tau), ROUGE-1 from UniEval's table as recalled (not confirmed); and the harness's values
QAGS = Path(__file__).parent / "data" / "qags_rouge_scores.json"
QAGS_PUBLISHED = {
    "cnndm": {"rouge-1": (0.318, 0.248, 0.338), "rouge-2": (0.418, 0.333, 0.459), "rouge-l": (0.324, 0.254, 0.357)},
    "xsum": {"rouge-1": (-0.049, -0.040, -0.008), "rouge-2": (0.083, 0.068, 0.097), "rouge-l": (-0.011, -0.009, 0.024)},
}
QAGS_OURS = {
    "cnndm": {"rouge-1": (0.317, 0.247, 0.337), "rouge-2": (0.418, 0.333, 0.459), "rouge-l": (0.323, 0.253, 0.356)},
    "xsum": {"rouge-1": (-0.054, -0.044, -0.012), "rouge-2": (0.081, 0.066, 0.096), "rouge-l": (-0.024, -0.020, 0.014)},
}


@pytest.mark.parametrize("split", ["cnndm", "xsum"])
@pytest.mark.parametrize("method", METHODS)
def test_the_published_qags_rouge_rows_are_reproduced_within_0_02(split, method):
    rows = json.loads(QAGS.read_text())[split]
    column = 1 + METHODS.index(method)
    result = correlate([r[0] for r in rows], [r[column] for r in rows], [str(k) for k in range(len(rows))], resamples=0)
    got = (result.dataset.spearman.value, result.dataset.kendall.value, result.dataset.pearson.value)
    assert got == pytest.approx(QAGS_OURS[split][method], abs=5e-4)
    assert got == pytest.approx(QAGS_PUBLISHED[split][method], abs=0.02)
