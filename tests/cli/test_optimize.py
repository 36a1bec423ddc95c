"""`bineval optimize CONFIG.toml` and `bineval show RUN_DIR` from the command line, with a scripted LM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from tests.conftest import route_cli_lm
from tests.optimize.test_optimizer import World

SUITE_ROW = {"instruction_id_list": ["detectable_format:number_bullet_lists"], "kwargs": [{"num_bullets": 2}]}


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.jsonl"
    path.write_text("\n".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", **SUITE_ROW}) for i in range(6)) + "\n")
    return path


@pytest.fixture
def scripted(monkeypatch, words_embedder):
    return route_cli_lm(monkeypatch, World())


def write_config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(body)
    return path


def test_optimize_then_show(tmp_path, suite, scripted, capsys):
    config = write_config(tmp_path, f"""
mode = "self"
run_dir = "runs/demo"
[data]
suite = "{suite.name}"
train = 3
val = 2
test = 1
[program]
instructions = "Answer the request."
[optimizer]
max_iterations = 2
""")
    assert cli.main(["optimize", str(config)]) == 0
    run = tmp_path / "runs" / "demo"
    audit = json.loads((run / "audit.json").read_text())
    assert audit["best"]["instructions"]["generate"].endswith("Use bullet points.")
    capsys.readouterr()
    assert cli.main(["show", str(run)]) == 0
    err = "".join(capsys.readouterr())
    assert "accepted" in err and "+Use bullet points." in err and "iteration 1: held-out gain +1.000" in err
    plan = json.loads((run / "plan.json").read_text())  # issue 33, item 14: the plan, held against what was spent
    spent = json.loads((run / "audit.json").read_text())["usage"]["lm_calls"] + json.loads((run / "results.json").read_text())["usage"]["lm_calls"]
    assert spent <= plan["calls"]
    line = " ".join(err.split())
    assert f"planned at most {plan['calls']} LM call(s)" in line and f"spent {spent} call(s) ({spent / plan['calls']:.0%} of the plan)" in line


@pytest.mark.parametrize(
    "body, message",
    [
        ('mode = "self"\nrun_dir = "r"\n[data]\ntrain = 2\n', "field 'data.suite' is required"),
        ('mode = "sideways"\nrun_dir = "r"\n[data]\n', "field 'mode'"),
        ('mode = "self"\nrun_dir = "r"\n[data]\nsuite = "suite.jsonl"\n[optimizer]\nmax_iterations = 0\n', "field 'optimizer.max_iterations'"),
        ('mode = "self"\nrun_dir = "r"\n[data]\nsuite = "suite.jsonl"\nbogus = 1\n', "unknown key(s): 'data.bogus'"),
        ('mode = "self"\nrun_dir = "r"\n[data]\nsuite = "suite.jsonl"\ntrain = 5\nval = 5\n', "fewer than train + val + test"),
        ("mode = = 1", "malformed TOML"),
        ('mode = "cross"\nrun_dir = "r"\n[data]\nexamples = "e.jsonl"\n[program.judge]\nscoring = "batch"\n', "field 'program.judge'"),
    ],
)
def test_bad_config_is_a_one_line_error(tmp_path, suite, scripted, capsys, body, message):
    config = write_config(tmp_path, body)
    assert cli.main(["optimize", str(config)]) == 2
    err = capsys.readouterr().err
    assert message in err and "run.toml" in err and len(err.strip().splitlines()) == 1


def test_show_needs_a_run_directory(tmp_path, capsys):
    assert cli.main(["show", str(tmp_path)]) == 2
    assert "no audit.json" in capsys.readouterr().err


def test_optimize_scores_the_test_split_and_generate_with_the_program_reproduces_it(tmp_path, scripted, capsys):
    suite = tmp_path / "suite.jsonl"
    suite.write_text("\n".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", **SUITE_ROW}) for i in range(9)) + "\n")
    config = write_config(tmp_path, f"""
