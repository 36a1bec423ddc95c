"""Prompts x LMs as an experiment: arms on LMs of their own, every suite row a test row, graded by code (and a
checklist), a verdict matrix with paired intervals (what `bineval eval` was)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.lm import runtime, specs
from bineval_dspy.testing import scripted_lm, verdict_json
from tests.conftest import route_cli_lm
from tests.report import browser, builders

ROW = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
RUN = ("runs", "eval")


@pytest.fixture
def lms(monkeypatch):
    """Scripted LMs by spec: 'custom/comma' always writes a comma, 'custom/plain' never does; the config's own LM
    (the judge) says yes."""
    made = {"custom/comma": scripted_lm(lambda r: "hi, there", model="custom/comma"), "custom/plain": scripted_lm(lambda r: "hi there", model="custom/plain")}
    monkeypatch.setattr(specs, "make_lm", lambda spec, **kwargs: made[spec])
    monkeypatch.setattr(runtime, "make_lm", lambda spec, **kwargs: made[spec])  # the arms' own LMs are made here
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes"))
    return made


def suite(tmp_path: Path, rows: int = 4) -> None:
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps({"key": i, "prompt": f"Say hi ({i}).", **ROW}) + "\n" for i in range(rows)))


def write_config(tmp_path: Path, arms: str = "", head: str = "") -> Path:
    suite(tmp_path)
    arms = arms or "".join(
        f'[[arms]]\nname = "start@{name}"\nkind = "start"\nlm = "custom/{name}"\nprogram = {{instructions = "Answer."}}\n' for name in ("comma", "plain")
    )
    config = tmp_path / "eval.toml"
    config.write_text(f'mode = "self"\nrun_dir = "runs/eval"\nresamples = 200\n{head}[data]\nsuite = "suite.jsonl"\ntrain = 0\nval = 0\n{arms}')
    return config


def test_arms_on_their_own_lms_make_a_matrix_with_the_paired_difference(tmp_path, lms, capsys):
    config = write_config(tmp_path)
    assert cli.main(["experiment", str(config)]) == 0
    captured = capsys.readouterr()
    assert "eval: 4 test items; baseline start@comma" in captured.out and "matrix.md" in captured.err
    matrix = tmp_path.joinpath(*RUN, "matrix.md").read_text()
    assert "| row | start@comma | start@plain |" in matrix and "| 0 | n 0.00 | Y 1.00 |" in matrix and "vs start@comma +1.000" in matrix
    results = json.loads(tmp_path.joinpath(*RUN, "results.json").read_text())
    assert [a["name"] for a in results["arms"]] == ["start@comma", "start@plain"] and results["splits"] == {"train": 0, "val": 0, "test": 4}
    assert results["arms"][1]["vs_baseline"]["accuracy"]["strict_prompt"]["estimate"] == 1.0
    assert [len(lms[m].engine.requests) for m in ("custom/comma", "custom/plain")] == [4, 4]  # each arm on its own LM only
    capsys.readouterr()
    assert cli.main(["show", str(tmp_path.joinpath(*RUN))]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "strict prompt, each minus start@comma" in shown and "0.00 [0.00, 0.00] - start@plain" in shown and "1.00 [1.00, 1.00] +1.00 [1.00, 1.00]" in shown


def test_dry_run_example_and_the_retired_eval_format(tmp_path, lms, capsys):
    config = write_config(tmp_path)
    assert cli.main(["experiment", str(config), "--dry-run"]) == 0
    line = " ".join(capsys.readouterr().out.split())
    assert line.startswith("dry run: experiment at most: 2 arm(s), 4 test example(s), 1 call(s) an example")
    assert not lms["custom/plain"].engine.requests and not (tmp_path / "runs").exists()
    config.write_text('run_dir = "r"\nsuite = "suite.jsonl"\n[[prompts]]\nname = "p"\ninstructions = "Answer."\n[[lms]]\nname = "m"\nlm = "smollm2"\n')
    assert cli.main(["experiment", str(config)]) == 2
    err = capsys.readouterr().err
    assert "eval.toml" in err and "the retired `eval` format" in err and 'kind = "start", lm = "smollm2"' in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("arms", "says"),
    [
        ('[[arms]]\nname = "b"\nkind = "bineval"\n', "data.train: the optimizer learns from train"),
        ('[[arms]]\nname = "b"\nkind = "start"\nlm = {api_base = "http://x"}\n', "lm.spec: an arm's lm table names its model"),
        ('[[arms]]\nname = "b"\nkind = "bineval"\nlm = "custom/plain"\n', "arms.0.bineval.lm"),
        ('[[arms]]\nname = "a"\nkind = "start"\n[[arms]]\nname = "b"\nkind = "best_of"\nof = "a"\nlm = "custom/plain"\n', "of 'a' samples that arm's program"),
    ],
)
def test_a_config_that_cannot_run_is_one_located_line(tmp_path, lms, capsys, arms, says):
    """An optimizer arm needs train and val; an arm's lm table needs its spec; only fixed programs take an lm, and
    Best-of-N of another arm samples that arm's LM."""
    config = write_config(tmp_path, arms)
    assert cli.main(["experiment", str(config)]) == 2
    err = capsys.readouterr().err
    assert "eval.toml" in err and says in err and err.count("\n") == 1


