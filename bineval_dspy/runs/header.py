"""The header of every output a run writes: what kind of run wrote it, by which version, how it ended (and why, when
it failed), what it spent, and the fingerprint of the settings that made it. One file, ``OUT.run.json`` beside the
output ``OUT`` (a log's records, or a results file), written when the run opens and again when it ends, so
``load_run`` reads a file's kind instead of guessing it from its keys, and a resume compares fingerprints from one
place. ``runs.execute`` writes it for the runs executed unit by unit; every other run (an optimizer's audit and test,
an experiment, a tune study, a calibration, an analysis, ``verify``, ``demo``) writes it through ``headed``.

Output written before headers has ``OUT.fingerprint.json`` (a log's fingerprint alone); it is still read for resume,
and never written again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.core.degenerate import Degenerate
from bineval_dspy.core.errors import BudgetExhausted, one_line
from bineval_dspy.core.fingerprint import AFRESH, Fingerprint, sidecar_fingerprint
from bineval_dspy.core.jsonio import load_model, write_text_atomic
from bineval_dspy.core.repeats import RepeatSummary
from bineval_dspy.core.version import __version__
from bineval_dspy.enforce.summary import EnforcementSummary
from bineval_dspy.lm.usage import Cost

Status = Literal["running", "finished", "incomplete", "stopped", "failed"]
"""finished: every unit has a finished record; incomplete: every unit ran, but some records are not finished (a
judged row with unanswered questions); stopped: a budget, a first Ctrl-C or a unit that failed ended it; running:
it runs, or its process was killed (a second Ctrl-C leaves at once). A rerun goes on from the finished records."""


class RunHeader(BaseModel):
    """One run's header (``OUT.run.json``)."""

    model_config = ConfigDict(extra="forbid")

    kind: str  # a run kind's registered name: "judge", "generate", "meta-eval", ...
    version: str  # the library's version that last wrote the log
    status: Status = "running"
    usage: Cost = Field(default_factory=Cost)  # what the runs on this log spent, summed over resumes
    fingerprint: dict[str, str] = Field(default_factory=dict)  # the settings that made the records (core.fingerprint)
    # the records' LM verdicts fail the degenerate-judge rule (core.degenerate): kept with the log, so a reader of the
    # header alone (CI, a later `show`) sees that the scores say little, not only the terminal that ran it
    degenerate: Degenerate | None = None
    # a probe judge's head: its recorded held-out figures, and AT CHANCE when they are (``judges.standing``)
    probe_head: str | None = None
    # `judge --repeats K`: how often the LM verdicts flipped between repeats, pass^K beside the mean (core.repeats)
    repeats: RepeatSummary | None = None
    # `generate --enforce`: what steered decoding did over the log's rows and whether it enforced nothing, as the run's
    # summary line says it, so CI reading the header alone cannot take a plainly decoded run for a steered one
    enforcement: EnforcementSummary | None = None
    error: str | None = None  # a failed run: its exception, in one line


def header_path(out: Path) -> Path:
    """Where the header of the log ``out`` lives: ``OUT.run.json`` beside it."""
    return out.with_name(out.name + ".run.json")


def read_header(out: Path) -> RunHeader | None:
    """The header of the log ``out``; None for a log written before headers (or none at all)."""
    path = header_path(out)
    return load_model(path, RunHeader) if path.is_file() else None


def recorded_fingerprint(out: Path, hint: str = AFRESH) -> Fingerprint | None:
    """The fingerprint that made the output ``out``: its header's, or for output from before headers its
    ``OUT.fingerprint.json``; None when neither records one."""
    header = read_header(out)
    return header.fingerprint if header is not None and header.fingerprint else sidecar_fingerprint(out, hint)


def write_header(out: Path, header: RunHeader) -> None:
    unset = {name for name in (*NOTES, "error") if getattr(header, name) is None}  # a header without them reads as before they existed
    write_text_atomic(header_path(out), header.model_dump_json(indent=2, exclude=unset))


NOTES = ("degenerate", "probe_head", "repeats", "enforcement")  # what a run notes about its records (``note``)


def note(out: Path, **notes: Any) -> None:
    """Record in the header of the log ``out`` what its records add up to, as the whole log now reads (the
    ``NOTES`` fields; None clears one: a resume that makes verdicts informative clears ``degenerate``)."""
    unknown = set(notes) - set(NOTES)
    if unknown:
        raise ValueError(f"not a header note: {', '.join(sorted(unknown))}")
    header = read_header(out)
    if header is not None and any(getattr(header, k) != v for k, v in notes.items()):
        write_header(out, header.model_copy(update=notes))


@dataclass
class Heading:
    """What a run not executed unit by unit tells its header as it goes: how it ended (``finished`` unless it says
    otherwise), what it spent, the settings that made it."""

    status: Status = "finished"
    usage: Cost = field(default_factory=Cost)
    fingerprint: Fingerprint = field(default_factory=dict)


@contextmanager
def headed(out: Path, kind: str, fingerprint: Fingerprint | None = None) -> Iterator[Heading]:
    """Write the header of ``out`` around a run of ``kind`` that writes it whole: ``running`` before, then the
    status the run set (``finished`` by default), ``stopped`` on a budget or a Ctrl-C, or ``failed`` with the
    exception's one line, which is raised on."""
    heading = Heading(fingerprint=dict(fingerprint or {}))
    out.parent.mkdir(parents=True, exist_ok=True)  # a run directory the run has not made yet
    write_header(out, RunHeader(kind=kind, version=__version__, fingerprint=heading.fingerprint))
    status: Status = "failed"
    error: str | None = None
    try:
        yield heading
        status = heading.status
    except (BudgetExhausted, KeyboardInterrupt):
        status = "stopped"
        raise
    except Exception as exc:
        error = one_line(exc)
        raise
    finally:
        write_header(out, RunHeader(kind=kind, version=__version__, status=status, usage=heading.usage, fingerprint=heading.fingerprint, error=error))
