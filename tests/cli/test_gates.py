"""`judge`'s quality gates and its degenerate-judge mark where CI and a redirected stdout see them (issue 57, item 6):
the flag in the run header and under the stdout table, `--fail-under SCORE` and `--fail-under-question RATE` with
their own exit code; without them a complete run exits 0 whatever its scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.runs.header import header_path, read_header
from tests.conftest import question_of, route_cli_lm, verdict_json


def files(tmp_path: Path, rows: int = 5) -> list[str]:
    questions = [Question(text=f"Is it {w}?", dimension="d") for w in ("short", "kind", "clear")]
    checklist = tmp_path / "checklist.json"
    checklist.write_text(Checklist(task="t", dimensions=["d"], questions=questions).model_dump_json())
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"input": "a", "output": f"b{k}"}) + "\n" for k in range(rows)))
    return ["judge", "--checklist", str(checklist), "--data", str(data), "-o", str(tmp_path / "out.jsonl")]


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    monkeypatch.setattr(console, "width", 200)
    monkeypatch.setattr(shown, "width", 200)


def test_a_degenerate_judge_is_marked_in_the_header_and_on_stdout(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes"))
    assert cli.main(files(tmp_path)) == ExitCode.OK  # no gate asked for: complete is 0
    out = capsys.readouterr().out
    assert "degenerate judge: 15 of 15 LM verdicts are 'yes'" in out
    header = read_header(tmp_path / "out.jsonl")
    assert header is not None and header.degenerate is not None and (header.degenerate.count, header.degenerate.answer) == (15, "yes")


def test_a_judge_that_tells_outputs_apart_has_no_mark(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes" if "short" in question_of(r) or "b1" in r.messages[-1].text else "no"))
    assert cli.main(files(tmp_path)) == ExitCode.OK
    assert "degenerate" not in capsys.readouterr().out
    assert read_header(tmp_path / "out.jsonl").degenerate is None  # type: ignore[union-attr]
    assert "degenerate" not in header_path(tmp_path / "out.jsonl").read_text()  # a header without the flag, as before


def test_fail_under_gates_the_overall_score_with_its_own_code(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes" if "short" in question_of(r) else "no"))  # every row 1/3
    args = files(tmp_path)
    assert cli.main([*args, "--fail-under", "0.5"]) == ExitCode.BELOW_GATE == 6
    err = capsys.readouterr().err
    assert "overall score 0.333 is under 0.5 (--fail-under)" in err
    assert cli.main([*args, "--fail-under", "0.3"]) == ExitCode.OK  # resumed: the gate reads the whole output


def test_fail_under_question_names_each_question_under_its_pass_rate(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes" if "short" in question_of(r) or "b0" in r.messages[-1].text else "no"))
    args = files(tmp_path)
    assert cli.main([*args, "--fail-under-question", "0.5"]) == ExitCode.BELOW_GATE
    err = capsys.readouterr().err
    assert "Is it kind?" in err and "1/5 rows" in err and "Is it clear?" in err and "Is it short?" not in err
    assert cli.main([*args, "--fail-under-question", "0.2"]) == ExitCode.OK


def test_an_unanswered_verdict_does_not_pass_a_question(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda r: "not json" if "kind" in question_of(r) else verdict_json("yes"))
    assert cli.main([*files(tmp_path), "--fail-under-question", "0.5"]) == ExitCode.BELOW_GATE
    assert "0/5 rows" in capsys.readouterr().err


def test_the_gates_take_a_share(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit:
        cli.main([*files(tmp_path), "--fail-under", "1.5"])
    assert exit.value.code == ExitCode.INPUT
    assert "must be from 0 to 1" in capsys.readouterr().err


def test_the_top_level_help_points_to_the_registry_of_run_kinds(capsys):
    """Issue 57, item 13, as issue 58 left it: the kinds `report` and `show` read come from the registry, which fills
    as the modules defining each run load; `--help` loads none of them (tests/cli/test_startup.py), so it names the
    command that lists them (`bineval show --kinds`, tested in tests/report/test_run_kinds.py) instead of a list kept
    by hand."""
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    report = text[text.index(" report one ") : text.index(" view ")]  # the report command's line alone
    assert "`bineval show --kinds` lists them" in report


def test_the_readme_ci_commands_parse():
    """The README's "In CI" commands are ones the parser takes as written."""
    import re
    import shlex

    from bineval_dspy.cli.main import build_parser

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"### In CI.*?```bash\n(.*?)```", readme, flags=re.S)
    assert block is not None
    lines = [line.split("#")[0] for line in block.group(1).splitlines() if line.startswith("bineval ")]
    assert len(lines) == 2
    for line in lines:
        args = build_parser().parse_args(shlex.split(line)[1:])
        assert args.fail_on_regression if args.command == "compare" else (args.fail_under, args.fail_under_question) == (0.8, 0.5)


