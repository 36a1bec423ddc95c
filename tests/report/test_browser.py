"""The report in a real browser (headless Chromium): no console error, the numbers in the tables, every chart
drawn, a filter that works, and hostile text that stays text. Skipped only where Chromium is not installed
(CI installs Debian's ``chromium`` and ``chromium-driver``)."""

from __future__ import annotations

import csv
import json
import textwrap
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from bineval_dspy.report import load_runs, write_report
from tests.report import browser, builders

pytestmark = pytest.mark.skipif(not browser.available(), reason="needs chromium and chromedriver (apt-get install chromium chromium-driver)")


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with browser.chromium() as session:
        yield session


def text(driver: Any, selector: str) -> str:
    return driver.execute_script("return document.querySelector(arguments[0]).textContent", selector)


def test_every_kind_renders_with_its_numbers_and_charts(driver, every_kind, tmp_path):
    browser.open_report(driver, every_kind.report)
    assert browser.problems(driver) == []
    judged, config, optimized, _, tune = every_kind.paths

    cards = [json.loads(line)["bineval"]["scorecard"] for line in judged.read_text().splitlines()]
    brevity = np.mean([c["dimension_scores"]["brevity"] for c in cards])
    assert text(driver, '#run-1 table.means tr[data-dimension="brevity"] td:nth-child(2)') == f"{brevity:.3f}"

    with (config.parent / "runs" / "meta" / "results.csv").open() as handle:
        row = next(r for r in csv.DictReader(handle) if r["method"] == "bineval" and r["dimension"] == "coherence")
    value, low, high = (row[f"summary_spearman{part}"] for part in ("", "_low", "_high"))
    cell = '#run-2 table.correlations tr[data-method="bineval"][data-dimension="coherence"] td[data-stat="summary-spearman"]'
    if low and high:
        assert text(driver, cell) == f"{float(value):.3f} [{float(low):.3f}, {float(high):.3f}]"
    else:  # the fixture has 3 documents: a summary-level cell on fewer than 5 gets no interval, and says so
        assert text(driver, cell) == f"{float(value):.3f} (too few docs)"
    human = '#run-2 table.spreads[data-dimension="coherence"] tr[data-source="human"]'
    assert text(driver, f"{human} td:nth-child(2)") == "1-5" and text(driver, f"{human} td:nth-child(6)") == "0.33"

    audit = json.loads((optimized / "audit.json").read_text())
    first = audit["iterations"][0]
    assert text(driver, '#run-3 table.iterations tr[data-iteration="1"] td:nth-child(4)') == f"{first['val']['score']:.3f}"
    assert text(driver, '#run-3 table.iterations tr[data-iteration="1"] td:last-child') == first["decision"]["reason"]
    assert "+Use bullet points." in text(driver, "#run-3 pre.diff")

    assert "Question 2 about coherence?" in text(driver, "#run-4 table.pruned")
    results = json.loads((tune / "results.json").read_text())
    assert text(driver, '#run-5 table.trials tr[data-trial="1"] td:nth-child(3)') == f"{results['trials'][1]['values']['val_score']:.4g}"

    charts = driver.execute_script(
        """return Array.from(document.querySelectorAll('[data-figure]')).map((el) => [
             el.classList.contains('js-plotly-plot'), el.querySelectorAll('svg.main-svg').length > 0,
             (el.data || []).length > 0, el.getBoundingClientRect().height > 200])"""
    )
    figures = json.loads(driver.execute_script("return document.getElementById('report-data').textContent"))["figures"]
    assert len(charts) == len(figures) == int(driver.execute_script("return document.body.dataset.charts")) >= 10
    assert all(all(checks) for checks in charts), charts

    shot = browser.screenshot(driver, tmp_path / "report.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_verdict_filters_show_only_matching_verdicts(driver, every_kind):
    from selenium.webdriver.support.ui import Select

    browser.open_report(driver, every_kind.report)
    cards = [json.loads(line)["bineval"]["scorecard"] for line in every_kind.paths[0].read_text().splitlines()]
    verdicts = [v for c in cards for v in c["verdicts"]]
    select = {name: Select(driver.find_element("css selector", f'#run-1 select[data-filter="{name}"]')) for name in ("dimension", "answer", "judge")}

    def shown() -> list[str]:
        return driver.execute_script(
            "return Array.from(document.querySelectorAll('#run-1 tr.verdict')).filter((r) => !r.hidden && r.offsetParent !== null)"
            ".map((r) => r.dataset.dimension + '|' + r.dataset.answer)"
        )

    select["answer"].select_by_value("no")
    browser.wait_rows(driver)
    nos = [v for v in verdicts if v["answer"] == "no"]
    assert shown() == [f"{v['dimension']}|no" for v in nos]
    outputs = sum(any(v["answer"] == "no" for v in c["verdicts"]) for c in cards)
    assert text(driver, "#run-1 output.count") == f"{len(nos)} of {len(verdicts)} verdicts in {outputs} output(s)"
    assert driver.execute_script("return document.querySelector('#run-1 article[data-output=\"r0\"]')") is None  # all yes: not drawn

    select["dimension"].select_by_value("tone")
    browser.wait_rows(driver)
    assert shown() == ["tone|no" for v in nos if v["dimension"] == "tone"]
    select["answer"].select_by_value("")
    select["dimension"].select_by_value("")
    browser.wait_rows(driver)
    assert len(shown()) == len(verdicts) and browser.problems(driver) == []


def test_hostile_text_is_shown_as_written_and_never_runs(driver, tmp_path, monkeypatch):
    judged = builders.judge_run(tmp_path, monkeypatch, hostile=True)
    report = write_report(load_runs(judged), tmp_path / "hostile.html")
    browser.open_report(driver, report)
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    assert browser.problems(driver) == []  # no alert, no error, and no script even tried (CSP would say so)
    assert driver.execute_script("return [document.scripts.length, document.querySelectorAll('img').length]") == [3, 0]

    hostile = builders.HOSTILE
    question = f"Is it free of {hostile}?"
    assert text(driver, '#run-1 article[data-output="r2"] pre.output-text') == hostile
    cells = driver.execute_script(
        "return Array.from(document.querySelectorAll('#run-1 article[data-output=\"r2\"] tr.verdict')).map((r) => [r.cells[1].textContent, r.cells[4].textContent])"
    )
    assert cells[2] == [question, hostile] and all(explanation == hostile for _, explanation in cells)
    assert question in driver.execute_script("return Array.from(document.querySelectorAll('#run-1 table.rates td')).map((c) => c.textContent)")
    ticks = driver.execute_script("return Array.from(document.querySelectorAll('#run-1 .ytick text')).map((t) => t.textContent)")
    assert any(tick.startswith(textwrap.shorten(question, 60, placeholder="...")) for tick in ticks), ticks


def test_every_kind_renders_without_charts(driver, every_kind, tmp_path):
    """`report --no-charts` (issue 33, item 9): tables only, no plotly.js, every section there, no page error."""
    runs = [run for path in every_kind.paths for run in load_runs(path)]
    report = write_report(runs, tmp_path / "tables.html", charts_on=False)
    browser.open_report(driver, report)
    assert browser.problems(driver) == []
    assert driver.execute_script("return [document.querySelectorAll('[data-figure]').length, typeof window.Plotly, document.body.dataset.charts]") == [0, "undefined", "0"]
    assert driver.execute_script("return document.querySelectorAll('section.run').length") == len(runs)
    assert report.stat().st_size < every_kind.report.stat().st_size / 10
