"""`bineval data`: the data sets behind the figures, with sources and checksums, and a check of a user's copy."""

from __future__ import annotations

import pytest

from bineval_dspy import cli
from bineval_dspy.cli.data import catalogue
from bineval_dspy.core.fingerprint import sha256_of
from tests.conftest import SHARED_DATA


def test_the_catalogue_lists_every_file_with_its_source_and_checksum(capsys):
    assert cli.main(["data"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for entry in catalogue():
        assert entry.file in out and entry.sha256 in out and len(entry.sha256) == 64


def test_a_copy_that_differs_is_named_and_exits_1_and_a_folder_without_any_is_one_line(tmp_path, capsys):
    (tmp_path / "ifeval").mkdir()
    (tmp_path / "ifeval" / "ifeval_shared.jsonl").write_text('{"key": 1}\n')
    assert cli.main(["data", "--check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "DIFFERS  ifeval/ifeval_shared.jsonl" in out and "missing  ifbench/ifbench_test_shared.jsonl" in out
    assert cli.main(["data", "--check", str(tmp_path / "ifeval")]) == 2
    assert "none of the catalogue's files is there" in capsys.readouterr().err


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="the shared data folder is not beside this checkout")
def test_the_shared_data_is_what_the_catalogue_says(capsys):
    for entry in catalogue():
        path = SHARED_DATA / entry.file
        assert sha256_of(path) == entry.sha256 and len(path.read_bytes().splitlines()) == entry.rows, entry.file
    assert cli.main(["data", "--check", str(SHARED_DATA)]) == 0
