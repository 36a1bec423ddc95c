"""`bineval eval`: prompts x LMs on one suite, graded by code, a matrix with paired intervals; resumable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.lm import runtime, specs
from bineval_dspy.testing import scripted_lm, verdict_json
from tests.conftest import route_cli_lm
from tests.report import browser

ROW = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}


@pytest.fixture
def lms(monkeypatch):
    """Scripted LMs by spec: 'custom/comma' always writes a comma, 'custom/plain' never does."""
    made = {"custom/comma": scripted_lm(lambda r: "hi, there", model="custom/comma"), "custom/plain": scripted_lm(lambda r: "hi there", model="custom/plain")}
    monkeypatch.setattr(specs, "make_lm", lambda spec, **kwargs: made[spec])
    monkeypatch.setattr(runtime, "make_lm", lambda spec, **kwargs: made[spec])  # the columns' LMs are made here
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes"))  # the judge LM: no checklist here, never asked
    return made


def write_config(tmp_path: Path) -> Path:
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps({"key": i, "prompt": f"Say hi ({i}).", **ROW}) + "\n" for i in range(4)))
    config = tmp_path / "eval.toml"
    config.write_text('run_dir = "runs/eval"\nsuite = "suite.jsonl"\nresamples = 200\n'
                      '[[prompts]]\nname = "start"\ninstructions = "Answer."\n'
                      '[[lms]]\nname = "comma"\nlm = "custom/comma"\n[[lms]]\nname = "plain"\nlm = "custom/plain"\n')
    return config


def test_the_matrix_shows_every_verdict_and_the_paired_difference(tmp_path, lms, capsys):
    config = write_config(tmp_path)
    assert cli.main(["eval", str(config)]) == 0
    captured = capsys.readouterr()
    assert "| row | start@comma | start@plain |" in captured.out and "| 0 | n | Y |" in captured.out
    assert "vs start@comma +1.000" in captured.out and "cost: " in captured.err
    results = json.loads((tmp_path / "runs" / "eval" / "results.json").read_text())
    assert [a["name"] for a in results["arms"]] == ["start@comma", "start@plain"] and results["baseline"] == "start@comma"
    assert results["arms"][1]["vs_baseline"]["score"]["estimate"] == 1.0
    requests = len(lms["custom/plain"].engine.requests)
    assert cli.main(["eval", str(config)]) == 0  # resumed: every column complete, no new generation
    assert len(lms["custom/plain"].engine.requests) == requests
    capsys.readouterr()
    assert cli.main(["show", str(tmp_path / "runs" / "eval")]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "score, each minus start@comma" in shown and "n/a" not in shown  # issue 33, item 3: it showed kappa n/a
    assert "0.00 [0.00, 0.00] - start@plain" in shown and "1.00 [1.00, 1.00] +1.00 [1.00, 1.00]" in shown
    assert "planned at most 8 LM call(s)" in shown and "spent 8 call(s) (100% of the plan)" in shown  # resumed rows count what they cost


def test_eval_dry_run_and_example(tmp_path, lms, capsys):
    config = write_config(tmp_path)
    assert cli.main(["eval", str(config), "--dry-run"]) == 0
    line = " ".join(capsys.readouterr().out.split())
    assert line.startswith("dry run: eval: 2 column(s) x 4 row(s), 0 checklist LM question(s) a response: 8 LM call(s),")
    assert not lms["custom/plain"].engine.requests and not (tmp_path / "runs").exists()
    with pytest.raises(SystemExit):
        cli.main(["eval", "--example"])
    assert "[[prompts]]" in capsys.readouterr().out


def test_a_bad_config_is_one_located_line(tmp_path, lms, capsys):
    config = write_config(tmp_path)
    config.write_text(config.read_text().replace('name = "plain"', 'name = "comma"'))
    assert cli.main(["eval", str(config)]) == 2
    err = capsys.readouterr().err
    assert "eval.toml" in err and "column 'start@comma' appears twice" in err and err.count("\n") == 1


def test_a_checklist_judges_every_response_beside_the_verifiers(tmp_path, lms, capsys):
    config = write_config(tmp_path)
    (tmp_path / "checklist.json").write_text(json.dumps({"task": "t", "dimensions": ["d"], "questions": [{"text": "Is it friendly?", "dimension": "d"}]}))
    config.write_text(config.read_text().replace('resamples = 200\n', 'resamples = 200\nchecklist = "checklist.json"\n'))
    assert cli.main(["eval", str(config)]) == 0
    out = capsys.readouterr().out
    assert "| 0 | n 1.00 | Y 1.00 |" in out  # the judge LM says yes; scores (0 + 1) / 2 and (1 + 1) / 2
    arms = json.loads((tmp_path / "runs" / "eval" / "results.json").read_text())["arms"]
    assert [a["test"]["score"] for a in arms] == [0.5, 1.0] and arms[0]["test_usage"]["lm_calls"] == 4 + 4


def test_the_report_and_show_put_every_output_side_by_side(tmp_path, lms, capsys):
    """Issue 33, item 9: an output grid (each column's output, verdicts and score per row) with a "columns
    disagree" filter; `show` names the rows where they do; --no-charts keeps the page small."""
    lms["custom/comma"] = scripted_lm(lambda r: "hi there" if "(3)" in r.messages[-1].text else "hi, there", model="custom/comma")
    config = write_config(tmp_path)
    assert cli.main(["eval", str(config)]) == 0
    grid = [json.loads(line) for line in (tmp_path / "runs" / "eval" / "grid.jsonl").read_text().splitlines()]
    assert [row["id"] for row in grid] == ["0", "1", "2", "3"] and grid[0]["input"] == "Say hi (0)."
    assert grid[0]["cells"]["start@comma"]["output"] == "hi, there" and grid[0]["cells"]["start@plain"]["checks"][0]["passed"] is True
    report, small = tmp_path / "report.html", tmp_path / "small.html"
    assert cli.main(["report", str(tmp_path / "runs" / "eval"), "-o", str(report)]) == 0
    assert cli.main(["report", str(tmp_path / "runs" / "eval"), "-o", str(small), "--no-charts"]) == 0
    html = small.read_text()
    assert "(eval matrix): 2 columns (prompt@LM) on 4 suite rows" in html and "only rows where the columns disagree (3)" in html
    assert html.count('data-disagree="yes"') == 3 and html.count('data-disagree="no"') == 1
    assert "hi, there</pre>" in html and '<li class="answer-no" data-check="punctuation:no_comma"' in html
    assert html.count("<script") == 2 and small.stat().st_size < report.stat().st_size / 20  # the data and our script: no plotly.js
    capsys.readouterr()
    assert cli.main(["show", str(tmp_path / "runs" / "eval")]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "columns disagree on 3 of 4 rows" in shown and "0 0.00 missed punctuation:no_comma 1.00" in shown


def test_hostile_outputs_in_the_grid_stay_text(tmp_path, lms):
    """Probe 124: an output holding markup is shown as written in the grid, never as markup."""
    lms["custom/comma"] = scripted_lm(lambda r: '</pre><img src=x onerror="alert(1)"><script>alert(2)</script>', model="custom/comma")
    assert cli.main(["eval", str(write_config(tmp_path))]) == 0
    report = tmp_path / "report.html"
    assert cli.main(["report", str(tmp_path / "runs" / "eval"), "-o", str(report), "--no-charts"]) == 0
    html = report.read_text()
    assert "<img" not in html and "<script>alert" not in html and "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in html


@pytest.mark.skipif(not browser.available(), reason="needs chromium and chromedriver (apt-get install chromium chromium-driver)")
def test_the_grid_filter_shows_only_the_rows_where_columns_disagree(tmp_path, lms):
    from selenium.webdriver.common.by import By

    lms["custom/comma"] = scripted_lm(lambda r: "hi there" if "(3)" in r.messages[-1].text else "hi, there", model="custom/comma")
    assert cli.main(["eval", str(write_config(tmp_path))]) == 0
    report = tmp_path / "report.html"
    assert cli.main(["report", str(tmp_path / "runs" / "eval"), "-o", str(report), "--no-charts"]) == 0
    with browser.chromium() as driver:
        browser.open_report(driver, report)
        visible = "return Array.from(document.querySelectorAll('tr.grid-row')).filter((r) => r.offsetParent !== null).map((r) => r.dataset.row)"
        assert driver.execute_script(visible) == ["0", "1", "2", "3"]
        driver.find_element(By.CSS_SELECTOR, "input[data-grid-filter]").click()
        assert driver.execute_script(visible) == ["0", "1", "2"]
        assert driver.execute_script("return document.querySelector('div.grid-filters output.count').textContent") == "3 of 4 rows"
        assert browser.problems(driver) == []


def test_the_columns_take_the_commands_lm_options(tmp_path, monkeypatch, capsys):
    """--api-base, --api-key-env, --timeout and --temperature reach every [[lms]] column, not only the judge (issue
    32, item 10: every cell 'failed' with no reason)."""
    from tests.fake_openai import scripted_server

    (tmp_path / "suite.jsonl").write_text("".join(json.dumps({"key": i, "prompt": f"Say hi ({i}).", **ROW}) + "\n" for i in range(2)))
    config = tmp_path / "eval.toml"
    config.write_text('run_dir = "runs/eval"\nsuite = "suite.jsonl"\nresamples = 50\njudge_lm = "openai/served"\n[[prompts]]\nname = "start"\ninstructions = "Answer."\n'
                      '[[lms]]\nname = "served"\nlm = "openai/served"\n')
    monkeypatch.setenv("SERVED_KEY", "k")
    with scripted_server(lambda body: "hi there") as server:
        argv = ["eval", str(config), *server.lm_args(), "--api-key-env", "SERVED_KEY", "--timeout", "5", "--temperature", "0.3"]
        assert cli.main(argv) == 0
    assert "| 0 | Y |" in capsys.readouterr().out
    assert {body["model"] for body in server.bodies} == {"served"} and {body["temperature"] for body in server.bodies} == {0.3}


def test_the_cache_is_the_flag_else_bineval_cache_dir_else_the_runs_own(tmp_path, lms, monkeypatch):
    """`--help` names $BINEVAL_CACHE_DIR as the default; eval and experiment wrote RUN_DIR/cache whatever it said
    (issue 33, item 4)."""
    seen = []
    configure = runtime.configure
    monkeypatch.setattr(runtime, "configure", lambda options=None, cache_dir=None: seen.append(cache_dir) or configure(options, cache_dir))
    config = write_config(tmp_path)
    monkeypatch.setenv("BINEVAL_CACHE_DIR", str(tmp_path / "shared"))
    assert cli.main(["eval", str(config)]) == 0
    assert cli.main(["eval", str(config), "--cache-dir", str(tmp_path / "given")]) == 0
    monkeypatch.delenv("BINEVAL_CACHE_DIR")
    assert cli.main(["eval", str(config)]) == 0
    assert seen[:2] == [tmp_path / "shared", tmp_path / "given"] and seen[2].parts[-3:] == ("runs", "eval", "cache")


def test_a_torn_or_repeated_column_row_is_repaired_on_resume_and_only_it_regenerated(tmp_path, lms):
    """Probe 135 (issue 34's run kernel under eval): a kill mid-write and a repeated row in a column's file."""
    config = write_config(tmp_path)
    assert cli.main(["eval", str(config)]) == 0
    column = tmp_path / "runs" / "eval" / "columns" / "start@plain" / "responses.jsonl"
    lines = column.read_text().splitlines(keepends=True)
    column.write_text(lines[0] + "".join(lines[:3]) + lines[3][:20])  # row 0 twice, row 3 torn
    before = len(lms["custom/plain"].engine.requests)
    assert cli.main(["eval", str(config)]) == 0
    assert len(lms["custom/plain"].engine.requests) == before + 1  # row 3 only
    keys = [json.loads(line)["key"] for line in column.read_text().splitlines()]
    assert sorted(str(key) for key in keys) == ["0", "1", "2", "3"]  # each row once, whole


def test_each_column_may_name_its_own_servers(tmp_path, capsys):
    """Two [[lms]] of one model on two servers (a pool of two for the second): each column's calls go to its own."""
    from tests.fake_openai import scripted_server

    (tmp_path / "suite.jsonl").write_text("".join(json.dumps({"key": i, "prompt": f"Say hi ({i}).", **ROW}) + "\n" for i in range(4)))
    with scripted_server(lambda body: "hi, there") as a, scripted_server(lambda body: "hi there") as b, scripted_server(lambda body: "hi there") as c:
        config = tmp_path / "eval.toml"
        config.write_text(f'run_dir = "runs/eval"\nsuite = "suite.jsonl"\nresamples = 50\n[[prompts]]\nname = "start"\ninstructions = "Answer."\n'
                          f'[[lms]]\nname = "one"\nlm = "openai/m"\napi_base = "{a.url}"\n'
                          f'[[lms]]\nname = "pool"\nlm = "openai/m"\napi_base = "{b.url}"\nreplicas = ["{c.url}"]\n')
        assert cli.main(["eval", str(config), "--cache-dir", str(tmp_path / "cache")]) == 0
    assert len(a.bodies) == 4 and len(b.bodies) + len(c.bodies) == 4  # one row at a time: the least busy is the first
    out = capsys.readouterr().out
    assert "| 0 | n | Y |" in out  # the comma column fails no_comma, the pool's passes
    config.write_text(config.read_text().replace(f'api_base = "{b.url}"\n', ""))
    assert cli.main(["eval", str(config)]) == 2
    assert "replicas are more servers beside api_base; give api_base too" in capsys.readouterr().err
