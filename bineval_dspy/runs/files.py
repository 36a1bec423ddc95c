"""What kind of run a file holds, read in one place for every reader (``report.load_run``, ``analyze``, an
experiment looking up a program's recorded figures): its header's (``OUT.run.json``). Output written before headers
says it by a results file's ``kind`` field or, older still, by its keys alone; those are read by ``legacy_kind``,
the one place a kind is guessed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import read_json_object, read_jsonl
from bineval_dspy.runs.header import header_path, read_header

NOT_A_RUN = (
    "not a run the library writes (an optimizer's audit.json, a meta-eval's scores.jsonl, analyze's phi.json, pruning.json or "
    "weights.json, tune's, experiment's or calibrate's results.json, fine-tuning's samples.jsonl, judge, demo, verify or generate output)"
)

# Old results files by the keys that tell them apart, tried in this order (an experiment's results have splits too).
LEGACY_FILES: tuple[tuple[str, frozenset[str]], ...] = tuple((kind, frozenset(keys)) for kind, keys in (
    ("optimizer-audit", {"mode", "start", "best"}),
    ("tune", {"study", "trials"}),
    ("experiment", {"arms", "baseline"}),
    ("optimizer-test", {"splits", "test"}),
    ("phi", {"statistic", "dimensions"}),
    ("pruning", {"dropped", "questions_before"}),
    ("weights", {"alpha", "folds"}),
    ("demo", {"results", "article"}),
    ("meta-eval", {"dataset", "methods", "run_dir"}),
))  # fmt: skip
# Old logs by the keys of their first row: the judge's rows keep the data's fields and put theirs under "bineval"
# (judges.rows.JUDGE_KEY, as those files wrote it), a meta-eval's scores.jsonl, `bineval verify`'s and `generate`'s rows,
# fine-tuning's samples.jsonl. Every kind in either table is one ``runs.kinds.RUN_KINDS`` registers.
LEGACY_LOGS: tuple[tuple[str, frozenset[str]], ...] = tuple((kind, frozenset(keys)) for kind, keys in (
    ("judge", {"bineval"}),
    ("meta-eval", {"method", "scores"}),
    ("verify", {"follow_instruction_list", "instruction_id_list"}),
    ("generate", {"key", "response"}),
    ("finetune-samples", {"key", "prompt", "samples"}),
))  # fmt: skip


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
    """The kind of a file written before headers and ``kind`` fields, from its keys (a log's: its first row's);
    ``raw``: the JSON object already read from ``path``."""
    if path.suffix != ".json":
        for number, row in read_jsonl(path):
            return _first_match(LEGACY_LOGS, row, f"{path}:{number}")
        raise InputError(f"{path}: no rows")
    return _first_match(LEGACY_FILES, read_json_object(path) if raw is None else raw, str(path))


def _first_match(kinds: tuple[tuple[str, frozenset[str]], ...], obj: dict[str, Any], where: str) -> str:
    for kind, keys in kinds:
        if keys <= obj.keys():
            return kind
    raise InputError(f"{where}: {NOT_A_RUN}")
