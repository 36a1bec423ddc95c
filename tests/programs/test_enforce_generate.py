"""`generate --enforce`: plain prompt-only rows, the real embedded engine decoding under a prompt's constraints (every
output verified after, each row's record saying what was enforced), and an LM that cannot steer refused up front."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.checklists.stated import enforcement_plan, extracted
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
        load_suite(suite, extract=extracted)  # grading it needs ids: still refused
    (row,) = load_suite(suite, extract=extracted, bare=True)  # generating a reply does not: kept, with none
    assert row.instruction_id_list == [] and row.kwargs == [] and row.extracted
    write(suite, [{"key": "c", "prompt": "Tell me about rain.", "instruction_id_list": [], "kwargs": []}])
    with pytest.raises(InputError, match=r"s\.jsonl:1: field 'instruction_id_list': List should have at least 1 item"):
        load_suite(suite, extract=extracted, bare=True)  # a row that names its ids names at least one


def steerable(script) -> object:
    """A scripted LM whose engine says it decodes under constraints (it ignores them: the plan and the record are
    what these tests read); replies in lowercase."""
    from tests.conftest import scripted_lm

    lm = scripted_lm(script)
    lm.engine.supports_steering = True
    return lm


def test_a_bare_suite_runs_whole_under_enforce_extracted(tmp_path, capsys, monkeypatch):
    """Issue 54: a row whose prompt states no constraint the extractor knows stopped the whole run; it decodes
    plainly now, its record says no constraint was found, and the summary counts it."""
    from tests.conftest import route_cli_lm

    lm = route_cli_lm(monkeypatch, lambda request: "a plain reply about rain")
    lm.engine.supports_steering = True
    rows = [
        {"key": "a", "prompt": "Write a haiku about rain, all in lowercase letters."},
        {"key": "b", "prompt": "Tell me about rain."},
        {"key": "c", "prompt": "Describe a storm without using any commas at all, in lowercase letters only."},
    ]
    suite, out = write(tmp_path / "s.jsonl", rows), tmp_path / "o.jsonl"
    assert cli.main(["generate", "--suite", str(suite), "--enforce", "extracted", "-o", str(out)]) == 0
    records = {r["key"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(records) == {"a", "b", "c"}
    assert records["b"]["enforcement"]["source"] == "extracted" and records["b"]["enforcement"]["decisions"] == []
    assert [d["status"] for d in records["a"]["enforcement"]["decisions"]] == ["enforced"]
    summary = " ".join(capsys.readouterr().out.split())
    assert "2 of 3 row(s) steered, 1 with no constraint found (decoded plainly); 3 constraint(s) enforced, 3 held" in summary
    assert "not enforced: 0 conflict(s), 0 unenforceable, 0 invalid" in summary


def test_a_run_whose_rows_state_no_constraint_says_it_enforced_nothing(tmp_path, capsys, monkeypatch):
    from tests.conftest import route_cli_lm

    route_cli_lm(monkeypatch, lambda request: "rain falls").engine.supports_steering = True
    suite, out = write(tmp_path / "s.jsonl", [{"key": 1, "prompt": "Tell me about rain."}]), tmp_path / "o.jsonl"
    assert cli.main(["generate", "--suite", str(suite), "--enforce", "extracted", "-o", str(out)]) == 0
    assert "enforced nothing: every reply was decoded plainly; 0 of 1 row(s) steered, 1 with no constraint found" in " ".join(capsys.readouterr().out.split())


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


@pytest.mark.parametrize("words", [2500, 10**9])
def test_a_floor_the_models_context_cannot_hold_is_not_enforced_and_the_row_is_still_verified(words):
    """Issue 55: "at least 10^9 words" raised max_tokens to 1.5e9 and failed the row on every rerun; a floor beyond
    what the embedded model's context leaves beside a prompt is decided unenforceable, with its reason, and the reply
    is decoded within the run's own limit and checked as any other."""
    import dspy

    from bineval_dspy.lm.llama_engine import LlamaCppEngine
    from bineval_dspy.programs.generator import generate_row
    from bineval_dspy.suites.rows import SuiteRow

    lm = steerable(lambda request: "a short reply")
    lm.engine.unsteerable = LlamaCppEngine("never-loaded.gguf").unsteerable  # only asked what it can execute
    floor = {"relation": "at least", "num_words": words}
    row = SuiteRow(key="a", prompt=f"Write at least {words} words.", instruction_id_list=["length_constraints:number_words"], kwargs=[floor])
    program = Generator(enforce="annotated", max_tokens=64).annotate([row])
    with dspy.context(lm=lm):
        record = generate_row(row, program)
    (decision,) = record.enforcement.decisions
    assert decision.status == "unenforceable" and "the model's context of 4096 leaves 3072 beside the prompt" in decision.reason
    assert lm.engine.requests[-1].config.max_tokens == 64 and record.enforcement.held == {}
    small = row.model_copy(update={"prompt": "Write at least 100 words.", "kwargs": [{"relation": "at least", "num_words": 100}]})
    with dspy.context(lm=lm):
        assert Generator(enforce="annotated").annotate([small]).plan(small.prompt).enforced  # within reach: still enforced


@pytest.mark.embedded
def test_a_bare_suite_runs_whole_on_the_embedded_model_and_no_steered_reply_comes_back_empty(tmp_path, capsys):
    """Issue 54, on the real model: a row stating no constraint decodes plainly, and the IFEval prompt whose lowercase
    reply the model writes in emojis (byte tokens) comes back with its text, not empty."""
    rows = [
        {"key": 3534, "prompt": "Write a tweet storm with a weird tone about a time when you found out that the earth is indeed not flat. "
                                "Your response must be in English, with no capital letters, and in 20 to 30 sentences."},
        {"key": 1, "prompt": "Tell me about rain."},
    ]  # fmt: skip
    suite, out = write(tmp_path / "s.jsonl", rows), tmp_path / "o.jsonl"
    assert cli.main(["generate", "--suite", str(suite), "--enforce", "extracted", "--max-tokens", "48", "-o", str(out)]) == 0
    records = {r["key"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert records[3534]["response"].strip() and records[3534]["enforcement"]["decisions"][0]["status"] == "enforced"
    assert records[1]["response"].strip() and records[1]["enforcement"] == {"source": "extracted", "decisions": [], "held": {}}
    assert "1 of 2 row(s) steered, 1 with no constraint found" in " ".join(capsys.readouterr().out.split())


def test_a_rows_plan_is_computed_once_and_its_record_is_the_plan_the_decode_followed(monkeypatch):
    """Issue 58 item 4: the enforcement plan of a row was computed for the decode and again for its record."""
    import dspy

    from bineval_dspy.programs.generator import generate_row
    from bineval_dspy.suites.rows import SuiteRow

    planned: list[str] = []
    plan = Generator.plan
    monkeypatch.setattr(Generator, "plan", lambda self, prompt: planned.append(prompt) or plan(self, prompt))
    row = SuiteRow(key="a", prompt="Write a haiku about rain, all in lowercase letters.", instruction_id_list=["change_case:english_lowercase"], kwargs=[{}])
    with dspy.context(lm=steerable(lambda request: "soft rain on the roof")):
        record = generate_row(row, Generator("Answer.", enforce="extracted"))
    assert planned == [row.prompt]
    assert record.enforcement is not None and [d.status for d in record.enforcement.decisions] == ["enforced"]
    assert record.enforcement.held == {"change_case:english_lowercase": True}
