"""The header of a run's log: what kind of run wrote the records beside it, by which version, how it ended, what it
spent, and the fingerprint of the settings that made it. One file, ``OUT.run.json`` beside the records ``OUT``,
written when the run opens and again when it stops, so ``load_run`` reads a log's kind instead of guessing it from
its keys, and a resume compares fingerprints from one place.

Logs written before headers have ``OUT.fingerprint.json`` (the fingerprint alone); it is still read for resume.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bineval_dspy.core.degenerate import Degenerate
from bineval_dspy.core.jsonio import load_model, write_text_atomic
from bineval_dspy.core.repeats import RepeatSummary
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


def header_path(out: Path) -> Path:
    """Where the header of the log ``out`` lives: ``OUT.run.json`` beside it."""
    return out.with_name(out.name + ".run.json")


def read_header(out: Path) -> RunHeader | None:
    """The header of the log ``out``; None for a log written before headers (or none at all)."""
    path = header_path(out)
    return load_model(path, RunHeader) if path.is_file() else None


def write_header(out: Path, header: RunHeader) -> None:
    unset = {name for name in NOTES if getattr(header, name) is None}  # a header without them reads as before they existed
    write_text_atomic(header_path(out), header.model_dump_json(indent=2, exclude=unset or None))


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
