"""Generation: the program, resumable runs, STICK records, and `bineval generate` input errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dspy
import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import InputError
from bineval_dspy.programs.generation import run_generation
from bineval_dspy.programs.generator import Generator, PlainChatAdapter
from bineval_dspy.programs.records import GenerationRecord
from bineval_dspy.suites.rows import SuiteRow
from tests.conftest import SHARED_DATA, route_cli_lm, scripted_lm
from tests.programs.test_refine import BAD, GOOD, stick_script

PROMPTS = {"1": "Write about the sea. Mention the word ocean.", "2": "Describe a river.", "3": "Describe a lake."}


def suite_rows() -> list[SuiteRow]:
    return [
        SuiteRow(key=k, prompt=p, instruction_id_list=["punctuation:no_comma"], kwargs=[{}]) for k, p in PROMPTS.items()
    ]


def write_suite(path: Path, rows: list[SuiteRow] | None = None) -> Path:
    path.write_text("".join(row.model_dump_json() + "\n" for row in rows or suite_rows()))
    return path


def echo(prompt: str) -> str:
    return f"reply to: {prompt}"


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def use_lm(monkeypatch, script) -> dspy.LM:
    """Route the CLI's LM set-up to a scripted LM."""
    return route_cli_lm(monkeypatch, script)


@pytest.fixture
def lm(monkeypatch):
    """A scripted LM whose generations echo the prompt."""
    return use_lm(monkeypatch, stick_script(generate=echo))


# a row with two code-checked constraints: the word "ocean", no commas
OCEAN = SuiteRow(
    key="9",
    prompt=PROMPTS["1"],
    instruction_id_list=["keywords:existence", "punctuation:no_comma"],
    kwargs=[{"keywords": ["ocean"]}, {}],
)


def test_generator_sends_instructions_as_system_and_prompt_as_user():
    lm = scripted_lm(lambda r: "  the reply \n")
    dspy.configure(lm=lm)
    pred = Generator(instructions="Be brief.", max_tokens=77)(prompt="Say hi.")
    assert pred.response == "the reply"
    request = lm.engine.requests[0]
    assert request.system == "Be brief."
    assert [m.text for m in request.messages] == ["Say hi."]
    assert request.config.max_tokens == 77
    assert Generator().generate.signature.instructions.startswith("Respond to the user's prompt")
    with pytest.raises(ValueError):
        Generator(instructions="  ")


def test_plain_adapter_formats_demos_and_refuses_two_outputs():
    adapter = PlainChatAdapter()
    signature = Generator().generate.signature
    messages = adapter.format(signature, [{"prompt": "p1", "response": "r1"}], {"prompt": "p2"})
    assert [(m["role"], m["content"]) for m in messages[1:]] == [("user", "p1"), ("assistant", "r1"), ("user", "p2")]
    with pytest.raises(ValueError, match="exactly one output"):
        adapter.parse(dspy.Signature("a -> b, c"), "text")


def test_run_generation_writes_rows_and_resumes_without_redoing_finished_ones(tmp_path):
    lm = scripted_lm(lambda r: echo(r.messages[-1].text))
    dspy.configure(lm=lm)
    out = tmp_path / "responses.jsonl"
    # a run stopped after the first row: its output holds that row only
    assert run_generation(suite_rows()[:1], Generator(), out).written == 1
    assert len(lm.engine.requests) == 1
    report = run_generation(suite_rows(), Generator(), out)
    assert (report.written, report.resumed, report.failures) == (2, 1, [])
    assert len(lm.engine.requests) == 3  # the finished row was not regenerated
    rows = read(out)
    assert [r["key"] for r in rows] == ["1", "2", "3"]
    assert {k: v for k, v in rows[1].items() if k != "usage"} == {"key": "2", "prompt": PROMPTS["2"], "response": echo(PROMPTS["2"])}
    assert rows[1]["usage"]["lm_calls"] == 1 and rows[1]["usage"]["usd"] is None  # the scripted model has no price
    assert report.usage.lm_calls == 2
    again = run_generation(suite_rows(), Generator(), out)
    assert (again.written, again.resumed) == (0, 3) and len(lm.engine.requests) == 3
    with pytest.raises(InputError, match="made with other settings"):  # another program's output is not resumed into
        run_generation(suite_rows(), Generator("Answer in French."), out)


