"""Phi between questions: hand-computed values, numpy/scipy agreement, pairwise exclusion, constants, CSV, PNGs."""

from __future__ import annotations

import csv
import io
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import pearsonr

from bineval_dspy.analysis.heatmap import heatmap_name, write_heatmaps
from bineval_dspy.analysis.phi import phi, phi_csv, phi_report
from tests.analysis.builders import make_checklist, make_set

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def vector(*values: float | None) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def test_phi_matches_the_two_by_two_table_by_hand():
    # n11 = 2 (outputs 0, 4), n10 = 1 (1), n01 = 1 (5), n00 = 2 (2, 3): phi = (2*2 - 1*1) / sqrt(3*3*3*3) = 1/3
    value, pairs = phi(vector(1, 1, 0, 0, 1, 0), vector(1, 0, 0, 0, 1, 1))
    assert pairs == 6
    assert value == pytest.approx(1 / 3)


def test_phi_of_identical_and_of_opposite_answers():
    assert phi(vector(1, 0, 1, 0), vector(1, 0, 1, 0))[0] == pytest.approx(1.0)
    assert phi(vector(1, 0, 1, 0), vector(0, 1, 0, 1))[0] == pytest.approx(-1.0)


def test_phi_agrees_with_numpy_and_scipy_on_fixed_binary_data():
    rng = np.random.default_rng(7)
    table = (rng.random((40, 5)) < [0.2, 0.5, 0.7, 0.5, 0.9]).astype(float)
    for i in range(5):
        for j in range(i + 1, 5):
            value, pairs = phi(table[:, i], table[:, j])
            assert pairs == 40
            assert value == pytest.approx(np.corrcoef(table[:, i], table[:, j])[0, 1])
            assert value == pytest.approx(pearsonr(table[:, i], table[:, j]).statistic)
            n11 = np.sum((table[:, i] == 1) & (table[:, j] == 1))
            n00 = np.sum((table[:, i] == 0) & (table[:, j] == 0))
            n10 = np.sum((table[:, i] == 1) & (table[:, j] == 0))
            n01 = np.sum((table[:, i] == 0) & (table[:, j] == 1))
            by_table = (n11 * n00 - n10 * n01) / math.sqrt((n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00))
            assert value == pytest.approx(by_table)


def test_unanswered_verdicts_are_left_out_of_that_pair_only():
    x = vector(1, 1, 0, 0, 1, None, 0)
    y = vector(1, 0, 0, 0, 1, 1, None)
    value, pairs = phi(x, y)
    assert pairs == 5  # the outputs where either is unanswered drop out
    assert value == pytest.approx(phi(vector(1, 1, 0, 0, 1), vector(1, 0, 0, 0, 1))[0])


def test_a_constant_question_has_no_phi_never_zero():
    assert phi(vector(1, 1, 1, 1), vector(1, 0, 1, 0)) == (None, 4)
    assert phi(vector(1, 0, None, None), vector(None, 1, 1, 0)) == (None, 1)  # fewer than two pairs
    # constant only where both are answered
    assert phi(vector(1, 1, 0), vector(1, 0, None))[0] is None


def test_the_report_per_dimension_with_a_constant_column_and_pairwise_exclusion():
    checklist = make_checklist({"consistency": 3, "fluency": 1})
    judged = make_set(
        checklist,
        {
            "consistency-1": [1, 1, 0, 0, 1, 0],
            "consistency-2": [1, 0, 0, 0, 1, None],
            "consistency-3": [1, 1, 1, 1, 1, 1],  # constant
            "fluency-1": [1, 0, 1, 0, 1, 0],
        },
    )
    report = phi_report(judged)
    assert report.statistic == "phi" and report.outputs == 6
    consistency, fluency = report.dimensions
    assert [q.id for q in consistency.questions] == ["consistency-1", "consistency-2", "consistency-3"]
    # pair 1-2 over the first five outputs: n11 = 2, n10 = 1, n01 = 0, n00 = 2: (4 - 0) / sqrt(3 * 2 * 2 * 3) = 2/3
    assert consistency.matrix[0][1] == consistency.matrix[1][0] == pytest.approx(2 / 3)
    assert consistency.matrix[0][0] == 1.0
    assert consistency.matrix[2] == [None, None, None] and [row[2] for row in consistency.matrix] == [None, None, None]
    stats = {q.id: q for q in consistency.questions}
    assert stats["consistency-3"].constant and stats["consistency-3"].variance == 0.0
    assert stats["consistency-2"].answered == 5 and stats["consistency-2"].mean == pytest.approx(2 / 5)
    pairs = {(p.a, p.b): p for p in consistency.pairs}
    assert pairs["consistency-1", "consistency-2"].pairs == 5 and pairs["consistency-1", "consistency-3"].pairs == 6
    assert pairs["consistency-2", "consistency-3"].phi is None
    assert consistency.mean_abs_phi == pytest.approx(2 / 3)  # over the defined pairs only
    assert fluency.pairs == [] and fluency.mean_abs_phi is None
    assert "mean_abs_phi" in report.model_dump()["dimensions"][0]


