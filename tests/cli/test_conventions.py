"""Issue 20's conventions: results on stdout and notes on stderr, no silent replacement, complete progress, a
summary of what failed, located resume refusals, honest prices, and suites whose keys keep their JSON type."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.cli.main import build_parser
from bineval_dspy.core.fingerprint import first_difference
from bineval_dspy.core.schema import Checklist, Question
from tests.conftest import question_of, route_cli_lm, verdict_json


def write_checklist(path: Path) -> Path:
    checklist = Checklist(task="t", dimensions=["d"], questions=[Question(text="Is it short?", dimension="d"), Question(text="Is it kind?", dimension="d")])
    path.write_text(checklist.model_dump_json())
    return path


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    rows = [{"input": "a", "output": "b"}, {"input": "c", "output": "  "}, {"input": "e", "output": "f"}]
    return write_checklist(tmp_path / "checklist.json"), write_rows(tmp_path / "rows.jsonl", rows), tmp_path / "out.jsonl"


def kind_is_no(request) -> str:
    """'no' to "Is it kind?", 'yes' to everything else: one question fails on every row."""
    return verdict_json("no" if "kind" in question_of(request) else "yes")


@pytest.fixture
def lm(monkeypatch):
    return route_cli_lm(monkeypatch, kind_is_no)


def judge(files: tuple[Path, Path, Path], *extra: str) -> list[str]:
    checklist, data, out = files
    return ["judge", "--checklist", str(checklist), "--data", str(data), "-o", str(out), *extra]


def test_judge_results_go_to_stdout_and_notes_to_stderr(files, lm, capsys):
    assert cli.main(judge(files)) == 0
    captured = capsys.readouterr()
    assert "mean scores over 3 row(s)" in captured.out and "wrote 3 row(s)" in captured.out
    assert "cost: " in captured.err and "cost: " not in captured.out


def test_the_final_progress_frame_is_complete(files, lm, capsys):
    assert cli.main(judge(files)) == 0
    err = capsys.readouterr().err
    assert "3/3" in err and "2/3" not in err.splitlines()[-3:]


def test_judge_ends_with_the_rows_and_questions_that_failed_most(files, lm, capsys):
    assert cli.main(judge(files)) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "rows that failed most (row: failed questions): line 1: 1, line 2: 1, line 3: 1" in out
    assert "questions that failed most" in out and "3/3" in out and "Is it kind?" in out


def test_the_rows_that_failed_most_are_named_by_their_id(tmp_path, lm, capsys):
    """Issue 33, item 15: a data row's own id, not its line, where it has one."""
    rows = [{"id": "doc-7", "input": "a", "output": "b"}, {"input": "c", "output": "d"}]
    files = write_checklist(tmp_path / "checklist.json"), write_rows(tmp_path / "rows.jsonl", rows), tmp_path / "out.jsonl"
    assert cli.main(judge(files)) == 0
    assert "rows that failed most (row: failed questions): doc-7: 1, line 2: 1" in " ".join(capsys.readouterr().out.split())


def test_empty_outputs_are_flagged_in_rows_and_summary(files, lm, capsys):
    assert cli.main(judge(files)) == 0
    rows = [json.loads(line) for line in files[2].read_text().splitlines()]
    assert [r["bineval"].get("empty_output", False) for r in rows] == [False, True, False]
    assert "1 row(s) have an empty output (data line(s) 2)" in " ".join(capsys.readouterr().err.split())


def test_judge_limit_takes_the_first_rows_and_a_later_run_resumes(files, lm, capsys):
    assert cli.main(judge(files, "--limit", "2")) == 0
    assert len(files[2].read_text().splitlines()) == 2
    assert cli.main(judge(files)) == 0
    assert len(files[2].read_text().splitlines()) == 3
    assert "resuming: 2 complete row(s)" in capsys.readouterr().err


def test_a_resume_refusal_names_the_field_with_old_and_new_value(files, lm, capsys):
    assert cli.main(judge(files)) == 0
    capsys.readouterr()
    assert cli.main(judge(files, "--cot")) == 2
    err = capsys.readouterr().err
    assert "made with other settings (judge.chain_of_thought: false -> true)" in err, err
    assert err.count("\n") == 1


