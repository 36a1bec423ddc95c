"""``bineval data [--check DIR]``: where the public data sets the figures were measured on come from, with each
file's sha256, and a check that a folder holds those exact files.

The library ships no benchmark data: it reads files a user brings. The figures in the READMEs were measured on the
files this catalogue lists (some hold a shared part of a benchmark, the rest withheld for testing); ``--check``
tells a user whether their copy is that part, so a figure they rerun is comparable.
"""

from __future__ import annotations

import argparse
import json
from importlib.resources import files
from pathlib import Path

from pydantic import BaseModel

from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode, InputError
from bineval_dspy.core.fingerprint import sha256_of
from bineval_dspy.core.terminal import styled


class DataFile(BaseModel):
    """One file of the catalogue: its path under the data folder, rows, checksum, where it comes from and how."""

    file: str
    rows: int
    sha256: str
    license: str
    source: str
    note: str


def catalogue() -> list[DataFile]:
    raw = json.loads(files("bineval_dspy.data").joinpath("datasets.json").read_text(encoding="utf-8"))
    return [DataFile.model_validate(entry) for entry in raw["files"]]


def cmd_data(args: argparse.Namespace) -> int:
    """List the catalogue, or check a folder against it: exit 1 when a file differs, 0 when every file present
    matches (missing ones are named, not failed: a user may hold only the sets they use)."""
    entries = catalogue()
    if args.check is None:
        for entry in entries:
            shown.print(styled((entry.file, "cyan"), f"  {entry.rows} rows  sha256 {entry.sha256}"), markup=False)
            shown.print(f"    {entry.source}  ({entry.license}; {entry.note})", markup=False, highlight=False)
        console.print(f"{len(entries)} file(s); check a copy with `bineval data --check DIR` (DIR holds ifeval/, ifbench/, ...)")
        return ExitCode.OK
    folder = Path(args.check)
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder")
    found = {entry.file: folder / entry.file for entry in entries if (folder / entry.file).is_file()}
    if not found:
        raise InputError(f"{folder}: none of the catalogue's files is there (e.g. {entries[0].file}); run `bineval data` for the list")
    differ = 0
    for entry in entries:
        path = found.get(entry.file)
        if path is None:
            shown.print(f"missing  {entry.file}", markup=False, highlight=False)
        elif sha256_of(path) == entry.sha256:
            shown.print(f"ok       {entry.file}", markup=False, highlight=False)
        else:
            differ += 1
            shown.print(f"DIFFERS  {entry.file}: not the file the figures were measured on (sha256 {sha256_of(path)[:16]}...)", markup=False, highlight=False)
    console.print(f"{len(found) - differ} of {len(entries)} file(s) match, {differ} differ, {len(entries) - len(found)} missing")
    return ExitCode.INCOMPLETE if differ else ExitCode.OK


def add_data_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``bineval data``; it calls no LM and downloads nothing."""
    parser = sub.add_parser("data", help="the public data sets behind the figures: sources, sha256, and a check of your copy")
    parser.add_argument("--check", metavar="DIR", help="check the files under DIR (ifeval/ifeval_shared.jsonl, ...) against the catalogue")
    parser.set_defaults(func=cmd_data)
