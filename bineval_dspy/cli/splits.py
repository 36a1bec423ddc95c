"""``--program RUN --split NAME`` on the commands that read a suite: the rows of one split an optimizer run recorded."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_split_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--split", choices=("train", "val", "test"), help="only the rows of this split of the --program run (its splits.json)")


def split_rows(rows: list[Any], args: argparse.Namespace) -> list:
    """The suite rows of ``--split`` of the ``--program`` run (``programs.suite_file.split_of``); all without it."""
    from bineval_dspy.programs.suite_file import split_of

    return split_of(rows, Path(args.suite), Path(args.program) if args.program else None, args.split)
