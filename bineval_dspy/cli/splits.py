"""``--program RUN --split NAME`` on the commands that read a suite: the rows of one split an optimizer run recorded."""

from __future__ import annotations

import argparse
from pathlib import Path

from bineval_dspy.core.errors import InputError


def add_split_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--split", choices=("train", "val", "test"), help="only the rows of this split of the --program run (its splits.json)")


def split_rows(rows: list, args: argparse.Namespace) -> list:
    """The suite rows of one split of an optimizer run (its ``splits.json``, beside ``--program``), in suite order;
    all rows without ``--split``."""
    if not args.split:
        return rows
    from bineval_dspy.optimize.results import SPLITS_FILE, Splits  # here: the parser loads no DSPy

    if not args.program:
        raise InputError("--split needs --program RUN_DIR/program.json: the split is the one that run recorded")
    folder = Path(args.program)
    folder = folder if folder.is_dir() else folder.parent
    wanted = set(getattr(Splits.load(folder), args.split))
    chosen = [row for row in rows if str(row.key) in wanted]
    if len(chosen) < len(wanted):
        raise InputError(f"{args.suite}: {len(wanted) - len(chosen)} key(s) of the {args.split} split in {folder / SPLITS_FILE} are not in the suite")
    return chosen