mode = "self"
run_dir = "runs/demo"
test_every = true
[data]
suite = "{suite.name}"
train = 3
val = 2
test = 4
[program]
instructions = "Answer the request."
[optimizer]
max_iterations = 2
""")
    assert cli.main(["optimize", str(config)]) == 0
    run = tmp_path / "runs" / "demo"
    splits = json.loads((run / "splits.json").read_text())
    assert splits["group_by"] == "key" and len(splits["test"]) == 4
    assert not set(splits["test"]) & (set(splits["train"]) | set(splits["val"]))
    results = json.loads((run / "results.json").read_text())
    test = results["test"]
    assert results["splits"] == {"train": 3, "val": 2, "test": 4}
    assert test["start"]["score"] == 0.0 and test["final"]["score"] == 1.0
    assert test["difference"] == {"estimate": 1.0, "low": 1.0, "high": 1.0}
    assert test["final"]["accuracy"]["strict_prompt"]["estimate"] == 1.0
    assert [step["iteration"] for step in test["steps"]] == [1]  # the one accepted step, scored on test
    # the program file holds what the optimizer changed; generate + verify on the test split reproduce test.final
    program = json.loads((run / "program.json").read_text())
    assert program["kind"] == "generator" and program["instructions"]["generate"].endswith("Use bullet points.")
    responses = tmp_path / "test_responses.jsonl"
    argv = ["generate", "--suite", str(suite), "--program", str(run / "program.json"), "--split", "test", "-o", str(responses)]
    assert cli.main(argv) == 0
    assert sorted(str(json.loads(line)["key"]) for line in responses.read_text().splitlines()) == sorted(splits["test"])
    graded = tmp_path / "graded.jsonl"
    argv = ["verify", "--suite", str(suite), "--responses", str(responses), "-o", str(graded), "--program", str(run), "--split", "test"]
    capsys.readouterr()
    assert cli.main(argv) == 0
    assert "strict prompt accuracy 1.000: as the run recorded for this program on test" in " ".join(capsys.readouterr().err.split())
    rows = [json.loads(line) for line in graded.read_text().splitlines()]
    assert {str(row["key"]): row["follow_all_instructions"] for row in rows} == test["final"]["followed"]  # to the item
    followed = sum(row["follow_all_instructions"] is True for row in rows) / len(rows)
    assert followed == test["final"]["accuracy"]["strict_prompt"]["estimate"]
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps({"key": int(key), "response": "no list here"}) + "\n" for key in splits["test"]))
    assert cli.main([*argv[:4], str(other), "-o", str(tmp_path / "other-graded.jsonl"), *argv[7:]]) == 0
    assert "accuracy 0.000, where the run recorded 1.000 for this program on test" in " ".join(capsys.readouterr().err.split())
    capsys.readouterr()
    assert cli.main(["show", str(run)]) == 0
    assert "test split (4 items" in "".join(capsys.readouterr())


def test_explicit_split_files_and_a_leak_between_them(tmp_path, scripted, capsys):
    def write(name: str, keys: range) -> str:
        (tmp_path / name).write_text("\n".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", **SUITE_ROW}) for i in keys) + "\n")
        return name

    body = 'mode = "self"\nrun_dir = "runs/files"\n[data]\ntrain = "{}"\nval = "{}"\ntest = "{}"\n[optimizer]\nmax_iterations = 1\n'
    config = write_config(tmp_path, body.format(write("tr.jsonl", range(2)), write("va.jsonl", range(2, 4)), write("te.jsonl", range(4, 6))))
    assert cli.main(["optimize", str(config)]) == 0
    splits = json.loads((tmp_path / "runs" / "files" / "splits.json").read_text())
    assert (splits["train"], splits["val"], splits["test"]) == (["0", "1"], ["2", "3"], ["4", "5"])
    leaky = write_config(tmp_path, body.replace("files", "leaky").format("tr.jsonl", "va.jsonl", write("te2.jsonl", range(3, 5))))
    assert cli.main(["optimize", str(leaky)]) == 2
    assert "'3' is also in the val split" in capsys.readouterr().err


def test_files_and_counts_do_not_mix(tmp_path, scripted, capsys):
    config = write_config(tmp_path, 'mode = "self"\nrun_dir = "r"\n[data]\ntrain = "tr.jsonl"\nval = "va.jsonl"\ntest = 5\n')
    assert cli.main(["optimize", str(config)]) == 2
    assert "all as files or all as counts (train = 'tr.jsonl', val = 'va.jsonl' read as a file, test a count;" in capsys.readouterr().err
    config.write_text('mode = "self"\nrun_dir = "r"\n[data]\nsuite = "suite.jsonl"\ntrain = 2\nval = 2\ntest = "all"\n')  # probe 123
    assert cli.main(["optimize", str(config)]) == 2
    assert "(test = 'all' read as a file, train, val a count; test may also be \"rest\"" in capsys.readouterr().err


def test_the_test_split_is_the_rest_by_default_so_the_loop_closes(tmp_path, suite, scripted, capsys):
    """Issue 33, item 12: with no `test` key, every group not in train or val is held out and scored."""
    config = write_config(tmp_path, f'mode = "self"\nrun_dir = "runs/rest"\n[data]\nsuite = "{suite.name}"\ntrain = 3\nval = 2\n[optimizer]\nmax_iterations = 1\n')
    assert cli.main(["optimize", str(config)]) == 0
    run = tmp_path / "runs" / "rest"
    splits = json.loads((run / "splits.json").read_text())
    assert len(splits["test"]) == 1 and not set(splits["test"]) & set(splits["train"] + splits["val"])
    results = json.loads((run / "results.json").read_text())
    assert results["splits"]["test"] == 1 and results["test"]["final"]["items"] == 1
    # issue 34: every run file says what it is; issue 58: by its header alone
    assert "kind" not in results and "kind" not in json.loads((run / "audit.json").read_text())
    headers = [json.loads((run / f"{name}.run.json").read_text())["kind"] for name in ("results.json", "audit.json")]
    assert headers == ["optimizer-test", "optimizer-audit"]
    from bineval_dspy.report.runs import load_runs

    assert [r.kind for r in load_runs(run / "results.json")] == ["optimizer-audit"]  # the test results alone: their run
    none_left = write_config(tmp_path, f'mode = "self"\nrun_dir = "runs/none"\n[data]\nsuite = "{suite.name}"\ntrain = 4\nval = 2\n[optimizer]\nmax_iterations = 1\n')
    assert cli.main(["optimize", str(none_left)]) == 0  # nothing left: no test split, as with test = 0
    assert json.loads((tmp_path / "runs" / "none" / "results.json").read_text())["test"] is None


@pytest.mark.parametrize("damage", ["[1]", '{"what": "x"}', "{not json"])
def test_a_damaged_plan_is_one_located_line(tmp_path, suite, scripted, capsys, damage):
    """Issue 32 (probe 122): `show` on a run whose plan.json is damaged said a pydantic traceback."""
    config = write_config(tmp_path, f'mode = "self"\nrun_dir = "runs/p"\n[data]\nsuite = "{suite.name}"\ntrain = 3\nval = 2\n[optimizer]\nmax_iterations = 1\n')
    assert cli.main(["optimize", str(config)]) == 0
    (tmp_path / "runs" / "p" / "plan.json").write_text(damage)
    capsys.readouterr()
    assert cli.main(["show", str(tmp_path / "runs" / "p")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "plan.json" in err and err.count("\n") == 1


def test_verify_takes_a_finetune_run_and_its_arm_folder(tmp_path, capsys):
    """Issue 47, item 3: `verify --program RUN --split test` on a fine-tuning run (an experiment's results.json, the
    fine-tuned arm's program copied into RUN) or on the arm's folder grades the split and compares with the arm."""
    from bineval_dspy.experiment.runner import ArmResult, ExperimentResults
    from bineval_dspy.lm.usage import Cost
    from bineval_dspy.optimize.results import SplitScore
    from bineval_dspy.programs.state import ProgramFile, Splits
    from bineval_dspy.stats.bootstrap import Interval

    suite = tmp_path / "suite.jsonl"
    rows = [{"key": k, "prompt": f"Say {k} in lowercase.", "instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]} for k in "abcd"]
    suite.write_text("".join(json.dumps(row) + "\n" for row in rows))
    run = tmp_path / "ft"
    Splits(group_by="key", train=["a"], val=["b"], test=["c", "d"]).save(run)
    start = ProgramFile(kind="generator", instructions={"generate": "Answer."}, max_tokens=16)
    tuned = ProgramFile(kind="generator", instructions={"generate": "Answer in lowercase."}, max_tokens=16)
    tuned.save(run / "arms" / "finetuned" / "program.json")
    tuned.save(run / "program.json")

    def arm(name: str, program: ProgramFile, accuracy: float) -> ArmResult:
        score = SplitScore(score=accuracy, interval=Interval(estimate=accuracy), items=2, accuracy={"strict_prompt": Interval(estimate=accuracy)})
        return ArmResult(name=name, kind="start", optimization=Cost(), test_usage=Cost(), test=score, program=program)

    results = ExperimentResults(name="ft", mode="self", splits={"train": 1, "val": 1, "test": 2}, baseline="start",
                                arms=[arm("start", start, 0.0), arm("finetuned", tuned, 0.5)])
    (run / "results.json").write_text(results.model_dump_json())
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"key": "c", "response": "red leaves fall"}) + "\n" + json.dumps({"key": "d", "response": "Red Leaves Fall"}) + "\n")
    for program in (run, run / "arms" / "finetuned"):
        argv = ["verify", "--suite", str(suite), "--responses", str(responses), "-o", str(tmp_path / "g.jsonl"), "--program", str(program), "--split", "test", "--overwrite"]
        assert cli.main(argv) == 0
        err = " ".join(capsys.readouterr().err.split())
        assert "strict prompt accuracy 0.500: as the run recorded for this program on test" in err, err


def test_the_library_entry_runs_what_the_command_runs(tmp_path, suite, scripted, capsys):
    """Issue 58 item 3: ``run_optimize(config, lm_identity)`` is the run ``bineval optimize`` makes (the CLI calls
    it): the same audit, results and headers, the fingerprint given to the optimizer when it is built; a second
    call resumes into the same run, and a run on another LM is refused."""
    import dspy

    from bineval_dspy import load_config, run_optimize
    from bineval_dspy.core.errors import InputError

    body = f'mode = "self"\nrun_dir = "runs/lib"\n[data]\nsuite = "{suite.name}"\ntrain = 3\nval = 2\ntest = 1\n[program]\ninstructions = "Answer the request."\n[optimizer]\nmax_iterations = 2\n'
    config = load_config(write_config(tmp_path, body))
    with dspy.context(lm=scripted):
        results = run_optimize(config, "custom/scripted", progress=False)
    run = tmp_path / "runs" / "lib"
    audit = json.loads((run / "audit.json").read_text())
    assert audit["best"]["instructions"]["generate"].endswith("Use bullet points.")
    assert results.complete and results.test is not None and results.splits == {"train": 3, "val": 2, "test": 1}
    headers = {name: json.loads((run / f"{name}.run.json").read_text()) for name in ("audit.json", "results.json")}
    assert headers["audit.json"]["kind"] == "optimizer-audit" and headers["results.json"]["status"] == "finished"
    assert headers["audit.json"]["fingerprint"] == headers["results.json"]["fingerprint"] != {}
    with dspy.context(lm=scripted):
        again = run_optimize(config, "custom/scripted", progress=False)  # resumes: the recorded run, not a new one
    assert again.test == results.test and json.loads((run / "audit.json").read_text())["iterations"] == audit["iterations"]
    with dspy.context(lm=scripted), pytest.raises(InputError):
        run_optimize(config, "custom/another-lm", progress=False)
