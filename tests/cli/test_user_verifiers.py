"""``--verifiers FILE.py`` on the commands: a checklist question and a suite row name a verifier of the user's own;
a failing one leaves its question unanswered (exit 1); a bad file is one line (exit 2); a changed file is not
resumed into."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.schema import Checklist, Question
from tests.conftest import question_of, route_cli_lm, verdict_json
from tests.verifiers.test_user import BROKEN, EMOJI, own_file

pytestmark = pytest.mark.usefixtures("own_verifiers")


@pytest.fixture
def lm(monkeypatch, words_embedder):
    return route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))


def judge_files(folder: Path, verifier: str, outputs: list[str]) -> list[str]:
    checklist = Checklist(task="Write a party invitation.", dimensions=["style"], questions=[
        Question(text="Is it free of emoji?", dimension="style", verifier=verifier),
        Question(text="Is it friendly?", dimension="style"),
    ])  # fmt: skip
    (folder / "checklist.json").write_text(checklist.model_dump_json())
    (folder / "rows.jsonl").write_text("".join(json.dumps({"input": "Invite them.", "output": o}) + "\n" for o in outputs))
    return ["judge", "--checklist", str(folder / "checklist.json"), "--data", str(folder / "rows.jsonl"), "-o", str(folder / "out.jsonl")]


def verdicts(folder: Path) -> list[dict]:
    return [json.loads(line)["bineval"]["scorecard"]["verdicts"][0] for line in (folder / "out.jsonl").read_text().splitlines()]


def test_judge_answers_a_question_by_the_users_own_verifier(tmp_path, lm, capsys):
    mine = own_file(tmp_path, EMOJI)
    args = judge_files(tmp_path, "mine:no_emoji", ["Come to the party!", "Come \U0001F389"])
    assert cli.main(args) == 2  # without the file the id is unknown
    assert "unknown verifier id 'mine:no_emoji'" in capsys.readouterr().err
    assert cli.main([*args, "--verifiers", str(mine)]) == 0
    first, second = verdicts(tmp_path)
    assert first["answer"] == "yes" and second["answer"] == "no" and second["judge"] == "code:mine:no_emoji"
    assert second["explanation"] == "Use at most 0 emoji. Not met: no_emoji returned False"
    assert [question_of(request) for request in lm.engine.requests] == ["Is it friendly?"] * 2  # emoji: by code, not the LM


def test_a_changed_verifier_file_is_not_resumed_into(tmp_path, lm, capsys):
    mine = own_file(tmp_path, EMOJI)
    args = [*judge_files(tmp_path, "mine:no_emoji", ["Come!"]), "--verifiers", str(mine)]
    assert cli.main(args) == 0
    assert cli.main(args) == 0  # the same file: resumed
    mine.write_text(EMOJI.replace("<= allowed", "< allowed + 1"))
    capsys.readouterr()
    assert cli.main(args) == 2
    assert "made with other settings (verifiers:" in capsys.readouterr().err


def test_a_verifier_that_raises_leaves_its_question_unanswered_and_the_run_exits_1(tmp_path, lm, capsys):
    broken = own_file(tmp_path, BROKEN)
    assert cli.main([*judge_files(tmp_path, "mine:boom", ["Come!"]), "--verifiers", str(broken)]) == 1
    (verdict,) = verdicts(tmp_path)
    assert verdict["answer"] == "unanswered"
    assert verdict["explanation"] == "verifier failed: mine:boom raised ZeroDivisionError: division by zero"


def test_verify_grades_a_suite_row_naming_the_users_verifier(tmp_path, capsys):
    mine, broken = own_file(tmp_path, EMOJI), own_file(tmp_path, BROKEN, "broken.py")
    suite, responses = tmp_path / "suite.jsonl", tmp_path / "responses.jsonl"
    suite.write_text("".join(json.dumps(row) + "\n" for row in [
        {"key": 1, "prompt": "Invite them, no emoji.", "instruction_id_list": ["mine:no_emoji"], "kwargs": [{}]},
        {"key": 2, "prompt": "Shout, no commas.", "instruction_id_list": ["mine:shout", "punctuation:no_comma"], "kwargs": [{}, {}]},
    ]))  # fmt: skip
    responses.write_text(json.dumps({"key": 1, "response": "Come \U0001F389"}) + "\n" + json.dumps({"key": 2, "response": "COME NOW"}) + "\n")
    out = tmp_path / "results.jsonl"
    verify = ["verify", "--suite", str(suite), "--responses", str(responses), "-o", str(out), "--overwrite"]
    assert cli.main([*verify, "--verifiers", str(mine)]) == 0
    assert [json.loads(line)["follow_instruction_list"] for line in out.read_text().splitlines()] == [[False], [True, True]]
    suite.write_text(json.dumps({"key": 1, "prompt": "p", "instruction_id_list": ["mine:boom"], "kwargs": [{}]}) + "\n")
    responses.write_text(json.dumps({"key": 1, "response": "Come"}) + "\n")
    capsys.readouterr()
    assert cli.main([*verify, "--verifiers", str(broken)]) == 1  # a failing verifier grades nothing
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["follow_instruction_list"] == [None] and "mine:boom raised ZeroDivisionError" in row["ungraded"][0]
    assert "1 instruction(s) ungraded" in " ".join(capsys.readouterr().err.split())


def test_verifiers_lists_the_users_own_with_their_kwargs(tmp_path, capsys):
    mine = own_file(tmp_path, EMOJI)
    assert cli.main(["verifiers", "mine:", "--verifiers", str(mine)]) == 0
    captured = capsys.readouterr()
    out = " ".join(captured.out.split())
    assert "mine:no_emoji Use at most 0 emoji. [allowed=0]" in out and "mine:shout Shout: write in capitals only. [no kwargs]" in out
    assert "2 verifier(s)" in captured.err


@pytest.mark.parametrize("text, message", [
    ("import bineval_dspy\n\ndef f(:\n", "my_checks.py:3: cannot load verifiers: SyntaxError: invalid syntax"),
    ('import bineval_dspy\n\n@bineval_dspy.verifier("punctuation:no_comma", rule="R.")\ndef f(response):\n    return True\n',
     "my_checks.py:3: verifier id 'punctuation:no_comma' is a built-in verifier's; rename yours"),
])  # fmt: skip
@pytest.mark.parametrize("command", [["verifiers"], ["verify", "--suite", "s.jsonl", "--responses", "r.jsonl"], ["judge", "--checklist", "c.json", "--data", "d.jsonl"]])
def test_a_bad_verifier_file_is_one_line_and_exit_2_before_any_work(tmp_path, capsys, command, text, message):
    bad = own_file(tmp_path, text)
    assert cli.main([*command, "--verifiers", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1


BULLETS = '''
from pydantic import BaseModel, Field

import bineval_dspy


class BulletArgs(BaseModel):
    count: int = Field(ge=1)


@bineval_dspy.verifier("mine:bullets", rule="Answer with exactly {count} bullet points, each starting '* '.", kwargs=BulletArgs)
def bullets(response: str, count: int) -> bineval_dspy.Finding:
    found = sum(line.startswith("* ") for line in response.splitlines())
    return bineval_dspy.Finding(found == count, f"{found} bullet point(s)")
'''


def test_an_optimize_config_names_its_verifier_files_from_its_own_folder(tmp_path, monkeypatch, words_embedder, capsys):
    from tests.optimize.test_optimizer import World

    route_cli_lm(monkeypatch, World())
    (tmp_path / "checks").mkdir()
    own_file(tmp_path / "checks", BULLETS, "mine.py")
    suite = tmp_path / "suite.jsonl"
    row = {"instruction_id_list": ["mine:bullets"], "kwargs": [{"count": 2}]}
    suite.write_text("".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", **row}) + "\n" for i in range(6)))
    config = tmp_path / "run.toml"
    body = 'mode = "self"\nrun_dir = "runs/demo"\nverifiers = ["{}"]\n[data]\nsuite = "suite.jsonl"\ntrain = 3\nval = 2\ntest = 1\n[program]\ninstructions = "Answer the request."\n[optimizer]\nmax_iterations = 2\n'
    config.write_text(body.format("checks/missing.py"))
    assert cli.main(["optimize", str(config)]) == 2
    err = capsys.readouterr().err
    assert "run.toml: field 'verifiers.0': no file" in err and len(err.strip().splitlines()) == 1
    config.write_text(body.format("checks/mine.py"))
    assert cli.main(["optimize", str(config)]) == 0  # the suite's rows are graded by the user's verifier
    audit = json.loads((tmp_path / "runs" / "demo" / "audit.json").read_text())
    assert audit["best"]["instructions"]["generate"].endswith("Use bullet points.")


def test_a_meta_eval_config_loads_its_verifier_files(tmp_path):
    from bineval_dspy.meta.config import load_config
    from bineval_dspy.verifiers.registry import VERIFIERS

    own_file(tmp_path, EMOJI)
    config = tmp_path / "meta.toml"
    config.write_text('run_dir = "runs"\nverifiers = ["my_checks.py"]\n[dataset]\nkind = "summeval"\nsummaries = "s.jsonl"\narticles = "a.jsonl"\n[[methods]]\nname = "r"\nkind = "rouge_l"\n')
    assert load_config(config).verifiers == [(tmp_path / "my_checks.py").resolve()]
    assert "mine:no_emoji" in VERIFIERS


PLUGIN_TEST = '''
import pytest


def test_a_row_names_the_projects_own_verifier(bineval):
    row = {"key": 1, "prompt": "Invite them.", "instruction_id_list": ["mine:no_emoji"], "kwargs": [{}]}
    bineval.assert_passes("Come to the party!", row=row)
    with pytest.raises(AssertionError, match="no_emoji returned False"):
        bineval.assert_passes("Come \\U0001F389", row=row)
'''


@pytest.mark.parametrize("how", ["ini", "option"])
def test_the_pytest_plugin_loads_the_projects_verifier_files(pytester, monkeypatch, how):
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[2]))  # this checkout's plugin, not another install's
    pytester.makepyfile(test_invites=PLUGIN_TEST)
    (pytester.path / "checks").mkdir()
    own_file(pytester.path / "checks", EMOJI)
    if how == "ini":
        pytester.makeini("[pytest]\nbineval_verifiers = checks/my_checks.py\n")
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    else:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--bineval-verifiers", "checks/my_checks.py")
    result.assert_outcomes(passed=1)


QUITTING = ["mine:exit0", "mine:exit3", "mine:interrupt"]


def test_judge_with_a_verifier_that_exits_keeps_every_row_unanswered_and_exits_1(tmp_path, lm, capsys):
    """Issue 55, break 1: `sys.exit(0)` inside a verifier ended `judge --no-fast-path` with exit 0 and 2 of 4 rows;
    `sys.exit(3)` with exit 3 and no line."""
    from tests.verifiers.test_guard import QUITTERS

    quitters = own_file(tmp_path, QUITTERS, "quitters.py")
    for verifier in QUITTING:
        folder = tmp_path / verifier.replace(":", "_")
        folder.mkdir()
        args = [*judge_files(folder, verifier, ["One.", "Two.", "Three.", "Four."]), "--verifiers", str(quitters), "--no-fast-path"]
        assert cli.main(args) == 1, verifier
        found = verdicts(folder)
        assert len(found) == 4 and {v["answer"] for v in found} == {"unanswered"}
        assert found[0]["explanation"].startswith(f"verifier failed: {verifier} raised ")
        assert "4 row(s) incomplete" in " ".join("".join(capsys.readouterr()).split())
        header = json.loads((folder / "out.jsonl.run.json").read_text())
        assert header["status"] == "incomplete"  # the minor item: never "finished" with rows to judge again


def test_verify_says_a_verifier_exited_and_writes_every_row(tmp_path, capsys):
    from tests.verifiers.test_guard import QUITTERS

    quitters = own_file(tmp_path, QUITTERS, "quitters.py")
    suite, responses, out = tmp_path / "suite.jsonl", tmp_path / "responses.jsonl", tmp_path / "results.jsonl"
    suite.write_text("".join(json.dumps({"key": k, "prompt": "p", "instruction_id_list": [v], "kwargs": [{}]}) + "\n" for k, v in enumerate(QUITTING)))
    responses.write_text("".join(json.dumps({"key": k, "response": "Come"}) + "\n" for k in range(len(QUITTING))))
    assert cli.main(["verify", "--suite", str(suite), "--responses", str(responses), "-o", str(out), "--verifiers", str(quitters)]) == 1
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["follow_instruction_list"] for row in rows] == [[None]] * 3
    assert [row["ungraded"] for row in rows] == [[f"instruction_id_list.0: verifier failed: {v} raised {c}"] for v, c in
                                                 zip(QUITTING, ["SystemExit: 0", "SystemExit: 3", "KeyboardInterrupt"])]  # fmt: skip
    assert "3 instruction(s) ungraded" in " ".join(capsys.readouterr().err.split())
    assert json.loads((tmp_path / "results.jsonl.run.json").read_text())["status"] == "incomplete"


def test_best_of_n_with_a_verifier_that_exits_writes_every_row_and_exits_1(tmp_path, monkeypatch, capsys):
    from tests.programs.test_refine import stick_script
    from tests.verifiers.test_guard import QUITTERS

    route_cli_lm(monkeypatch, stick_script(generate=lambda prompt: "A reply."))
    quitters = own_file(tmp_path, QUITTERS, "quitters.py")
    suite, out = tmp_path / "suite.jsonl", tmp_path / "out.jsonl"
    suite.write_text("".join(json.dumps({"key": k, "prompt": f"Write line {k}.", "instruction_id_list": [QUITTING[k % 3]], "kwargs": [{}]}) + "\n" for k in range(4)))
    args = ["generate", "--suite", str(suite), "--best-of", "2", "--threads", "1", "-o", str(out), "--verifiers", str(quitters)]
    assert cli.main(args) == 1
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 4
    assert all(any(c["answer"] == "unanswered" and c["judge"].startswith("code:mine:") for c in r["checks"]) for r in records)
