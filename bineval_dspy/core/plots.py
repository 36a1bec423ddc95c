"""Figures drawn on matplotlib's Agg canvas (no display, no pyplot state), with matplotlib's own font cache kept
under the library's cache directory instead of ``~/.cache/matplotlib`` and ``~/.config/matplotlib``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def agg_figure(**options: Any) -> Figure:
    """A new Figure (``options`` as ``Figure`` takes them) attached to an Agg canvas; ``$MPLCONFIGDIR`` wins."""
    from bineval_dspy.core.cache_dir import default_cache_dir

    os.environ.setdefault("MPLCONFIGDIR", str(default_cache_dir() / "matplotlib"))  # read at matplotlib's import
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(**options)
    FigureCanvasAgg(figure)
    return figure
