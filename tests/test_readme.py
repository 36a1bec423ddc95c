"""The README's examples run: the `compile()` snippet on a scripted LM and a small suite, and the quick start's
commands as written on the embedded LM."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bineval_dspy
from tests.conftest import scripted_lm
from tests.optimize.test_optimizer import World

README = Path(__file__).resolve().parents[1] / "README.md"
SUITE_ROW = {"instruction_id_list": ["detectable_format:number_bullet_lists"], "kwargs": [{"num_bullets": 2}]}


def python_block(containing: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    (block,) = [b for b in blocks if containing in b]
    return block


def test_the_compile_snippet_runs(tmp_path, monkeypatch, capsys, words_embedder):
    suite = tmp_path / "suite.jsonl"
    suite.write_text("\n".join(json.dumps({"key": f"k{i}", "prompt": f"List two fruits ({i}).", **SUITE_ROW}) for i in range(8)) + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(bineval_dspy, "make_lm", lambda spec: scripted_lm(World()), raising=False)
    namespace: dict = {}
    exec(compile(python_block("optimizer.compile("), str(README), "exec"), namespace)
    audit = namespace["audit"]
    assert audit.best.val_score == 1.0 and audit.start.val.score == 0.0  # the scripted world rewards bullets
    assert namespace["program"].generate.signature.instructions.endswith("Use bullet points.")
    assert audit.iterations[0].decision.gain is not None
    captured = capsys.readouterr()
    assert captured.err == ""  # compile prints nothing; the snippet's own print is on stdout
    assert captured.out.strip().endswith("0.0 -> 1.0")


@pytest.mark.embedded
def test_the_quick_start_runs_as_written(tmp_path):
    """Issue 33: the README's quick start, line by line in an empty folder, on the embedded LM: every line exits 0,
    and the first checklist has the lowercase rule checked by code."""
    block = re.search(r"### Quick start\n.*?```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert block is not None
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "BINEVAL_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.group(1)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    checklist = json.loads((tmp_path / "haiku.json").read_text())
    assert "change_case:english_lowercase" in [q["verifier"] for q in checklist["questions"]]
    assert "mean scores over 1 row(s)" in (tmp_path / "summary.txt").read_text()
    grid = (tmp_path / "runs" / "eval" / "grid.jsonl").read_text().splitlines()
    assert len(grid) == 4 and (tmp_path / "report.html").stat().st_size > 0 and "[data]" in (tmp_path / "run.toml").read_text()


@pytest.mark.usefixtures("own_verifiers")
def test_the_checks_you_write_yourself_example_runs(tmp_path, capsys):
    from bineval_dspy import cli

    (tmp_path / "my_checks.py").write_text(python_block("mine:no_emoji"))
    assert cli.main(["verifiers", "mine:", "--verifiers", str(tmp_path / "my_checks.py")]) == 0
    assert "mine:no_emoji  Use no emoji.  [no kwargs]" in capsys.readouterr().out
    suite, responses, out = tmp_path / "suite.jsonl", tmp_path / "responses.jsonl", tmp_path / "results.jsonl"
    suite.write_text(json.dumps({"key": 1, "prompt": "Invite them.", "instruction_id_list": ["mine:no_emoji"], "kwargs": [{}]}) + "\n")
    responses.write_text(json.dumps({"key": 1, "response": "Come \U0001F389"}) + "\n")
    assert cli.main(["verify", "--suite", str(suite), "--responses", str(responses), "-o", str(out), "--verifiers", str(tmp_path / "my_checks.py")]) == 0
    assert json.loads(out.read_text())["follow_instruction_list"] == [False]

def test_a_generator_has_the_commands_token_limit_and_the_example_shows_it():
    """One default response limit for the Python Generator, `generate` and an optimize config (issue 47, item 2)."""
    from bineval_dspy.cli.defaults import GENERATE_MAX_TOKENS
    from bineval_dspy.optimize.config import ProgramConfig
    from bineval_dspy.programs.generator import Generator

    assert Generator().max_tokens == ProgramConfig().max_tokens == GENERATE_MAX_TOKENS == 256
    assert "Generator(\"Respond to the user's request.\", max_tokens=256)" in python_block("optimizer.compile(")


def test_the_judge_synopsis_and_probability_mode_say_what_they_do():
    """Issue 47: `-o` is optional (it defaults to scorecards.jsonl), and `--probability` changes the score itself."""
    text = README.read_text(encoding="utf-8")
    assert "bineval judge --checklist checklist.json --data rows.jsonl [-o scorecards.jsonl]" in text
    assert "the score becomes a soft P(yes) score" in " ".join(text.split())
