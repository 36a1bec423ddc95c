"""`generate --enforce` on hostile input (issue 55, fifth pass's own probes): a bare row whose prompt is a number or
blanks is refused on its field (a number was "missing field 'instruction_id_list'", blanks were generated), and a
user's word predicate that calls ``sys.exit`` while decoding fails its row (it ended the run with exit 0, no row
written and nothing said)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import ExitCode
from bineval_dspy.core.fingerprint import digest
from bineval_dspy.suites.rows import load_suite


@pytest.mark.parametrize(("prompt", "said"), [(42, "field 'prompt': int, not text"), ("   ", "field 'prompt': blank"), (None, "field 'prompt': missing")])
def test_a_bare_row_without_a_prompt_of_words_is_refused_on_its_field(tmp_path: Path, prompt, said):
    suite = tmp_path / "bare.jsonl"
    suite.write_text(json.dumps({"key": "a", **({} if prompt is None else {"prompt": prompt})}) + "\n")
    from bineval_dspy.checklists.stated import extracted
    from bineval_dspy.core.errors import InputError

    with pytest.raises(InputError, match=rf"bare.jsonl:1: {said}"):
        load_suite(suite, extract=extracted, bare=True)


EXITS = '''
import sys

import bineval_dspy
from bineval_dspy.enforce import word_predicate, words


@word_predicate("probe:exits")
def exits(word):
    if len(word) > 3:
        sys.exit(0)
    return True


@bineval_dspy.verifier("probe:exits", rule="Use short words.", enforce=lambda: words("probe:exits"))
def check(response):
    return True
'''


@pytest.mark.embedded
@pytest.mark.usefixtures("own_verifiers")
def test_a_word_predicate_that_exits_while_decoding_fails_its_row(tmp_path: Path, capsys):
    mine = tmp_path / f"exits_{digest(str(tmp_path))[:6]}.py"
    mine.write_text(EXITS)
    suite, out = tmp_path / "s.jsonl", tmp_path / "o.jsonl"
    rows = [{"key": k, "prompt": f"Tell me about {k}.", "instruction_id_list": ["probe:exits"], "kwargs": [{}]} for k in ("cats", "dogs")]
    suite.write_text("".join(json.dumps(row) + "\n" for row in rows))
    args = ["generate", "--suite", str(suite), "--enforce", "annotated", "--max-tokens", "16", "-o", str(out), "--verifiers", str(mine)]
    assert cli.main(args) == ExitCode.INCOMPLETE  # before: SystemExit(0) out of the run, nothing written or said
    err = " ".join(capsys.readouterr().err.split())
    assert "failed row cats" in err and "steering code raised SystemExit(0) while decoding" in err
