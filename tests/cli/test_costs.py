"""Cost accounting and budgets from the command line, with scripted LMs: the ``usage`` block in every JSON output,
per-output and per-run costs that add up, dollars from LiteLLM's bundled map, and ``--max-cost`` / ``--max-calls``
stopping judge, generate, optimize and meta-eval mid-run (exit 4) so that a rerun finishes with no LM call repeated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dspy.lm15 import Usage

from bineval_dspy import cli
from bineval_dspy.core.errors import ExitCode
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.lm.prices import price_of
from bineval_dspy.lm.usage import Cost, total
from bineval_dspy.tune import KINDS
from tests.conftest import route_cli_lm, verdict_json
from tests.meta.fixtures import CHECKLIST, judge_script, summeval_files
from tests.optimize.test_optimizer import World
from tests.programs.test_generator import echo, write_suite
from tests.programs.test_refine import stick_script
from tests.tune.fakes import fake_runner

PRICED = "openai/gpt-4o-mini"
USAGE = Usage(input_tokens=100, output_tokens=10)
BLOCK = {"lm_calls", "tokens", "prompt_tokens", "completion_tokens", "cached_prompt_tokens", "usd", "unpriced_calls", "throttled_calls", "retried_calls", "cache_hits", "cache_hit_tokens"}


def per_call_usd() -> float:
    price = price_of(PRICED)
    assert price is not None
    return 100 * price.input + 10 * price.output


def assert_block(block: dict) -> Cost:
    """A ``usage`` block with every field, as a Cost."""
    assert set(block) == BLOCK, block
    return Cost.model_validate(block)


def stopped_line(err: str) -> str:
    (line,) = [line for line in err.splitlines() if line.startswith("stopped: ")]
    return line


# -- judge ---------------------------------------------------------------------------------------------------------
@pytest.fixture
def judge_files(tmp_path: Path) -> tuple[Path, Path]:
    checklist = Checklist(task="t", dimensions=["d"], questions=[Question(text="Is it short?", dimension="d"), Question(text="Is it kind?", dimension="d")])
    (tmp_path / "checklist.json").write_text(checklist.model_dump_json())
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"input": f"in {n}", "output": f"out {n}"}) + "\n" for n in range(3)))
    return tmp_path / "checklist.json", rows


def judge_args(files: tuple[Path, Path], out: Path, *extra: str) -> list[str]:
    return ["judge", "--checklist", str(files[0]), "--data", str(files[1]), "-o", str(out), *extra]


def test_judge_rows_carry_their_cost_and_the_run_total_adds_up(tmp_path, judge_files, monkeypatch, capsys):
    lm = route_cli_lm(monkeypatch, lambda r: verdict_json("yes"), model=PRICED, usage=USAGE)
    out = tmp_path / "out.jsonl"
    assert cli.main(judge_args(judge_files, out)) == ExitCode.OK
    costs = [assert_block(json.loads(line)["bineval"]["usage"]) for line in out.read_text().splitlines()]
    assert all(c.lm_calls == 2 and c.prompt_tokens == 200 and c.completion_tokens == 20 and c.priced for c in costs)
    assert all(c.usd == pytest.approx(2 * per_call_usd(), rel=1e-12) for c in costs)
    run = total(costs)
    assert run.lm_calls == len(lm.engine.requests) == 6
    assert f"cost: {run.summary()}" in " ".join(capsys.readouterr().err.split())  # the console line is the rows' sum


def test_judge_stops_at_its_dollar_budget_and_a_rerun_finishes_without_repeating_calls(tmp_path, judge_files, monkeypatch, capsys):
    lm = route_cli_lm(monkeypatch, lambda r: verdict_json("yes"), model=PRICED, usage=USAGE)
    out = tmp_path / "out.jsonl"
    row = 2 * per_call_usd()
    assert cli.main(judge_args(judge_files, out, "--max-cost", f"{2.5 * row:.10f}")) == ExitCode.BUDGET
    assert len(out.read_text().splitlines()) == 2 and len(lm.engine.requests) == 4  # a third row would pass the budget
    line = stopped_line(capsys.readouterr().err)
    assert "budget reached (--max-cost" in line and "1 of 3 row(s) not started" in line and "rerun the same command" in line
    # the budget is no part of the resume fingerprint: a rerun with a bigger one goes on where the first stopped
    assert cli.main(judge_args(judge_files, out, "--max-cost", "1")) == ExitCode.OK
    assert len(out.read_text().splitlines()) == 3 and len(lm.engine.requests) == 6
    assert "resuming: 2 complete row(s)" in capsys.readouterr().err


def test_judge_stops_at_its_call_budget(tmp_path, judge_files, monkeypatch, capsys):
    lm = route_cli_lm(monkeypatch, lambda r: verdict_json("yes"))
    out = tmp_path / "out.jsonl"
    assert cli.main(judge_args(judge_files, out, "--max-calls", "3", "--threads", "1")) == ExitCode.BUDGET
    assert len(out.read_text().splitlines()) == 1 and len(lm.engine.requests) == 2  # 2 + 2 calls would pass 3
    assert "2 of 3 row(s) not started" in stopped_line(capsys.readouterr().err)
    assert cli.main(judge_args(judge_files, out)) == ExitCode.OK
    assert len(lm.engine.requests) == 6


def test_a_dollar_budget_on_an_lm_without_a_price_is_refused_before_any_call(tmp_path, judge_files, monkeypatch, capsys):
    lm = route_cli_lm(monkeypatch, lambda r: verdict_json("yes"))
    assert cli.main(judge_args(judge_files, tmp_path / "out.jsonl", "--max-cost", "0.5")) == ExitCode.INPUT
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: --max-cost: the price of LM 'custom/scripted' is unknown (LiteLLM's bundled price map lacks it; "
        "embedded models and servers at --api-base have none); use --max-calls"
    )
    assert lm.engine.requests == []


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "x"])
def test_bad_budgets_are_one_line_errors(tmp_path, judge_files, value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(judge_args(judge_files, tmp_path / "out.jsonl", "--max-cost", value))
    assert exit_info.value.code == 2 and "--max-cost" in capsys.readouterr().err


# -- generate ------------------------------------------------------------------------------------------------------
def test_generate_rows_carry_their_cost_and_a_budget_stops_then_resumes(tmp_path, monkeypatch, capsys):
    lm = route_cli_lm(monkeypatch, stick_script(generate=echo), model=PRICED, usage=USAGE)
    suite, out = write_suite(tmp_path / "suite.jsonl"), tmp_path / "responses.jsonl"
    args = ["generate", "--suite", str(suite), "-o", str(out)]
    assert cli.main([*args, "--max-calls", "1"]) == ExitCode.BUDGET
    assert len(out.read_text().splitlines()) == 1 and len(lm.engine.requests) == 1
    assert "2 of 3 row(s) not started" in stopped_line(capsys.readouterr().err)
    assert cli.main([*args, "--max-calls", "10"]) == ExitCode.OK
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and len(lm.engine.requests) == 3  # no row generated twice
    assert all(assert_block(r["usage"]).usd == pytest.approx(per_call_usd(), rel=1e-12) for r in rows)


# -- optimize ------------------------------------------------------------------------------------------------------
OPTIMIZE = """
mode = "self"
run_dir = "{run_dir}"
[data]
suite = "suite.jsonl"
train = 3
val = 2
test = 1
[program]
instructions = "Answer the request."
[optimizer]
max_iterations = 2
"""
SUITE_ROW = {"instruction_id_list": ["detectable_format:number_bullet_lists"], "kwargs": [{"num_bullets": 2}]}


def optimize_config(tmp_path: Path, run_dir: str) -> Path:
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", **SUITE_ROW}) + "\n" for i in range(6)))
    path = tmp_path / f"{run_dir}.toml"
    path.write_text(OPTIMIZE.format(run_dir=run_dir))
    return path


def test_optimize_records_cost_per_iteration_and_a_budget_stop_resumes_with_no_call_repeated(tmp_path, monkeypatch, capsys, words_embedder):
    whole = route_cli_lm(monkeypatch, World(), model=PRICED, usage=USAGE)
    assert cli.main(["optimize", str(optimize_config(tmp_path, "whole"))]) == ExitCode.OK
    audit = json.loads((tmp_path / "whole" / "audit.json").read_text())
    parts = [assert_block(audit["start"]["usage"]), *(assert_block(it["usage"]) for it in audit["iterations"])]
    run = assert_block(audit["usage"])
    test = assert_block(json.loads((tmp_path / "whole" / "results.json").read_text())["usage"])  # the test split's scoring
    assert run == total(parts) and run.lm_calls + test.lm_calls == len(whole.engine.requests)
    assert run.usd == pytest.approx(run.lm_calls * per_call_usd())
    assert all(it["lm_calls"] == it["usage"]["lm_calls"] for it in audit["iterations"])  # as earlier audits named them

    stopped = route_cli_lm(monkeypatch, World(), model=PRICED, usage=USAGE)
    config = optimize_config(tmp_path, "stopped")
    assert cli.main(["optimize", str(config), "--max-calls", "2"]) == ExitCode.BUDGET  # after the start's 2 calls
    line = stopped_line(capsys.readouterr().err)
    assert "--max-calls 2" in line and "iteration 1: train evaluation not started" in line
    assert len(stopped.engine.requests) == 2
    assert cli.main(["optimize", str(config), "--max-calls", "1000"]) == ExitCode.OK
    assert len(stopped.engine.requests) == len(whole.engine.requests)  # the rerun redid nothing
    resumed = json.loads((tmp_path / "stopped" / "audit.json").read_text())
    assert resumed["best"] == audit["best"] and resumed["usage"] == audit["usage"]


# -- meta-eval -----------------------------------------------------------------------------------------------------
META = """run_dir = "runs/meta"
[bootstrap]
resamples = 20
[dataset]
kind = "summeval"
summaries = "data/summaries.jsonl"
articles = "data/articles.jsonl"
[[methods]]
name = "bineval"
kind = "bineval"
checklist = "checklist.json"
[[methods]]
name = "rouge-l"
kind = "rouge_l"
"""


def test_meta_eval_stops_at_its_budget_and_a_rerun_scores_only_the_rest(tmp_path, monkeypatch, capsys):
    (tmp_path / "data").mkdir()
    summeval_files(tmp_path / "data")
    (tmp_path / "checklist.json").write_text(json.dumps(CHECKLIST))
    config = tmp_path / "meta.toml"
    config.write_text(META)
    lm = route_cli_lm(monkeypatch, judge_script, model=PRICED, usage=USAGE)
    assert cli.main(["meta-eval", str(config), "--max-calls", "12"]) == ExitCode.BUDGET  # 5 calls an output: 2 fit
    assert len(lm.engine.requests) == 10
    assert "16 of 18 score(s) not started" in stopped_line(capsys.readouterr().err)
    run_dir = tmp_path / "runs" / "meta"
    assert len((run_dir / "scores.jsonl").read_text().splitlines()) == 2
    assert cli.main(["meta-eval", str(config), "--max-cost", "1"]) == ExitCode.OK
    assert len(lm.engine.requests) == 9 * 5  # every output judged once
    scores = [json.loads(line) for line in (run_dir / "scores.jsonl").read_text().splitlines()]
    by_method = {m: total(assert_block(s["usage"]) for s in scores if s["method"] == m) for m in ("bineval", "rouge-l")}
    assert by_method["rouge-l"] == Cost() and by_method["bineval"].lm_calls == 45
    results = json.loads((run_dir / "results.json").read_text())
    assert {m["name"]: Cost.model_validate(m["usage"]) for m in results["methods"]} == by_method
    assert assert_block(results["usage"]) == total(by_method.values())
    assert "## Cost" in (run_dir / "results.md").read_text()


# -- the other outputs ---------------------------------------------------------------------------------------------
def test_tune_results_carry_each_trials_cost_and_the_studys(tmp_path, monkeypatch):
    monkeypatch.setitem(KINDS, "fake", fake_runner)
    config = tmp_path / "tune.toml"
    config.write_text('name = "demo"\ntrials = 2\n[objectives]\nloss = "minimize"\n[space]\nx = { type = "float", low = 0.0, high = 1.0 }\n[run]\nkind = "fake"\n')
    assert cli.main(["tune", str(config), "--max-calls", "5"]) == ExitCode.OK  # the fake kind makes no LM call
    results = json.loads((tmp_path / "runs" / "demo" / "results.json").read_text())
    assert all(assert_block(t["usage"]) == Cost() for t in results["trials"]) and assert_block(results["usage"]) == Cost()


def test_a_second_demo_in_the_same_folder_replaces_its_own_results_and_says_so(tmp_path, monkeypatch, capsys):
    """Issue 47: a second `bineval demo` failed on the first one's demo-results.json ("exists; use --overwrite")."""
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes"))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["demo"]) in (ExitCode.OK, ExitCode.INCOMPLETE)
    first = (tmp_path / "demo-results.json").read_text()
    capsys.readouterr()
    assert cli.main(["demo"]) in (ExitCode.OK, ExitCode.INCOMPLETE)
    assert "replacing demo-results.json: an earlier demo's results" in " ".join(capsys.readouterr().err.split())
    assert json.loads((tmp_path / "demo-results.json").read_text()).keys() == json.loads(first).keys()
    (tmp_path / "demo-results.json").write_text('{"mine": 1}')  # not a demo's: never replaced unasked
    assert cli.main(["demo"]) == ExitCode.INPUT
    assert "exists; use --overwrite" in capsys.readouterr().err
    assert json.loads((tmp_path / "demo-results.json").read_text()) == {"mine": 1}


def test_demo_results_carry_the_cost_of_each_summary_and_the_run(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes"), model=PRICED, usage=USAGE)
    out = tmp_path / "demo.json"
    assert cli.main(["demo", "-o", str(out)]) in (ExitCode.OK, ExitCode.INCOMPLETE)
    saved = json.loads(out.read_text())
    printed = " ".join(capsys.readouterr().out.split())
    assert all(" ".join(r["summary"].split())[:60] in printed for r in saved["results"])  # the summaries it judged (issue 33, item 15)
    each = [assert_block(r["usage"]) for r in saved["results"]]
    assert assert_block(saved["usage"]) == assert_block(saved["checklist_usage"]) + total(each) and total(each).lm_calls > 0
