"""The run kernel: one resumable JSON Lines run file, written once for every command that resumes.

A run appends one record per finished unit (a judged row, a generated response, a method's score of an output, a
prompt's samples) and flushes it, so a kill loses at most the unit in flight. A rerun opens the file under the
run's fingerprint (``fingerprint.open_for_resume``: other settings are refused in one line), keeps the first
finished record of each key, and drops the rest (unfinished records, repeats, keys the run no longer asks for, and
the torn last line a kill leaves), rewriting the file atomically, so a record the run skips is a record ``show``
and ``report`` can read. Every line is parsed into the run's record type, so damaged output is one located line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import AFRESH, Fingerprint, open_for_resume
from bineval_dspy.core.jsonio import append_jsonl, describe_validation_error, read_jsonl, rewrite_jsonl

R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)


@dataclass
class RunLog(Generic[R]):
    """A run's JSON Lines file of records ``R``, each under a ``key``; ``finished`` says which a rerun keeps."""

    path: Path
    key: Callable[[R], str]
    parse: Callable[[int, dict[str, Any]], R]  # a line's record; a damaged one raises a located InputError
    dump: Callable[[R], dict[str, Any]]
    finished: Callable[[R], bool] = lambda record: True
    required: Sequence[str] = ()
    hint: str = AFRESH  # what a refused resume or a damaged line advises

    def read(self) -> Iterator[tuple[int, R]]:
        """(line number, record) of every line; a torn last line is skipped."""
        for number, obj in read_jsonl(self.path, self.required, torn_tail=True):
            yield number, self.parse(number, obj)

    def open(
        self, fingerprint: Fingerprint, overwrite: bool = False, wanted: Callable[[str], bool] | None = None, recorded: Fingerprint | None = None
    ) -> dict[str, R]:
        """Claim the file for this run; the finished records of earlier output by key (none for fresh output, or
        with ``overwrite``), the file repaired to hold just those. ``recorded``: the fingerprint earlier output's
        header records (None: an older output's sidecar is read)."""
        if not open_for_resume(self.path, fingerprint, overwrite, self.hint, recorded):
            return {}
        return self.repair(wanted)

    def repair(self, wanted: Callable[[str], bool] | None = None) -> dict[str, R]:
        """Keep the first finished record of each ``wanted`` key; rewrite the file when anything else was there."""
        kept: dict[str, R] = {}
        lines = 0
        for _, record in self.read():
            lines += 1
            key = self.key(record)
            if key not in kept and self.finished(record) and (wanted is None or wanted(key)):
                kept[key] = record
        if len(kept) < lines or not _ends_whole(self.path):
            rewrite_jsonl(self.path, (self.dump(record) for record in kept.values()))
        return kept

    def finished_keys(self) -> set[str]:
        """The keys a rerun would keep, read without changing the file (a dry run's view)."""
        if not self.path.exists():
            return set()
        return {self.key(record) for _, record in self.read() if self.finished(record)}

    def append(self, record: R) -> None:
        append_jsonl(self.path, self.dump(record))


def model_log(
    path: Path, model: type[M], key: Callable[[M], str], finished: Callable[[M], bool] = lambda record: True, hint: str = AFRESH
) -> RunLog[M]:
    """A run log of pydantic records: each line validated as ``model``."""

    def parse(number: int, obj: dict[str, Any]) -> M:
        try:
            return model.model_validate(obj)
        except ValidationError as exc:
            raise InputError(f"{path}:{number}: {describe_validation_error(exc)}{hint}") from None

    return RunLog(path, key, parse, lambda record: record.model_dump(mode="json"), finished, hint=hint)


def _ends_whole(path: Path) -> bool:
    """Whether a file is empty or ends with its last line's "\n" (a killed run may leave a torn line)."""
    with path.open("rb") as handle:
        if handle.seek(0, 2) == 0:
            return True
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"