def test_p_yes_values_correlate_the_probabilities_and_code_verdicts_count_as_one_or_zero():
    checklist = make_checklist({"fluency": 2}, code=["fluency-2"])
    p = [0.9, 0.8, 0.6, 0.7]
    judged = make_set(checklist, {"fluency-1": [1, 1, 1, 1], "fluency-2": [1, 1, 0, 0]}, p_yes={"fluency-1": p})
    assert phi_report(judged).dimensions[0].matrix[0][1] is None  # the hard answers of question 1 are constant
    report = phi_report(judged, "p_yes")
    assert report.statistic == "pearson"
    assert report.dimensions[0].matrix[0][1] == pytest.approx(np.corrcoef(p, [1, 1, 0, 0])[0, 1])


def test_phi_csv_has_one_row_per_pair_and_an_empty_cell_when_undefined():
    checklist = make_checklist({"coherence": 3})
    judged = make_set(checklist, {"coherence-1": [1, 0, 1, 0], "coherence-2": [1, 0, 1, 1], "coherence-3": [1, 1, 1, 1]})
    rows = list(csv.DictReader(io.StringIO(phi_csv(phi_report(judged)))))
    assert [(r["question_a"], r["question_b"]) for r in rows] == [("coherence-1", "coherence-2"), ("coherence-1", "coherence-3"), ("coherence-2", "coherence-3")]
    assert float(rows[0]["phi"]) == pytest.approx(1 / math.sqrt(3))  # n11=2 n10=0 n01=1 n00=1: 2/sqrt(2*2*3*1)
    assert rows[1]["phi"] == "" and rows[1]["pairs"] == "4"
    assert rows[0]["text_a"] == "Question 1 about coherence?"


def test_heatmaps_are_valid_pngs_one_per_dimension_with_pairs(tmp_path):
    from matplotlib.image import imread

    checklist = make_checklist({"rel/evance": 3, "fluency": 1})
    judged = make_set(checklist, {"rel/evance-1": [1, 0, 1, 0], "rel/evance-2": [1, 0, 0, 0], "rel/evance-3": [1, 1, 1, 1], "fluency-1": [1, 0, 1, 1]})
    paths = write_heatmaps(phi_report(judged), tmp_path)
    assert [p.name for p in paths] == ["phi-rel-evance.png"]  # the one-question dimension has no pairs to draw
    assert paths[0].read_bytes()[:8] == PNG_SIGNATURE
    image = imread(paths[0])
    assert image.ndim == 3 and image.shape[0] > 50 and image.shape[1] > 50


def test_heatmap_names_are_safe_and_distinct():
    taken: set[str] = set()
    assert heatmap_name("a b", taken) == "phi-a-b.png"
    assert heatmap_name("a/b", taken) == "phi-a-b-2.png"
    assert heatmap_name("../..", taken) == "phi-dimension.png"


def test_drawing_a_figure_keeps_matplotlibs_cache_under_the_librarys_cache_dir(tmp_path):
    """matplotlib writes its font cache at first import; a user's $HOME gets none of it, the cache dir holds it."""
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")}
    env.update(HOME=str(home), BINEVAL_CACHE_DIR=str(cache))
    code = "from bineval_dspy.core.plots import agg_figure; agg_figure().savefig(__import__('sys').argv[1])"
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "f.png")], env=env, check=True, timeout=120)
    assert (tmp_path / "f.png").read_bytes()[:8] == PNG_SIGNATURE
    assert list(home.iterdir()) == [] and any((cache / "matplotlib").iterdir())