def test_an_arms_lm_that_cannot_work_is_refused_before_any_arm_runs(tmp_path, capsys):
    """A bad spec on the second arm: one located line, and the first arm's LM never called."""
    from tests.fake_openai import scripted_server

    with scripted_server(lambda body: "hi there") as server:
        arms = (
            f'[[arms]]\nname = "first"\nkind = "start"\nlm = {{spec = "openai/m", api_base = "{server.url}"}}\n'
            '[[arms]]\nname = "second"\nkind = "start"\nlm = "no-such-model"\n'
        )
        assert cli.main(["experiment", str(write_config(tmp_path, arms)), "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert "eval.toml: arm 'second' field 'lm' = 'no-such-model'" in err and err.count("\n") == 1 and not server.bodies


def test_a_checklist_judges_every_response_beside_the_verifiers(tmp_path, lms, capsys):
    """`[program] checklist`: its questions join every row's code questions, answered by the config's LM."""
    (tmp_path / "checklist.json").write_text(json.dumps({"task": "t", "dimensions": ["d"], "questions": [{"text": "Is it friendly?", "dimension": "d"}]}))
    config = write_config(tmp_path, head='[program]\nchecklist = "checklist.json"\n')
    assert cli.main(["experiment", str(config)]) == 0
    assert "| 0 | n 0.50 | Y 1.00 |" in tmp_path.joinpath(*RUN, "matrix.md").read_text()  # the judge LM says yes
    arms = json.loads(tmp_path.joinpath(*RUN, "results.json").read_text())["arms"]
    assert [a["test"]["score"] for a in arms] == [0.5, 1.0] and arms[0]["test_usage"]["lm_calls"] == 4 + 4
    grid = [json.loads(line) for line in tmp_path.joinpath(*RUN, "grid.jsonl").read_text().splitlines()]
    asked = grid[0]["cells"]["start@comma"]["checks"]
    assert [(c["by"], c["passed"]) for c in asked] == [("code", False), ("llm", True)] and asked[1]["text"] == "Is it friendly?"
    (tmp_path / "checklist.json").write_text(json.dumps({"task": "t", "dimensions": ["d"], "questions": [{"text": "Q?", "dimension": "d", "verifier": "no:such"}]}))
    assert cli.main(["experiment", str(config)]) == 2
    assert "checklist.json: field 'questions.0.verifier'" in capsys.readouterr().err


def test_the_report_and_show_put_every_output_side_by_side(tmp_path, lms, capsys):
    """Issue 33, item 9: an output grid (each column's output, verdicts and score per row) with a "columns
    disagree" filter; `show` names the rows where they do; --no-charts keeps the page small."""
    lms["custom/comma"] = scripted_lm(lambda r: "hi there" if "(3)" in r.messages[-1].text else "hi, there", model="custom/comma")
    config = write_config(tmp_path)
    assert cli.main(["experiment", str(config)]) == 0
    grid = [json.loads(line) for line in tmp_path.joinpath(*RUN, "grid.jsonl").read_text().splitlines()]
    assert [row["id"] for row in grid] == ["0", "1", "2", "3"] and grid[0]["input"] == "Say hi (0)."
    assert grid[0]["cells"]["start@comma"]["output"] == "hi, there" and grid[0]["cells"]["start@plain"]["checks"][0]["passed"] is True
    report, small = tmp_path / "report.html", tmp_path / "small.html"
    assert cli.main(["report", str(tmp_path.joinpath(*RUN)), "-o", str(report)]) == 0
    assert cli.main(["report", str(tmp_path.joinpath(*RUN)), "-o", str(small), "--no-charts"]) == 0
    html = small.read_text()
    assert "(self mode): 2 arms on 4 test items; every difference" in html and "only rows where the columns disagree (3)" in html
    rows = builders.inlined_rows(html)["run-1"]  # the page draws them (report.js)
    assert [row["disagree"] for row in rows] == [True, True, True, False]
    assert rows[0]["cells"][0]["output"] == "hi, there" and rows[0]["cells"][0]["checks"][0] == {"name": "punctuation:no_comma", "answer": "no", "text": ""}
    assert html.count("<script") == 2 and small.stat().st_size < report.stat().st_size / 20  # the data and our script: no plotly.js
    capsys.readouterr()
    assert cli.main(["show", str(tmp_path.joinpath(*RUN))]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "columns disagree on 3 of 4 rows" in shown and "0 0.00 missed punctuation:no_comma 1.00" in shown


def test_hostile_outputs_in_the_grid_stay_text(tmp_path, lms):
    """Probe 124: an output holding markup is shown as written in the grid, never as markup."""
    lms["custom/comma"] = scripted_lm(lambda r: '</pre><img src=x onerror="alert(1)"><script>alert(2)</script>', model="custom/comma")
    assert cli.main(["experiment", str(write_config(tmp_path))]) == 0
    report = tmp_path / "report.html"
    assert cli.main(["report", str(tmp_path.joinpath(*RUN)), "-o", str(report), "--no-charts"]) == 0
    html = report.read_text()
    assert "<img" not in html and "<script>alert" not in html and "\\u003cimg src=x onerror=\\\"alert(1)\\\"\\u003e" in html  # JSON-escaped data


@pytest.mark.skipif(not browser.available(), reason="needs chromium and chromedriver (apt-get install chromium chromium-driver)")
def test_the_grid_filter_shows_only_the_rows_where_columns_disagree(tmp_path, lms):
    from selenium.webdriver.common.by import By

    lms["custom/comma"] = scripted_lm(lambda r: "hi there" if "(3)" in r.messages[-1].text else "hi, there", model="custom/comma")
    assert cli.main(["experiment", str(write_config(tmp_path))]) == 0
    report = tmp_path / "report.html"
    assert cli.main(["report", str(tmp_path.joinpath(*RUN)), "-o", str(report), "--no-charts"]) == 0
    with browser.chromium() as driver:
        browser.open_report(driver, report)
        browser.wait_rows(driver)
        visible = "return Array.from(document.querySelectorAll('tr.grid-row')).filter((r) => r.offsetParent !== null).map((r) => r.dataset.row)"
        assert driver.execute_script(visible) == ["0", "1", "2", "3"]
        driver.find_element(By.CSS_SELECTOR, 'input[data-filter="disagree"]').click()
        browser.wait_rows(driver)
        assert driver.execute_script(visible) == ["0", "1", "2"]
        assert driver.execute_script("return document.querySelector('div.grid-filters output.count').textContent") == "3 of 4 rows"
        assert browser.problems(driver) == []


def test_an_arms_lm_takes_the_commands_lm_options(tmp_path, monkeypatch, capsys):
    """--api-base, --api-key-env, --timeout and --temperature reach an arm's own LM, not only the config's (issue
    32, item 10: every cell 'failed' with no reason)."""
    from tests.fake_openai import scripted_server

    arm = '[[arms]]\nname = "served"\nkind = "start"\nlm = "openai/other"\nprogram = {instructions = "Answer."}\n'
    config = write_config(tmp_path, arm, head='lm = "openai/served"\n')
    monkeypatch.setenv("SERVED_KEY", "k")
    with scripted_server(lambda body: "hi there") as server:
        argv = ["experiment", str(config), *server.lm_args(), "--api-key-env", "SERVED_KEY", "--timeout", "5", "--temperature", "0.3"]
        assert cli.main(argv) == 0
    assert "| 0 | Y 1.00 |" in tmp_path.joinpath(*RUN, "matrix.md").read_text()
    assert {body["model"] for body in server.bodies} == {"other"} and {body["temperature"] for body in server.bodies} == {0.3}


def test_each_arm_may_name_its_own_servers(tmp_path, capsys):
    """Two arms of one model on two servers (a pool of two for the second): each arm's calls go to its own."""
    from tests.fake_openai import scripted_server

    with scripted_server(lambda body: "hi, there") as a, scripted_server(lambda body: "hi there") as b, scripted_server(lambda body: "hi there") as c:
        arms = "".join(
            f'[[arms]]\nname = "{name}"\nkind = "start"\nlm = {{spec = "openai/m", {servers}}}\nprogram = {{instructions = "Answer."}}\n'
            for name, servers in (("one", f'api_base = "{a.url}"'), ("pool", f'api_base = "{b.url}", replicas = ["{c.url}"]'))
        )
        config = write_config(tmp_path, arms)
        assert cli.main(["experiment", str(config), "--cache-dir", str(tmp_path / "cache")]) == 0
        assert len(a.bodies) == 4 and len(b.bodies) + len(c.bodies) == 4  # one row at a time: the least busy is the first
        assert cli.main(["experiment", str(config), "--cache-dir", str(tmp_path / "cache")]) == 0  # rerun: every reply cached
        assert len(a.bodies) == 4 and len(b.bodies) + len(c.bodies) == 4
    assert "| 0 | n 0.00 | Y 1.00 |" in tmp_path.joinpath(*RUN, "matrix.md").read_text()  # the comma arm fails no_comma, the pool's passes
    config.write_text(config.read_text().replace(f'api_base = "{b.url}", ', ""))
    assert cli.main(["experiment", str(config)]) == 2
    assert "replicas are more servers beside api_base; give api_base too" in capsys.readouterr().err


def test_the_command_lines_key_goes_only_to_its_own_servers(tmp_path, monkeypatch):
    """Issue 46: --api-key-env's key was sent to every server the arms named; an arm on another server now gets no
    key unless its table names its own (``api_key_env``)."""
    from tests.fake_openai import scripted_server

    monkeypatch.setenv("COMMAND_KEY", "sk-command-0123456789")
    monkeypatch.setenv("ARM_KEY", "sk-arm-0123456789")

    def arm(name: str, servers: str) -> str:
        return f'[[arms]]\nname = "{name}"\nkind = "start"\nlm = {{spec = "openai/m"{servers}}}\nprogram = {{instructions = "Answer."}}\n'

    with scripted_server(lambda body: "hi there") as own, scripted_server(lambda body: "hi there") as other, scripted_server(lambda body: "hi there") as keyed:
        config = write_config(tmp_path, arm("same", "") + arm("other", f', api_base = "{other.url}"'))
        argv = ["experiment", str(config), "--lm", "openai/m", "--api-base", own.url, "--api-key-env", "COMMAND_KEY", "--cache-dir", str(tmp_path / "cache")]
        assert cli.main(argv) == 0
        assert set(own.authorizations) == {"Bearer sk-command-0123456789"}  # the arm on the command's server: its key
        assert set(other.authorizations) == {"Bearer EMPTY"}  # another server: none (the keyless placeholder)
        config.write_text(config.read_text() + arm("keyed", f', api_base = "{keyed.url}", api_key_env = "ARM_KEY"'))
        assert cli.main(argv) == 0
    assert set(keyed.authorizations) == {"Bearer sk-arm-0123456789"}  # an arm's own key, for its own servers


def test_an_enforcing_arm_on_an_lm_that_cannot_steer_is_refused_before_any_arm_runs(tmp_path, lms, capsys):
    arms = (
        '[[arms]]\nname = "plain"\nkind = "start"\nlm = "custom/plain"\n'
        '[[arms]]\nname = "forced"\nkind = "start"\nlm = "custom/comma"\nenforce = "extracted"\n'
    )
    assert cli.main(["experiment", str(write_config(tmp_path, arms))]) == 2
    err = capsys.readouterr().err
    assert "arm 'forced' field 'enforce'" in err and "cannot decode under constraints" in err and len(err.strip().splitlines()) == 1
    assert [len(lms[m].engine.requests) for m in ("custom/comma", "custom/plain")] == [0, 0]  # no arm ran
