"""``OUT.batch.json``: the batches a run submitted, kept before anything waits for them, so an interrupted run
collects the batch it paid for instead of submitting another."""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import Fingerprint, resume_check, still_valid
from bineval_dspy.core.jsonio import describe_validation_error, read_text, write_text_atomic

logger = logging.getLogger(__name__)


class SubmittedBatch(BaseModel):
    """One batch a run submitted: ``collected`` once its results were read and its verdicts written."""

    id: str
    number: int  # its input file is OUT.batch-NUMBER.jsonl until it is collected
    input_file_id: str
    keys: list[str]  # the custom_id of each request in it
    status: str
    collected: bool = False


class BatchState(BaseModel):
    """``OUT.batch.json``: the batches submitted for the run on ``OUT``, and the settings they were made for."""

    model_config = ConfigDict(extra="forbid")

    fingerprint: Fingerprint
    batches: list[SubmittedBatch] = []


def state_path(out: Path) -> Path:
    """Where the batch state of output ``out`` lives: ``OUT.batch.json`` beside it."""
    return out.with_name(out.name + ".batch.json")


LEAVE_PENDING = "; rerun with those settings to collect it, or use `overwrite` to leave it and submit anew"


def load_state(path: Path, fingerprint: Fingerprint, overwrite: bool) -> BatchState:
    """The run's batch state: earlier batches made for these settings, else a fresh one. A batch still pending
    for other settings is refused in one line (collect it with those, or ``--overwrite`` to leave it); collected
    ones made for other settings are asked again."""
    if not path.exists():
        return BatchState(fingerprint=fingerprint)
    try:
        state = BatchState.model_validate_json(read_text(path))
    except ValidationError as exc:
        raise InputError(f"{path}: not a batch state ({describe_validation_error(exc)}); delete it to submit anew") from None
    pending = [b for b in state.batches if not b.collected]
    if overwrite:
        for batch in pending:
            logger.warning(f"`overwrite`: batch {batch.id} is left at the provider, not collected (nor cancelled)")
        return BatchState(fingerprint=fingerprint)
    if pending:  # paid for, and answered only under the settings it was made for
        resume_check(state.fingerprint, fingerprint, f"{path}: batch {pending[0].id}", LEAVE_PENDING)
        return state
    return state if still_valid(state.fingerprint, fingerprint, str(path)) else BatchState(fingerprint=fingerprint)


def save_state(path: Path, state: BatchState) -> None:
    write_text_atomic(path, state.model_dump_json(indent=2))


def input_file(out: Path, number: int) -> Path:
    """Where the input file of a run's batch ``number`` is written: beside the output, until the batch is collected."""
    return out.with_name(f"{out.name}.batch-{number}.jsonl")