def test_first_difference_descends_into_json_and_names_absent_fields():
    assert first_difference({"a": "x"}, {"a": "x"}) is None
    assert first_difference({"a": "x"}, {"a": "y"}) == "a: 'x' -> 'y'"
    assert first_difference({"j": '{"n": 1, "m": {"k": 2}}'}, {"j": '{"n": 1, "m": {"k": 3}}'}) == "j.m.k: 2 -> 3"
    assert first_difference({}, {"b": "z"}) == "b: (none) -> 'z'"


def test_a_resumed_run_on_an_unpriced_lm_says_price_unknown(files, lm, capsys):
    assert cli.main(judge(files)) == 0
    assert "price unknown" in capsys.readouterr().err
    assert cli.main(judge(files)) == 0  # nothing left to judge: no call, still no price
    err = capsys.readouterr().err
    assert "cost: 0 LM call(s)" in err and "price unknown" in err and "$0" not in err


def test_checklist_refuses_to_replace_a_file_without_overwrite(tmp_path, monkeypatch, capsys):
    lm = route_cli_lm(monkeypatch, lambda r: "{}")
    victim = tmp_path / "victim.json"
    victim.write_text('{"hand": "written"}')
    assert cli.main(["checklist", "--task", "Write a haiku", "-o", str(victim)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {victim}: exists; use --overwrite to replace it, or a new output path\n"
    assert victim.read_text() == '{"hand": "written"}' and not lm.engine.requests


SUITE = [
    {"key": 1, "prompt": "Say hi.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
    {"key": 2, "prompt": "Say bye.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
]


def test_verify_exits_1_when_a_suite_row_has_no_response_and_keeps_integer_keys(tmp_path, capsys):
    suite = write_rows(tmp_path / "suite.jsonl", SUITE)
    responses = write_rows(tmp_path / "responses.jsonl", [{"key": 1, "response": "hi"}])
    out = tmp_path / "results.jsonl"
    assert cli.main(["verify", "--suite", str(suite), "--responses", str(responses), "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert "1 suite row(s) had no response" in " ".join(captured.err.split())
    assert "prompt" in captured.out and "wrote 1 graded row(s)" in captured.out
    assert json.loads(out.read_text())["key"] == 1  # an integer key stays an integer


@pytest.mark.parametrize("command", ["verify", "report"])
def test_other_writers_refuse_to_replace_a_file_without_overwrite(tmp_path, capsys, command):
    suite = write_rows(tmp_path / "suite.jsonl", SUITE)
    responses = write_rows(tmp_path / "responses.jsonl", [{"key": 1, "response": "hi"}, {"key": 2, "response": "bye"}])
    results = tmp_path / "results.jsonl"
    assert cli.main(["verify", "--suite", str(suite), "--responses", str(responses), "-o", str(results)]) == 0
    if command == "verify":
        args = ["verify", "--suite", str(suite), "--responses", str(responses), "-o", str(results)]
        kept = results
    else:
        kept = tmp_path / "report.html"
        kept.write_text("<html>mine</html>")
        args = ["report", str(results), "-o", str(kept)]
    before = kept.read_text()
    capsys.readouterr()
    assert cli.main(args) == 2
    assert "exists; use --overwrite" in capsys.readouterr().err and kept.read_text() == before
    assert cli.main([*args, "--overwrite"]) == 0


def test_show_and_report_read_verify_and_generate_output(tmp_path, capsys):
    suite = write_rows(tmp_path / "suite.jsonl", SUITE)
    generated = write_rows(tmp_path / "responses.jsonl", [
        {"key": 1, "prompt": "Say hi.", "response": "hi, you"},
        {"key": 2, "prompt": "Say bye.", "response": "bye", "score": 1.0, "checks": [
            {"question": "Is there no comma?", "dimension": "d", "answer": "yes", "judge": "code:punctuation:no_comma", "explanation": "none found"}]},
    ])
    verified = tmp_path / "results.jsonl"
    assert cli.main(["verify", "--suite", str(suite), "--responses", str(generated), "-o", str(verified)]) == 0
    capsys.readouterr()
    assert cli.main(["show", str(verified), str(generated)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "`bineval verify` output" in out and "`bineval generate` output" in out
    assert "punctuation:no_comma" in out and "Is there no comma?" in out
    report = tmp_path / "report.html"
    assert cli.main(["report", str(verified), str(generated), "-o", str(report)]) == 0
    assert "punctuation:no_comma" in report.read_text()


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_option_has_help_and_shows_its_default():
    missing, hidden = [], []
    for name, command in _commands().items():
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            where = f"{name} {'/'.join(action.option_strings) or action.dest}"
            if not action.help:
                missing.append(where)
            elif action.default not in (None, False, argparse.SUPPRESS) and "default" not in action.help:
                hidden.append(where)
    assert not missing and not hidden, (missing, hidden)
    assert "(default: checklist.json)" in _commands()["checklist"].format_help()


@pytest.mark.parametrize("command, model", [
    ("meta-eval", "bineval_dspy.meta.config.MetaEvalConfig"),
    ("optimize", "bineval_dspy.optimize.config.RunConfig"),
    ("tune", "bineval_dspy.tune.config.TuneConfig"),
    ("experiment", "bineval_dspy.experiment.config.ExperimentConfig"),
])
def test_config_commands_print_a_commented_example_of_every_key(command, model, capsys):
    import importlib
    import tomllib

    assert "--example" in " ".join(_commands()[command].format_help().split())
    with pytest.raises(SystemExit) as stop:
        cli.main([command, "--example"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    tomllib.loads(text)  # valid TOML: a starting point to edit
    module, name = model.rsplit(".", 1)
    fields = [f for f, info in getattr(importlib.import_module(module), name).model_fields.items() if not info.exclude]
    assert [f for f in fields if f"# {f}:" not in text and f"[{f}" not in text] == []


def test_verifiers_lists_ids_with_their_rule_and_kwargs(capsys):
    assert cli.main(["verifiers"]) == 0
    captured = capsys.readouterr()
    assert "97 verifier(s), 71 of them enforceable while decoding" in " ".join(captured.err.split())
    # an IFBench id no decoder can make true says why (issue 54)
    assert "not enforceable: the share of the reply's character trigrams" in " ".join(captured.out.split())
    assert len([line for line in captured.out.splitlines() if line and not line.startswith(" ")]) >= 97
    assert cli.main(["verifiers", "LOWERCASE"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "change_case:english_lowercase" in out and "lowercase" in out and "[no kwargs]" in out and "enforced by mask" in out
    assert cli.main(["verifiers", "number_words"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Answer with {relation} {num_words} words." in out and "num_words=required" in out
    assert cli.main(["verifiers", "no-such-rule"]) == 2
    assert capsys.readouterr().err.startswith("error: no verifier id or rule holds 'no-such-rule'")


def test_judge_dry_run_plans_every_lm_question_and_calls_no_lm(files, lm, capsys):
    checklist, data, out = files
    assert cli.main(judge(files, "--dry-run")) == 0
    line = " ".join(capsys.readouterr().out.split())
    assert line.startswith("dry run: judge 3 row(s) x 2 LM question(s): 6 LM call(s), ")
    assert "counted with smollm2's tokenizer" in line and "price unknown" in line and "no LM was called" in line
    assert not lm.engine.requests and not out.exists()
    assert cli.main(judge(files, "--limit", "1")) == 0  # one row done: a dry run plans the rest only
    capsys.readouterr()
    assert cli.main(judge(files, "--dry-run", "--samples", "3", "--lm", "openai/gpt-4o-mini")) == 0
    line = " ".join(capsys.readouterr().out.split())
    assert "judge 2 row(s) x 2 LM question(s) (1 complete row(s)" in line and ": 12 LM call(s)," in line
    assert "estimated at ~4 characters a token" in line and "at most $0.00" in line


def test_judge_dry_run_counts_one_call_a_row_under_batch_scoring(files, lm, capsys):
    assert cli.main(judge(files, "--dry-run", "--scoring", "batch")) == 0
    line = " ".join(capsys.readouterr().out.split())
    assert line.startswith("dry run: judge 3 row(s) x 2 LM question(s): 3 LM call(s), ")
    assert cli.main(judge(files, "--dry-run", "--scoring", "batch", "--samples", "3", "--lm", "openai/gpt-4o-mini")) == 0
    assert ": 9 LM call(s)," in " ".join(capsys.readouterr().out.split())
    assert not lm.engine.requests


def test_generate_dry_run_plans_each_row_and_calls_no_lm(tmp_path, lm, capsys):
    suite = write_rows(tmp_path / "suite.jsonl", SUITE)
    out = tmp_path / "responses.jsonl"
    assert cli.main(["generate", "--suite", str(suite), "-o", str(out), "--dry-run"]) == 0
    line = " ".join(capsys.readouterr().out.split())
    assert line.startswith("dry run: generate 2 row(s): 2 LM call(s), ") and "counted with smollm2's tokenizer" in line
    assert "at most 256 completion tokens a call" in line and not lm.engine.requests and not out.exists()
    assert cli.main(["generate", "--suite", str(suite), "-o", str(out), "--dry-run", "--best-of", "2"]) == 0
    line = " ".join(capsys.readouterr().out.split())
    assert "with STICK (best of 2, refine 0; at most)" in line and "estimated" in line


def test_optimize_dry_run_bounds_the_whole_loop_and_calls_no_lm(tmp_path, lm, monkeypatch, capsys):
    from bineval_dspy.core.embeddings import use_embedder

    row = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    write_rows(tmp_path / "suite.jsonl", [{"key": i, "prompt": f"Name a fruit ({i}).", **row} for i in range(6)])
    config = tmp_path / "run.toml"
    config.write_text('mode = "self"\nrun_dir = "runs/demo"\n[data]\nsuite = "suite.jsonl"\ntrain = 3\nval = 2\ntest = 1\n'
                      '[program]\nllm_questions = [2, 3]\n[optimizer]\nmax_iterations = 2\nmax_failures = 4\nlessons_per_iteration = 1\n')
    with use_embedder(lambda texts: pytest.fail("a dry run embeds nothing")):
        assert cli.main(["optimize", str(config), "--dry-run"]) == 0
    line = " ".join(capsys.readouterr().out.split())
    # evaluations: val 2 + 2 x (train 3 + val 2) + test 2 x 1 = 14 examples x (1 response + 3 questions + 1 writer) + 2 x (4 + 1) notes
    assert "optimize (self) at most: 2 iteration(s) over 3 train, 2 val and 1 test example(s), 5 call(s) an example: 80 LM call(s)" in line
    assert "(counted with smollm2's tokenizer; note-taking and judge prompts estimated)" in line and "no LM was called" in line
    assert not lm.engine.requests and not (tmp_path / "runs").exists()


def test_meta_eval_dry_run_counts_each_method_on_each_output(tmp_path, lm, capsys):
    from tests.meta.fixtures import CHECKLIST, summeval_files

    (tmp_path / "data").mkdir()
    summeval_files(tmp_path / "data")
    (tmp_path / "checklist.json").write_text(json.dumps(CHECKLIST))
    config = tmp_path / "meta.toml"
    config.write_text('run_dir = "runs/meta"\n[dataset]\nkind = "summeval"\nsummaries = "data/summaries.jsonl"\narticles = "data/articles.jsonl"\n'
                      '[[methods]]\nname = "b"\nkind = "bineval"\nchecklist = "checklist.json"\nsamples = 2\n'
                      '[[methods]]\nname = "g"\nkind = "holistic"\n[[methods]]\nname = "r"\nkind = "rouge_l"\n')
    assert cli.main(["meta-eval", str(config), "--dry-run"]) == 0
    line = " ".join(capsys.readouterr().out.split())
    # 9 outputs x (5 questions x 2 samples + 4 dimensions); rouge calls no LM
    assert line.startswith("dry run: meta-eval: 2 LM method(s) on 9 output(s) (a resume skips finished scores): 126 LM call(s),"), line
    assert not lm.engine.requests and not (tmp_path / "runs").exists()


def _run_config(tmp_path: Path, extra: str = "") -> Path:
    row = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    write_rows(tmp_path / "suite.jsonl", [{"key": i, "prompt": f"Name a fruit ({i}).", **row} for i in range(6)])
    config = tmp_path / "run.toml"
    config.write_text('mode = "self"\nrun_dir = "runs/demo"\n[data]\nsuite = "suite.jsonl"\ntrain = 3\nval = 2\ntest = 1\n'
                      f'[optimizer]\nmax_iterations = 1\nmax_failures = 2\nlessons_per_iteration = 1\n{extra}')
    return config


def test_experiment_and_tune_dry_runs_add_up_their_parts(tmp_path, lm, capsys):
    # optimize alone: evaluations val 2 + 1 x (3 + 2) + test 2 x 1 = 9 examples, 1 call each (code-checked), + 3 notes
    assert cli.main(["optimize", str(_run_config(tmp_path)), "--dry-run"]) == 0
    assert ": 12 LM call(s)," in " ".join(capsys.readouterr().out.split())
    experiment = _run_config(tmp_path, '[[arms]]\nname = "start"\nkind = "start"\n[[arms]]\nname = "opt"\nkind = "bineval"\n'
                                       '[[arms]]\nname = "best"\nkind = "best_of"\nn = 4\n').rename(tmp_path / "exp.toml")
    assert cli.main(["experiment", str(experiment), "--dry-run"]) == 0
    line = " ".join(capsys.readouterr().out.split())
    assert "experiment at most: 3 arm(s), 1 test example(s)" in line and ": 17 LM call(s)," in line  # 1 + 12 + 4
    # issue 33, item 14: a GEPA arm at calls_like is counted: opt's 10 optimization calls (12 less its 2 test
    # evaluations) give a budget of max(2 + 2 x 3, round(10 x 6 / 7)) = 9 metric calls, 2 reflections, 1 test
    experiment.write_text(experiment.read_text() + '[[arms]]\nname = "gepa"\nkind = "gepa"\ncalls_like = "opt"\n')
    assert cli.main(["experiment", str(experiment), "--dry-run"]) == 0
    line = " ".join(capsys.readouterr().out.split())
    assert ": 29 LM call(s)," in line and "counted with smollm2's tokenizer; note-taking prompts and GEPA's reflections estimated" in line
    _run_config(tmp_path)
    study = tmp_path / "tune.toml"
    study.write_text('name = "s"\ntrials = 3\n[objectives]\nval_score = "maximize"\n[space.min_delta]\ntype = "float"\nlow = 0.0\nhigh = 0.1\n'
                     '[run]\nkind = "optimizer"\nconfig = "run.toml"\n')
    code = cli.main(["tune", str(study), "--dry-run"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "tune: 3 optimizer trial(s) at most" in " ".join(captured.out.split()) and ": 36 LM call(s)," in " ".join(captured.out.split())
    assert not lm.engine.requests and not (tmp_path / "runs").exists()


def test_optimize_prints_its_trajectory_on_stdout_and_its_cost_on_stderr(tmp_path, monkeypatch, capsys, words_embedder):
    from tests.optimize.test_optimizer import World

    route_cli_lm(monkeypatch, World())
    assert cli.main(["optimize", str(_run_config(tmp_path))]) == 0
    captured = capsys.readouterr()
    assert "== optimizer run:" in captured.out and "as its audit records it" not in captured.out
    assert "as its audit records it" in " ".join(captured.err.split()) and "== optimizer run:" not in captured.err


def test_the_dry_runs_tokenizer_prints_nothing_of_its_own(capfd):
    """A vocabulary-only llama.cpp context warned of its 0-token training context on every dry run's stderr."""
    from bineval_dspy.lm import estimate

    estimate._embedded_counter.cache_clear()
    count, exact = estimate.token_counter("smollm2")
    assert exact and count("hello world") == 2
    assert capfd.readouterr().err == ""


def test_show_and_report_count_verify_output_by_instruction_id_not_position(tmp_path, capsys):
    """Rows list their instructions in any order: the per-question view adds them up by id (issue 33, item 1)."""
    lower, comma = "change_case:english_lowercase", "punctuation:no_comma"
    suite = write_rows(tmp_path / "suite.jsonl", [
        {"key": 1, "prompt": "Say hi.", "instruction_id_list": [comma, lower], "kwargs": [{}, {}]},
        {"key": 2, "prompt": "Say bye.", "instruction_id_list": [lower], "kwargs": [{}]},
        {"key": 3, "prompt": "Say yo.", "instruction_id_list": [lower, comma], "kwargs": [{}, {}]},
    ])  # fmt: skip
    responses = write_rows(tmp_path / "responses.jsonl", [
        {"key": 1, "response": "hi, you"}, {"key": 2, "response": "bye"}, {"key": 3, "response": "yo there my good friend"},
    ])  # fmt: skip
    verified = tmp_path / "results.jsonl"
    cli.main(["verify", "--suite", str(suite), "--responses", str(responses), "-o", str(verified)])
    capsys.readouterr()
    assert cli.main(["show", str(verified)]) == 0
    rows = {line.split()[1]: line.split()[2:5] for line in capsys.readouterr().out.splitlines() if line.strip().startswith("instructions ") and ":" in line}
    assert rows[comma] == ["1", "1", "0"]  # row 1 has a comma, row 3 none
    assert sum(map(int, rows[lower])) == 3  # one verdict from each row


def test_checklist_example_is_a_valid_checklist_and_the_one_the_readme_shows(capsys):
    """Issue 33, item 8: a checklist a user can copy and edit, with working verifiers."""
    from bineval_dspy.judges.code import check_verifiers

    with pytest.raises(SystemExit) as exited:
        cli.main(["checklist", "--example"])  # --task is not needed to print it
    printed = capsys.readouterr().out
    checklist = Checklist.model_validate_json(printed)
    check_verifiers(checklist, "the example")
    assert exited.value.code == 0 and sum(q.verifier is not None for q in checklist.questions) == 2
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert json.loads(printed) == json.loads(readme.split("```json\n", 1)[1].split("```", 1)[0])


def test_judge_reads_the_fields_it_is_told_and_generate_output_as_it_is(tmp_path, lm, capsys):
    """Issue 33, item 10: judge a user's own generations with no jq step."""
    checklist = write_checklist(tmp_path / "checklist.json")
    generated = write_rows(tmp_path / "generated.jsonl", [{"key": 1, "prompt": "Say hi.", "response": "hi"}])
    named = write_rows(tmp_path / "named.jsonl", [{"q": "Say hi.", "a": "hello"}])
    out = tmp_path / "out.jsonl"
    assert cli.main(["judge", "--checklist", str(checklist), "--data", str(generated), "-o", str(out)]) == 0
    assert "judging each row's 'response' for its 'prompt' (generate output)" in " ".join(capsys.readouterr().err.split())
    assert all("Say hi." in r.messages[-1].text for r in lm.engine.requests)  # the prompt went in as the input
    row = json.loads(out.read_text())
    assert row["response"] == "hi" and row["bineval"]["complete"] and "input" not in row
    argv = ["judge", "--checklist", str(checklist), "--data", str(named), "-o", str(tmp_path / "named-out.jsonl"), "--input-field", "q", "--output-field", "a"]
    assert cli.main(argv) == 0
    assert json.loads((tmp_path / "named-out.jsonl").read_text())["bineval"]["complete"]
    assert "hello" in lm.engine.requests[-1].messages[-1].text
    assert cli.main([*argv[:-4], "--input-field", "q", "--output-field", "missing", "--overwrite"]) == 2
    assert "named.jsonl:1: missing field 'missing'" in capsys.readouterr().err


@pytest.mark.parametrize("command, missing", [
    ("optimize", "'mode', 'run_dir'"), ("experiment", "'mode', 'run_dir', 'arms'"),
    ("tune", "'name', 'trials', 'objectives', 'space', 'run'"),
])  # fmt: skip
def test_an_example_config_run_as_printed_names_every_key_to_fill_in_one_line(tmp_path, capsys, command, missing):
    """Issue 33, item 12: it named the first missing key only, so filling them in took one run per key."""
    with pytest.raises(SystemExit):
        cli.main([command, "--example"])
    config = tmp_path / "run.toml"
    config.write_text(capsys.readouterr().out)
    assert cli.main([command, str(config)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {config}: required fields missing: {missing}"


def test_dspys_warnings_show_once_and_its_info_lines_not_at_all(capfd):
    """Issue 33, item 13: DSPy's warnings came once per call, GEPA's INFO once per step. (Its "LM response was
    truncated" is now counted, not shown: issue 57, item 9, in tests/cli/test_gates.py.)"""
    import logging
    import uuid

    from bineval_dspy.core.console import quiet_dspy_logs

    quiet_dspy_logs()
    quiet_dspy_logs()  # a second command in the process adds no second filter
    fresh = f"LM call failed for a reason worth one line ({uuid.uuid4().hex})."  # unseen in this process
    for _ in range(3):
        logging.getLogger("dspy.clients.lm").warning(fresh)
        logging.getLogger("dspy.teleprompt.gepa.gepa").info("Iteration 3: new subsample score 2.0")
    err = capfd.readouterr().err
    assert err.count("worth one line") == 1 and "Iteration 3" not in err
