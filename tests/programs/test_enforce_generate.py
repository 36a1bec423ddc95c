"""`generate --enforce`: plain prompt-only rows, the real embedded engine decoding under a prompt's constraints (every
output verified after, each row's record saying what was enforced), and an LM that cannot steer refused up front."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.checklists.constraints import enforcement_plan, extracted
from bineval_dspy.core.errors import InputError
from bineval_dspy.programs.generator import Generator
from bineval_dspy.suites.rows import load_suite


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_a_row_of_only_key_and_prompt_is_graded_by_the_constraints_it_states(tmp_path):
    suite = write(tmp_path / "s.jsonl", [{"key": "a", "prompt": "Write a haiku about rain, all in lowercase letters."}])
    (row,) = load_suite(suite, extract=extracted)
    assert row.instruction_id_list == ["change_case:english_lowercase"] and row.extracted
    with pytest.raises(InputError, match="missing field 'instruction_id_list'"):
        load_suite(suite)  # without an extractor it stays refused, as before
    write(suite, [{"key": "b", "prompt": "Tell me about rain."}])
    with pytest.raises(InputError, match=r"s\.jsonl:1: field 'instruction_id_list': missing, and no constraint"):
        load_suite(suite, extract=extracted)


def test_the_plan_names_every_constraint_it_does_not_enforce():
    plan = enforcement_plan("Write about Paris in all lowercase letters. Include the keywords 'seine' and 'louvre'.", "extracted")
    statuses = {d.instruction_id: d.status for d in plan.decisions}
    assert statuses["change_case:english_lowercase"] == "enforced"
    assert statuses["keywords:existence"] == "unenforceable"
    with pytest.raises(InputError, match="annotated"):
        Generator(enforce="annotated").plan("a prompt no suite row holds")


def test_an_lm_that_cannot_steer_is_refused_before_any_call(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # a provider model: nothing is sent before the refusal
    suite = write(tmp_path / "s.jsonl", [{"key": 1, "prompt": "Write in lowercase letters about rain."}])
    code = cli.main(["generate", "--suite", str(suite), "--enforce", "extracted", "--lm", "openai/gpt-4o-mini", "-o", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and "cannot decode under constraints" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.embedded
def test_generate_enforce_on_the_embedded_model_holds_and_says_so(tmp_path, capsys):
    rows = [
        {"key": 1, "prompt": "Write a short poem about autumn, all in lowercase letters and without any commas."},
        {"key": 2, "prompt": "Describe Paris in exactly 3 bullet points. Use the markdown bullet points such as: * This is a point."},
        {"key": 3, "prompt": "Is the sky blue?", "instruction_id_list": ["detectable_format:constrained_response", "startend:quotation"], "kwargs": [{}, {}]},
    ]
    suite, out = write(tmp_path / "s.jsonl", rows), tmp_path / "o.jsonl"
    assert cli.main(["generate", "--suite", str(suite), "--enforce", "annotated", "--max-tokens", "64", "-o", str(out), "--limit", "3"]) == 2  # rows 1-2 have no ids
    assert "s.jsonl: suite row '1' has no instruction ids to enforce (enforce = 'annotated')" in " ".join(capsys.readouterr().err.split())
    assert cli.main(["generate", "--suite", str(suite), "--enforce", "extracted", "--max-tokens", "64", "-o", str(out)]) == 0
    records = {r["key"]: r for r in map(json.loads, out.read_text().splitlines())}
    first, second = records[1], records[2]
    assert first["response"] == first["response"].lower() and "," not in first["response"]
    assert set(first["enforcement"]["held"]) == {"change_case:english_lowercase", "punctuation:no_comma"}
    assert all(first["enforcement"]["held"].values()) and all(second["enforcement"]["held"].values())
    assert sum(line.startswith("* ") for line in second["response"].splitlines()) == 3
    assert records[3]["enforcement"]["decisions"] == []  # its words state no constraint; the annotated ones are not read
    assert "held when checked after decoding" in capsys.readouterr().out
    sampled = tmp_path / "b.jsonl"  # Best-of-N's samples are decoded side by side, each under the same constraints
    assert cli.main(["generate", "--suite", str(suite), "--enforce", "extracted", "--max-tokens", "48", "--best-of", "2", "--limit", "1", "-o", str(sampled)]) == 0
    (record,) = map(json.loads, sampled.read_text().splitlines())
    drawn = [c["response"] for c in record["selection"]["candidates"]]
    assert len(drawn) == 2 and all(text == text.lower() and "," not in text for text in drawn)
