"""A program whose adapter llama.cpp cannot apply is one located line before any call (issue 32's own pass).

llama-cpp-python keeps a NULL adapter when llama.cpp refuses the file, and the first decode then crashed the whole
process (SIGSEGV): a damaged adapter, or a model file given as the adapter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.fingerprint import sha256_of
from bineval_dspy.lm.specs import embedded_model_path

pytestmark = pytest.mark.embedded


def write_program(folder: Path, adapter: Path) -> Path:
    base = embedded_model_path("smollm2")
    program = {
        "kind": "generator", "instructions": {"generate": "Answer."},
        "weights": {"base": "smollm2", "base_sha256": sha256_of(base), "adapter": adapter.name, "adapter_sha256": sha256_of(adapter), "method": "sft"},
    }  # fmt: skip
    (folder / "program.json").write_text(json.dumps(program))
    return folder / "program.json"


@pytest.mark.parametrize("adapter", ["damaged", "a model, not an adapter"])
def test_an_adapter_llama_cpp_cannot_apply_is_one_line_not_a_crash(tmp_path, capsys, adapter):
    path = tmp_path / "adapter.gguf"
    if adapter == "damaged":
        path.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 200)  # the magic, then garbage
    else:
        path.symlink_to(embedded_model_path("smollm2"))
    program = write_program(tmp_path, path)
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps({"key": 1, "prompt": "Say hi.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}) + "\n")
    out = tmp_path / "out.jsonl"
    code = cli.main(["generate", "--suite", str(suite), "--program", str(program), "-o", str(out), "--cache-dir", str(tmp_path / "cache")])
    error = capsys.readouterr().err.strip()
    assert code == 2 and error.count("\n") == 0
    assert "field 'weights.adapter'" in error and "cannot apply it as a LoRA adapter" in error
    assert not out.exists() or out.read_text() == ""
