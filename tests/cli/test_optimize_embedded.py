"""`bineval optimize` on a tiny shared-IFEval config with the real embedded LM: the test split's difference is
printed and saved with its interval, and `generate --program --split test` + `verify` reproduce `test.final`."""

from __future__ import annotations

import json

import pytest

from bineval_dspy import cli
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.embedded
IFEVAL = SHARED_DATA / "ifeval" / "ifeval_shared.jsonl"


@pytest.mark.skipif(not IFEVAL.is_file(), reason="the shared IFEval data is not beside the checkout")
def test_optimize_scores_test_and_the_program_file_reproduces_it(tmp_path, capsys):
    config = tmp_path / "run.toml"
    config.write_text(f"""
mode = "self"
run_dir = "run"
[data]
suite = "{IFEVAL}"
train = 2
val = 2
test = 3
[program]
instructions = "Respond to the user's request."
max_tokens = 24
[optimizer]
max_iterations = 1
""")
    cache = str(tmp_path / "cache")
    code = cli.main(["optimize", str(config), "--cache-dir", cache])
    assert code == 0
    err = "".join(capsys.readouterr())
    assert "test split (3 items" in err and "final - start" in err
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    final = results["test"]["final"]["accuracy"]
    assert set(results["test"]["difference"]) == {"estimate", "low", "high"}
    responses, graded = tmp_path / "responses.jsonl", tmp_path / "graded.jsonl"
    # a fresh LM cache: the responses are generated again, greedy, and must be the same
    argv = ["generate", "--suite", str(IFEVAL), "--program", str(tmp_path / "run"), "--split", "test", "-o", str(responses),
            "--cache-dir", str(tmp_path / "fresh-cache")]
    assert cli.main(argv) == 0
    argv = ["verify", "--suite", str(IFEVAL), "--responses", str(responses), "-o", str(graded), "--program", str(tmp_path / "run"), "--split", "test"]
    assert cli.main(argv) == 0
    rows = [json.loads(line) for line in graded.read_text().splitlines()]
    assert {str(r["key"]): r["follow_all_instructions"] for r in rows} == results["test"]["final"]["followed"]  # to the item
    known = [r for r in rows if r["follow_all_instructions"] is not None]
    assert len(rows) == 3
    assert sum(r["follow_all_instructions"] is True for r in known) / len(known) == final["strict_prompt"]["estimate"]
    followed = [x for r in rows for x in r["follow_instruction_list"] if x is not None]
    assert sum(followed) / len(followed) == pytest.approx(final["strict_instruction"]["estimate"])
    scored = json.loads((tmp_path / "run" / "results.json").read_text())
    assert scored == results  # generating and grading changed nothing in the run