def test_a_failing_row_is_not_written_and_is_retried_next_time(tmp_path):
    broken = {"on": True}

    def script(request):
        if broken["on"] and request.messages[-1].text == PROMPTS["2"]:
            raise RuntimeError("server hiccup")
        return echo(request.messages[-1].text)

    dspy.configure(lm=scripted_lm(script))
    out = tmp_path / "responses.jsonl"
    report = run_generation(suite_rows(), Generator(), out)
    assert report.written == 2 and report.failures[0][0] == "2" and "server hiccup" in report.failures[0][1]
    assert [r["key"] for r in read(out)] == ["1", "3"]
    broken["on"] = False
    assert run_generation(suite_rows(), Generator(), out).written == 1
    assert sorted(r["key"] for r in read(out)) == ["1", "2", "3"]


def test_cli_generate_plain_then_resume(tmp_path, lm, capsys):
    suite = write_suite(tmp_path / "suite.jsonl")
    out = tmp_path / "out.jsonl"
    args = ["generate", "--suite", str(suite), "--limit", "2", "-o", str(out)]
    assert cli.main(args) == 0
    assert [r["key"] for r in read(out)] == ["1", "2"]
    assert set(read(out)[0]) == {"key", "prompt", "response", "usage"}
    assert len(lm.engine.requests) == 2
    assert cli.main(args) == 0
    assert "resuming: 2 row(s)" in capsys.readouterr().err
    assert len(lm.engine.requests) == 2


def test_cli_instructions_file_reaches_the_system_message(tmp_path, lm):
    suite = write_suite(tmp_path / "suite.jsonl")
    instructions = tmp_path / "instructions.txt"
    instructions.write_text("Answer like a pirate.\n")
    args = ["generate", "--suite", str(suite), "--limit", "1", "--instructions", str(instructions)]
    assert cli.main([*args, "-o", str(tmp_path / "o.jsonl")]) == 0
    assert lm.engine.requests[0].system == "Answer like a pirate."


def test_cli_refine_records_iterations_and_code_judges(tmp_path, monkeypatch, capsys):
    use_lm(monkeypatch, stick_script(generate=lambda prompt: BAD, rewrite=lambda text: GOOD))
    out = tmp_path / "out.jsonl"
    suite = write_suite(tmp_path / "s.jsonl", [OCEAN])
    assert cli.main(["generate", "--suite", str(suite), "--refine", "2", "-o", str(out)]) == 0
    (record,) = read(out)
    assert record["response"] == GOOD
    assert record["refinement"]["initial_score"] == 0.5 and record["score"] == 1.0  # TICK questions say yes
    assert [i["kept"] for i in record["refinement"]["iterations"]] == [True]
    judges = {c["question"]: c["judge"] for c in record["checks"]}
    code = [j for j in judges.values() if j.startswith("code:")]
    assert sorted(code) == ["code:keywords:existence", "code:punctuation:no_comma"]
    assert [j for j in judges.values() if not j.startswith("code:")] == ["custom/scripted"] * 2  # TICK questions
    assert "score before refine" in capsys.readouterr().out  # the table is a result: stdout


def test_cli_best_of_records_every_sample(tmp_path, monkeypatch):
    use_lm(monkeypatch, stick_script(samples=[BAD, GOOD, BAD]))
    out = tmp_path / "out.jsonl"
    suite = write_suite(tmp_path / "s.jsonl", [OCEAN])
    assert cli.main(["generate", "--suite", str(suite), "--best-of", "3", "--threads", "1", "-o", str(out)]) == 0
    (record,) = read(out)
    assert record["response"] == GOOD and record["selection"]["chosen"] == 1
    assert [c["score"] for c in record["selection"]["candidates"]] == [0.5, 1.0, 0.5]  # TICK questions say yes
    typed = GenerationRecord.model_validate(record)  # what the file holds is the typed record, and back again
    assert typed.model_dump(mode="json") == record and typed.usage is not None and typed.checks
    plain = GenerationRecord(key=3, prompt="p", response="r")
    assert plain.model_dump(mode="json") == {"key": 3, "prompt": "p", "response": "r"}  # unset parts left out
    with pytest.raises(ValueError, match="answer"):
        GenerationRecord.model_validate({**record, "checks": [{**record["checks"][0], "answer": "maybe"}]})


def test_cli_best_of_with_unanswered_checks_exits_1(tmp_path, monkeypatch, capsys):
    use_lm(monkeypatch, stick_script(generate=lambda prompt: GOOD, verdict="maybe"))  # every LM check unparseable
    out = tmp_path / "out.jsonl"
    suite = write_suite(tmp_path / "s.jsonl", [OCEAN])
    assert cli.main(["generate", "--suite", str(suite), "--best-of", "2", "--threads", "1", "-o", str(out)]) == 1
    (record,) = read(out)
    assert any(c["answer"] == "unanswered" for c in record["checks"])
    assert "1 row(s) have unanswered checks" in capsys.readouterr().err
    assert cli.main(["generate", "--suite", str(suite), "--best-of", "2", "--threads", "1", "-o", str(out)]) == 1
    assert "resuming" not in capsys.readouterr().err  # the incomplete row was retried, not kept
    assert len(read(out)) == 1


