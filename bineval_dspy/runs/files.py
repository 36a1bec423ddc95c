"""What kind of run a file holds, read in one place for every reader (``report.load_run``, ``analyze``, an
experiment looking up a program's recorded figures): its header's (``OUT.run.json``). Output written before headers
says it by a results file's ``kind`` field or, older still, by its keys alone; those are read by ``legacy_kind``,
the one place a kind is guessed, from the key sets each kind's ``RUN_KINDS`` entry registers beside its writer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import read_json_object, read_jsonl
from bineval_dspy.runs.header import header_path, read_header
from bineval_dspy.runs.kinds import RUN_KINDS

NOT_A_RUN = (
    "not a run the library writes (an optimizer's audit.json, a meta-eval's scores.jsonl, analyze's phi.json, pruning.json or "
    "weights.json, tune's, experiment's or calibrate's results.json, fine-tuning's samples.jsonl, judge, demo, verify or generate output)"
)


def run_kind(path: Path) -> str:
    """The kind of run ``path`` holds: its header's (``OUT.run.json``, beside every output written since headers);
    a results file written before its header, its ``kind`` field; anything older, the kind its keys say
    (``legacy_kind``)."""
    header = read_header(path)
    if header is not None:
        return header.kind
    if path.suffix == ".json":
        raw = read_json_object(path)
        kind = raw.get("kind")
        return kind if isinstance(kind, str) else legacy_kind(path, raw)
    return legacy_kind(path)


def headed_log(path: Path) -> Path | None:
    """The log ``path`` is the header of (``OUT.run.json`` heads ``OUT``); None for any other file."""
    log = path.with_name(path.name.removesuffix(".run.json"))
    return log if log != path and header_path(log) == path else None


def legacy_kind(path: Path, raw: dict[str, Any] | None = None) -> str:
    """The kind of a file written before headers and ``kind`` fields, from its keys (a log's: its first row's), as the
    kinds' entries register them (``RunKind.legacy``); ``raw``: the JSON object already read from ``path``. Only
    ``run_kind`` calls it, and only when ``path`` has no header."""
    if path.suffix != ".json":
        for number, row in read_jsonl(path):
            return _matching(row, f"{path}:{number}")
        raise InputError(f"{path}: no rows")
    return _matching(read_json_object(path) if raw is None else raw, str(path))


def _matching(obj: dict[str, Any], where: str) -> str:
    """The kind whose old files' keys ``obj`` holds: a kind whose rows keep the rows it read (``legacy_first``, a
    judge's) before any other, then the one matching the most keys (a verify row holds a generate row's keys too);
    two kinds matching alike are refused rather than one guessed."""
    matches = sorted(
        {(entry.legacy_first, len(keys), name) for name, entry in RUN_KINDS.items() for keys in entry.legacy if keys <= obj.keys()}, reverse=True
    )
    if not matches:
        raise InputError(f"{where}: {NOT_A_RUN}")
    if len(matches) > 1 and matches[0][:2] == matches[1][:2] and matches[0][2] != matches[1][2]:
        raise InputError(f"{where}: written before headers, and its keys are those of both a {matches[0][2]!r} and a {matches[1][2]!r} run")
    return matches[0][2]
