"""``bineval calibrate``'s steps around the fit: what it is doing while it works (the model's load, the states read,
the candidate search), whether the head beats chance, and the learning curve.

Calibrating spends most of its minutes loading the model, reading states and searching layer x strength x fold;
each phase says so on the console, with its counts, instead of leaving the terminal silent.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from bineval_dspy.core.console import console, progress_bar
from bineval_dspy.judges.probe import LabeledExample, Probe, default_layers, read_examples
from bineval_dspy.judges.standing import Majority, Standing, out_of_fold, standing
from bineval_dspy.lm.hidden import HiddenStates
from bineval_dspy.optimize.learning_curve import CurveSettings, Fit, LearningCurve, fits_needed, learning_curve
from bineval_dspy.stats.bootstrap import Interval

logger = logging.getLogger(__name__)  # shown by the CLI although its package's INFO is not (``core.console.SHOWN_INFO``)


def loading(reader: HiddenStates) -> int:
    """Load the judge model for its states (a spinner while it loads: the first minute of a run); its depth."""
    with console.status(f"loading {reader.model} for its hidden states (float32 weights, once a process)"):
        return reader.depth()


@contextmanager
def searching(reader: HiddenStates, examples: Sequence[LabeledExample], layers: Sequence[int] | None, strengths: int, folds: int) -> Iterator[None]:
    """Around ``fit_probe``: the rows it reads with their counts, a spinner over the candidate search, and how many
    states were computed rather than read from the cache."""
    depth = loading(reader)
    outputs = len({(e.input, e.output) for e in examples})
    logger.info(f"reading states: {len(examples)} training rows, {outputs} outputs of {len({e.group for e in examples})} task(s) (cached states are read, not computed)")
    before = reader.computed
    count = len(layers) if layers else len(default_layers(depth))
    fits = count * strengths * folds
    with console.status(f"training the head: its rows' states, then {count} layers x {strengths} strengths x {folds} folds ({fits} fits) on {len(examples)} rows"):
        yield
    logger.info(f"  {reader.computed - before} state(s) computed, the rest read from the cache; head chosen among {count * strengths} candidates")


def predict(probe: Probe, reader: HiddenStates, examples: Sequence[LabeledExample], label: str | None = None) -> tuple[np.ndarray, list[str]]:
    """The head's P(yes) and answer for each example (``label``: a progress bar over the outputs read)."""
    p = probe.head.p_yes(read_examples(reader, probe.instructions, examples, label))
    return p, ["yes" if v >= probe.head.threshold_for(e.dimension) else "no" for v, e in zip(p, examples)]


def standing_on(test: dict[str, Interval], rows: int, majority: Majority | None, probe: Probe) -> Standing:
    """The head's standing as ``judge --program`` will repeat it: on the test split when there is one, else out of fold."""
    if not test:
        return out_of_fold(probe)
    return standing("test", rows, test.get("kappa"), test.get("auroc"), test.get("balanced_accuracy"), test.get("agreement"), majority)


def curve_of(
    curve: CurveSettings, fit: Fit, examples: Sequence[LabeledExample], test: Sequence[LabeledExample], probe: Probe, reader: HiddenStates, seed: int,
) -> LearningCurve | None:
    """The learning curve over ``curve``'s sizes (None when it has none), each head trained by ``fit`` as the run's own."""
    if not curve.sizes:
        logger.info("learning curve: off (curve.sizes is empty)")
        return None
    total = fits_needed(examples, test, curve, seed, full=True)
    with progress_bar("  learning curve: heads trained", total) as advance:
        return learning_curve(examples, test, fit, curve, seed=seed, full=lambda held: predict(probe, reader, held), advance=advance)