def test_a_dry_run_refuses_earlier_output_the_real_run_would_refuse(tmp_path, monkeypatch, capsys):
    """Issue 57, item 8: a dry run never says rows would be kept when the run itself refuses the output."""
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes"))
    args = files(tmp_path, rows=3)
    assert cli.main(args) == ExitCode.OK
    capsys.readouterr()
    assert cli.main([*args, "--dry-run"]) == ExitCode.OK  # the same settings: the finished rows are kept
    assert "3 complete row(s)" in capsys.readouterr().out
    (tmp_path / "rows.jsonl").write_text((tmp_path / "rows.jsonl").read_text() + json.dumps({"input": "a", "output": "more"}) + "\n")
    assert cli.main([*args, "--dry-run"]) == ExitCode.INPUT
    dry = capsys.readouterr().err.strip()
    assert cli.main(args) == ExitCode.INPUT
    real = capsys.readouterr().err.strip()
    assert dry == real and "made with other settings (data" in dry and "--overwrite" in dry


def test_a_generate_dry_run_refuses_output_of_another_suite_as_the_run_does(tmp_path, monkeypatch, capsys):
    from tests.programs.test_generator import echo, write_suite
    from tests.programs.test_refine import stick_script

    route_cli_lm(monkeypatch, stick_script(generate=echo))
    suite = write_suite(tmp_path / "suite.jsonl")
    args = ["generate", "--suite", str(suite), "-o", str(tmp_path / "out.jsonl")]
    assert cli.main(args) == ExitCode.OK
    assert cli.main([*args, "--dry-run"]) == ExitCode.OK
    assert "finished row(s)" in capsys.readouterr().out
    suite.write_text(suite.read_text().replace("a", "the", 1))
    assert cli.main([*args, "--dry-run"]) == ExitCode.INPUT
    dry = capsys.readouterr().err.strip()
    assert cli.main(args) == ExitCode.INPUT
    assert dry == capsys.readouterr().err.strip() and "made with other settings (suite" in dry


def test_truncated_replies_are_counted_once_naming_the_commands_option(monkeypatch, capsys):
    """Issue 57, item 9: DSPy's per-reply truncation warning is counted into one line that names --max-tokens."""
    import logging

    from bineval_dspy.cli import show
    from bineval_dspy.core.console import quiet_dspy_logs

    def replies_cut(args) -> None:
        quiet_dspy_logs()
        for _ in range(3):
            logging.getLogger("dspy.clients.lm").warning("LM response was truncated; increase max_tokens or inspect history.")

    monkeypatch.setattr(show, "cmd_show", replies_cut)
    assert cli.main(["show", "anything"]) == ExitCode.OK
    err = capsys.readouterr().err
    assert "inspect history" not in err
    assert "3 LM repl(ies) stopped at their token limit, cut short: raise --max-tokens" in " ".join(err.split())


def test_a_missing_data_file_is_said_before_the_checklists_unknown_verifier(tmp_path, capsys):
    """Issue 57, item 11: the data a run cannot read is the first thing it says."""
    checklist = tmp_path / "checklist.json"
    question = Question(text="Is it lowercase?", dimension="d", verifier="mine:lowercase")
    checklist.write_text(Checklist(task="t", dimensions=["d"], questions=[question]).model_dump_json())
    missing = tmp_path / "no-such-rows.jsonl"
    assert cli.main(["judge", "--checklist", str(checklist), "--data", str(missing), "-o", str(tmp_path / "out.jsonl")]) == ExitCode.INPUT
    err = capsys.readouterr().err.strip()
    assert str(missing) in err and "mine:lowercase" not in err


def test_an_unknown_verifier_of_no_built_in_group_says_how_own_checks_load(tmp_path, capsys):
    """Issue 57, item 11: `mine:lowercase` is no typo of a built-in id: the line names --verifiers FILE.py."""
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"input": "a", "output": "b"}) + "\n")
    for verifier, hinted in (("mine:lowercase", True), ("change_case:english_lowercas", False)):
        checklist = tmp_path / "checklist.json"
        question = Question(text="Is it lowercase?", dimension="d", verifier=verifier)
        checklist.write_text(Checklist(task="t", dimensions=["d"], questions=[question]).model_dump_json())
        assert cli.main(["judge", "--checklist", str(checklist), "--data", str(data), "-o", str(tmp_path / "out.jsonl")]) == ExitCode.INPUT
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and verifier in err
        assert ("--verifiers (a FILE.py" in err) == hinted, err