def test_cli_exits_1_when_rows_fail(tmp_path, monkeypatch, capsys):
    def script(request):
        raise RuntimeError("no server")

    use_lm(monkeypatch, script)
    code = cli.main(["generate", "--suite", str(write_suite(tmp_path / "s.jsonl")), "-o", str(tmp_path / "o.jsonl")])
    assert code == 1
    captured = capsys.readouterr()
    assert "no server" in captured.err and "nothing new written" in captured.out


@pytest.mark.parametrize(
    "suite_text, message",
    [
        ("{not json\n", "s.jsonl:1: malformed JSON"),
        ('{"key": "1", "prompt": "p", "instruction_id_list": ["punctuation:no_comma"]}\n', "1: missing field 'kwargs'"),
        ('{"key": "1", "prompt": "p", "instruction_id_list": ["no:such"], "kwargs": [{}]}\n', "unknown instruction id"),
        ("", "no suite rows"),
    ],
)
def test_bad_suite_exits_2_with_one_line(tmp_path, lm, capsys, suite_text, message):
    suite = tmp_path / "s.jsonl"
    suite.write_text(suite_text)
    assert cli.main(["generate", "--suite", str(suite), "-o", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert lm.engine.requests == []


def test_other_bad_inputs_exit_2(tmp_path, lm, capsys):
    suite = write_suite(tmp_path / "suite.jsonl")
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    assert cli.main(["generate", "--suite", str(suite), "--instructions", str(empty)]) == 2
    assert "instructions file is empty" in capsys.readouterr().err
    assert cli.main(["generate", "--suite", str(tmp_path / "missing.jsonl")]) == 2
    bad_out = tmp_path / "out.jsonl"
    bad_out.write_text('{"key": "1", "response": "x"}\nnot json\n')
    assert cli.main(["generate", "--suite", str(suite), "-o", str(bad_out)]) == 2
    assert "out.jsonl:2: malformed JSON" in capsys.readouterr().err
    for flag, value in (("--best-of", "0"), ("--refine", "-1"), ("--limit", "x")):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["generate", "--suite", str(suite), flag, value])
        assert exit_info.value.code == 2
    assert lm.engine.requests == []


@pytest.mark.embedded
def test_generate_one_row_with_the_embedded_model(tmp_path):
    source = SHARED_DATA / "ifbench" / "ifbench_test_shared.jsonl"
    if not source.exists():
        pytest.skip("IFBench data not available")
    out = tmp_path / "responses.jsonl"
    env = {**os.environ, "BINEVAL_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "bineval_dspy.cli", "generate", "--suite", str(source), "--limit", "1"]
    done = subprocess.run(
        [*command, "--max-tokens", "96", "-o", str(out)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (record,) = read(out)
    assert record["key"] == "0" and record["response"].strip()


def test_cli_stop_at_pass_records_fewer_samples_and_is_a_setting_of_its_own(tmp_path, monkeypatch, capsys):
    use_lm(monkeypatch, stick_script(samples=[BAD, GOOD, BAD]))
    out = tmp_path / "out.jsonl"
    suite = write_suite(tmp_path / "s.jsonl", [OCEAN])
    argv = ["generate", "--suite", str(suite), "--best-of", "3", "--threads", "1", "-o", str(out)]
    assert cli.main([*argv, "--stop-at-pass"]) == 0
    (record,) = read(out)
    assert record["response"] == GOOD and record["selection"]["stop_at_pass"] is True
    assert [c["passed"] for c in record["selection"]["candidates"]] == [False, True]
    printed = capsys.readouterr().out
    assert "2.00 of 3 samples per prompt, stopping at the first pass" in printed and "pass@3 1.000" in printed
    assert cli.main(argv) == 2  # output made with stop-at-pass is not resumed by a run without it
    assert cli.main(["generate", "--suite", str(suite), "--stop-at-pass", "-o", str(tmp_path / "o.jsonl")]) == 2
    assert "--stop-at-pass stops Best-of-N early" in capsys.readouterr().err
    for count in ("0", "-3"):
        with pytest.raises(SystemExit) as exited:
            cli.main(["generate", "--suite", str(suite), "--best-of", count, "-o", str(tmp_path / "o.jsonl")])
        assert exited.value.code == 2 and f"argument --best-of: must be at least 1, got {count}" in capsys.readouterr().err
