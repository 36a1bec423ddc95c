"""Fingerprinted resume: what decided a run's results is recorded beside its output (in its header, ``runs.header``;
older output in ``OUT.fingerprint.json``), and checked on resume.

A resumed run appends to output made earlier; that is only sound when the same data, checklist, judge, LM and
options made it. The comparison is made here, once, in two forms: ``resume_check`` for output a run goes on
writing (a run log through ``open_for_resume``, an optimizer's audit, a study), which refuses other settings naming
the first difference, and ``still_valid`` for a result that may be made again (an experiment arm's program, a tune
trial's result), which says in one line that it is redone.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from bineval_dspy.core import outputs
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import read_text, rewrite_jsonl

logger = logging.getLogger(__name__)

Fingerprint = dict[str, str]


def digest(data: str | bytes) -> str:
    """sha256 of text or bytes, first 16 hex digits: enough to tell two inputs apart."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()[:16]


def file_digest(path: Path) -> str:
    """The digest of a file's bytes (an input file's identity, whatever its name)."""
    try:
        return digest(path.read_bytes())
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def sha256_of(path: Path) -> str:
    """A file's whole sha256, streamed (a model or data file may be large), read now: an adapter may be rewritten by
    a resumed training run."""
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def sidecar(out: Path) -> Path:
    """Where the fingerprint of ``out`` lives: ``OUT.fingerprint.json`` beside it."""
    return out.with_name(out.name + ".fingerprint.json")


_ABSENT = object()


def _parsed(value: object) -> object:
    """A fingerprint value that is a JSON object (a judge spec, an LM identity) as that object, else itself."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _shown(value: object) -> str:
    return "(none)" if value is _ABSENT else json.dumps(value) if not isinstance(value, str) else repr(value)


def _inner_difference(path: str, old: object, new: object) -> str | None:
    """'path: old -> new' for the first leaf that differs, descending into JSON objects on both sides."""
    old, new = _parsed(old), _parsed(new)
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            found = _inner_difference(f"{path}.{key}", old.get(key, _ABSENT), new.get(key, _ABSENT))
            if found:
                return found
        return None
    return None if old == new else f"{path}: {_shown(old)} -> {_shown(new)}"


def first_difference(recorded: Fingerprint, current: Fingerprint) -> str | None:
    """'field: old -> new' for the first setting that differs (the field inside a recorded JSON object, such as
    ``judge.chain_of_thought: false -> true``, never two whole blobs), or None when both agree."""
    for key in sorted(set(recorded) | set(current)):
        found = _inner_difference(key, recorded.get(key, _ABSENT), current.get(key, _ABSENT))
        if found:
            return found
    return None


AFRESH = "; use `overwrite` or a new output path"  # what a refused resume advises, where the caller has `overwrite`


def resume_check(recorded: Fingerprint | None, current: Fingerprint, where: str, hint: str = AFRESH) -> bool:
    """Whether output recorded under ``recorded`` is resumed under ``current``: True when both agree, False when
    nothing was recorded; other settings are refused in one line naming the first difference and ending with
    ``hint`` (what the caller can do about it)."""
    if recorded is None:
        return False
    difference = first_difference(recorded, current)
    if difference:
        raise InputError(f"{where}: made with other settings ({difference}){hint}")
    return True


def still_valid(recorded: Fingerprint | str | None, current: Fingerprint | str, what: str) -> bool:
    """Whether a saved result that may be made again (``what``, a file) is reused: True when it was made under
    ``current``, False when nothing was saved; one made with other settings is redone, and one line says so (never
    silently). A digest (the form some older files hold) names no difference."""
    if recorded is None:
        return False
    if isinstance(recorded, dict) and isinstance(current, dict):
        difference = first_difference(recorded, current)
    else:
        difference = None if recorded == current else ""
    if difference is None:
        return True
    logger.warning(f"{what}: made with other settings{f' ({difference})' if difference else ''}; redoing it")
    return False


def open_for_resume(out: Path, current: Fingerprint, overwrite: bool = False, hint: str = AFRESH, recorded: Fingerprint | None = None) -> bool:
    """Prepare ``out`` for appending under ``current``; True when earlier output is resumed.

    ``overwrite`` empties earlier output. Earlier output is resumed only under the fingerprint ``recorded`` for it
    (its header's, read by the caller; output from before headers: its ``OUT.fingerprint.json``); none, or another
    one, is refused in one line, ending with ``hint`` (what the caller can do about it). Nothing is written here:
    the caller records ``current`` in the header. The output stays locked for this process (``outputs.claim``), so a
    second run on it is refused while this one writes.
    """
    resumed = out.exists() and out.stat().st_size > 0
    outputs.claim(out)
    if resumed and overwrite:
        rewrite_jsonl(out, [])
        resumed = False
    if resumed:
        resume_check(_required(out, recorded, hint), current, str(out), hint)
    return resumed


def sidecar_fingerprint(out: Path, hint: str = AFRESH) -> Fingerprint | None:
    """The fingerprint output from before headers recorded in ``OUT.fingerprint.json`` (None without one); a malformed
    one is refused in one line. Read for old output only: new output records its fingerprint in its header."""
    record = sidecar(out)
    if not record.exists():
        return None
    try:
        recorded = json.loads(read_text(record))
    except json.JSONDecodeError:
        raise InputError(f"{record}: malformed JSON{hint}") from None
    if not isinstance(recorded, dict):
        raise InputError(f"{record}: not a JSON object of settings{hint}")
    return recorded


def _required(out: Path, recorded: Fingerprint | None, hint: str) -> Fingerprint:
    """What earlier output ``out`` was made under: ``recorded``, or its old sidecar's; with neither, it is refused."""
    found = recorded if recorded is not None else sidecar_fingerprint(out, hint)
    if found is None:
        raise InputError(f"{out}: exists, but no {out.name}.run.json (nor the {sidecar(out).name} of older output) says what made it{hint}")
    return found


def check_resumable(out: Path, known: Fingerprint, defaults: Fingerprint | None = None, hint: str = AFRESH, recorded: Fingerprint | None = None) -> None:
    """What a dry run can tell of earlier output ``out`` before any LM is made: refused in the line the run would
    say when nothing records what made it (``recorded``: its header's fingerprint), or when it was made with other
    values of the ``known`` settings (one recorded only off its default reads as ``defaults`` gives it). Claims and
    writes nothing."""
    if not (out.exists() and out.stat().st_size > 0):
        return
    found = _required(out, recorded, hint)
    resume_check({name: found.get(name, (defaults or {}).get(name, "")) for name in known}, known, str(out), hint)


def combined(*parts: Fingerprint) -> Fingerprint:
    """One fingerprint from the parts different layers decide (the caller's data and LM, the runner's own
    settings), each made from a model; a setting named by two parts is a bug, not a silent override."""
    out: Fingerprint = {}
    for part in parts:
        taken = sorted(out.keys() & part.keys())
        if taken:
            raise ValueError(f"fingerprint parts both record {taken[0]!r}")
        out.update(part)
    return out
