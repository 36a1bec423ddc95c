"""One PNG heatmap of the phi matrix per dimension (matplotlib's Agg canvas: no display, no global backend)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np

from bineval_dspy.analysis.phi import LABELS, DimensionPhi, PhiReport
from bineval_dspy.core.plots import agg_figure

LABEL_CHARS = 60  # question text shown beside each row, cut to this length


def heatmap_name(dimension: str, taken: set[str]) -> str:
    """A file name for a dimension's heatmap: safe characters only, and distinct from the names already ``taken``."""
    stem = "phi-" + (re.sub(r"[^A-Za-z0-9_.-]+", "-", dimension).strip("-.") or "dimension")
    name, k = f"{stem}.png", 2
    while name in taken:
        name, k = f"{stem}-{k}.png", k + 1
    taken.add(name)
    return name


def write_heatmap(dim: DimensionPhi, statistic: str, path: Path) -> Path:
    """The matrix as a red-blue heatmap over [-1, 1]; undefined cells grey and marked "n/a"."""
    size = len(dim.questions)
    values = np.array([[np.nan if v is None else v for v in row] for row in dim.matrix], dtype=float).reshape(size, size)
    figure = agg_figure(figsize=(7.0 + 0.6 * size, 1.5 + 0.55 * size))
    axes = figure.add_subplot()
    axes.set_facecolor("#d9d9d9")  # undefined cells show the background
    image = axes.imshow(np.ma.masked_invalid(values), cmap="RdBu_r", vmin=-1.0, vmax=1.0)
    labels = [f"Q{k + 1}" for k in range(size)]
    axes.set_xticks(range(size), labels)
    axes.set_yticks(range(size), [f"Q{k + 1} {textwrap.shorten(q.text, LABEL_CHARS, placeholder='...')}" for k, q in enumerate(dim.questions)], fontsize=8)
    for i in range(size):
        for j in range(size):
            text = "n/a" if np.isnan(values[i, j]) else f"{values[i, j]:.2f}"
            axes.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if abs(np.nan_to_num(values[i, j])) > 0.6 else "black")
    axes.set_title(f"{dim.dimension}: {LABELS[statistic]} between questions")
    figure.colorbar(image, ax=axes, shrink=0.8)
    figure.savefig(path, format="png", dpi=110, bbox_inches="tight")
    return path


def write_heatmaps(report: PhiReport, folder: Path) -> list[Path]:
    """A heatmap per dimension with at least two questions (a single question has no pairs), in ``folder``."""
    taken: set[str] = set()
    return [
        write_heatmap(dim, report.statistic, folder / heatmap_name(dim.dimension, taken))
        for dim in report.dimensions
        if len(dim.questions) >= 2
    ]
