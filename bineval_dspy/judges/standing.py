"""Whether a probe head beats chance, by its recorded held-out figures: the one rule ``bineval calibrate`` prints and
every command that loads a head repeats.

A head can be no better than chance and still look busy: its answers are split between yes and no (so the
degenerate-judge rule stays quiet) while its kappa interval straddles zero, or it agrees with the references less
often than always giving their majority answer does (on labels 82% "yes", a constant "yes" agrees 0.82). Either is
said in one line wherever the head is trained or loaded, never left for the user to notice.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.judges.probe import Probe
from bineval_dspy.stats.bootstrap import Interval

RESULTS_FILE = "results.json"  # beside a calibrated program: ``bineval calibrate``'s record, the test figures in it


class Majority(BaseModel):
    """The baseline a judge must beat: always giving the references' commoner answer."""

    answer: Literal["yes", "no"]
    agreement: float

    @classmethod
    def of(cls, references: list[str]) -> Majority | None:
        """The majority answer of ``references`` and its agreement with them (None for no references)."""
        if not references:
            return None
        yes = sum(r == "yes" for r in references) / len(references)
        return cls(answer="yes", agreement=yes) if yes >= 0.5 else cls(answer="no", agreement=1.0 - yes)


def chance_reasons(kappa: Interval | None, agreement: float | None, majority: Majority | None) -> list[str]:
    """Why a head's figures are at chance (empty when they are not): its kappa interval does not exclude 0 (or,
    with no interval, its kappa is not above 0), or its agreement does not beat the majority answer's."""
    reasons = []
    if kappa is None or kappa.estimate is None:
        reasons.append("its kappa is undefined")
    elif kappa.low is not None and kappa.high is not None:
        if kappa.low <= 0:
            reasons.append(f"its kappa interval {kappa.text()} does not exclude 0")
    elif kappa.estimate <= 0:
        reasons.append(f"its kappa {kappa.estimate:.3f} is not above 0")
    if agreement is not None and majority is not None and agreement <= majority.agreement:
        reasons.append(f"its agreement {agreement:.3f} does not beat always answering {majority.answer!r} ({majority.agreement:.3f})")
    return reasons


class Standing(BaseModel):
    """A head's held-out figures as recorded where it was trained, and whether they are at chance."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["test", "out-of-fold"]  # calibrate's test split, or (no test recorded) the training rows' folds
    rows: int
    kappa: Interval | None = None
    auroc: float | None = None
    balanced_accuracy: float | None = None
    agreement: float | None = None
    majority: Majority | None = None
    at_chance: list[str] = Field(default_factory=list)  # the reasons; empty when the head beats chance

    def line(self) -> str:
        """The figures in one line and, at chance, the warning."""
        def number(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.3f}"

        baseline = f" (always {self.majority.answer!r}: {self.majority.agreement:.3f})" if self.majority is not None else ""
        figures = (
            f"probe head, {self.source} ({self.rows} rows): kappa {self.kappa.text() if self.kappa else 'n/a'}, AUROC {number(self.auroc)}, "
            f"balanced accuracy {number(self.balanced_accuracy)}, agreement {number(self.agreement)}{baseline}"
        )
        if not self.at_chance:
            return figures
        return f"{figures}; AT CHANCE: {'; '.join(self.at_chance)}: its verdicts say little (more labels: see `bineval calibrate`'s learning curve)"


class _Recorded(BaseModel):
    """What ``standing_of`` reads of ``results.json`` (the rest is calibrate's): a ``probe`` digest matching the head's
    is what tells calibrate's results (the header beside them says so too, a layer above)."""

    probe: str
    test_rows: int = 0
    test: dict[str, Interval] = Field(default_factory=dict)
    test_majority: Majority | None = None


def standing_of(folder: Path, probe: Probe) -> Standing:
    """The head's standing: the test figures ``bineval calibrate`` recorded beside its program (when they are this
    head's: the digest matches), else its out-of-fold figures on the training rows."""
    path = folder / RESULTS_FILE
    if path.is_file():
        try:
            recorded = _Recorded.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError:
            recorded = None
        if recorded is not None and recorded.probe == probe.digest() and recorded.test:
            return standing(
                "test", recorded.test_rows, recorded.test.get("kappa"), recorded.test.get("auroc"), recorded.test.get("balanced_accuracy"),
                recorded.test.get("agreement"), recorded.test_majority,
            )
    return out_of_fold(probe)


def out_of_fold(probe: Probe) -> Standing:
    """The head's standing by its training record: the chosen candidate's out-of-fold figures (no interval)."""
    record = probe.record
    share = record.yes_share
    majority = Majority(answer="yes", agreement=share) if share >= 0.5 else Majority(answer="no", agreement=1.0 - share)
    figures = record.validation
    kappa = figures.get("kappa")
    return standing(
        "out-of-fold", record.rows, Interval(estimate=kappa) if kappa is not None else None, figures.get("auroc"),
        figures.get("balanced_accuracy"), figures.get("agreement"), majority,
    )


def standing(
    source: Literal["test", "out-of-fold"], rows: int, kappa: Interval | None, auroc: Interval | float | None,
    balanced_accuracy: Interval | float | None, agreement: Interval | float | None, majority: Majority | None,
) -> Standing:
    """A ``Standing`` from figures given as intervals or points."""
    def point(value: Interval | float | None) -> float | None:
        return value.estimate if isinstance(value, Interval) else value

    return Standing(
        source=source, rows=rows, kappa=kappa, auroc=point(auroc), balanced_accuracy=point(balanced_accuracy), agreement=point(agreement),
        majority=majority, at_chance=chance_reasons(kappa, point(agreement), majority),
    )


def announce(folder: Path, probe: Probe) -> Standing:
    """The head's standing, its line printed once a process per head (on the console; yellow when at chance)."""
    found = standing_of(folder, probe)
    _print_once(found.line(), bool(found.at_chance))
    return found


@functools.cache
def _print_once(line: str, warn: bool) -> None:
    logging.getLogger(__name__).log(logging.WARNING if warn else logging.INFO, line)
