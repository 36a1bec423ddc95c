"""The README's Python examples run: the `compile()` snippet, on a scripted LM and a small suite."""

from __future__ import annotations

import json
import re
from pathlib import Path

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
