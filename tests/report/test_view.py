"""`bineval view` (issue 47, item 9): the report's page served on 127.0.0.1 with its row lists read a page at a time
from a JSON API, the same page `report` writes; in a real headless Chromium on a 50,000-row run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from bineval_dspy.experiment.grid import Check, GridCell, GridRow
from bineval_dspy.report import load_runs, write_report
from bineval_dspy.report.pages import Query, grid_rows, page
from bineval_dspy.report.serve import Viewer, server
from tests.report import browser, builders

needs_browser = pytest.mark.skipif(not browser.available(), reason="needs chromium and chromedriver (apt-get install chromium chromium-driver)")
LARGE = 50_000


@contextmanager
def serving(viewer: Viewer) -> Iterator[str]:
    """``viewer`` served on a free port in a thread; its URL."""
    httpd = server(viewer, 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            body = answer.read()
            return answer.status, json.loads(body) if answer.headers["Content-Type"] == "application/json" else body.decode()
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return builders.large_judge_run(tmp_path_factory.mktemp("large"), LARGE)


def test_the_api_answers_filtered_pages_and_the_page_holds_no_rows(tmp_path, monkeypatch):
    judged = builders.judge_run(tmp_path, monkeypatch)
    viewer = Viewer.of(load_runs(judged), charts_on=False)
    with serving(viewer) as url:
        status, html = get(url)
        assert status == 200 and "connect-src &#39;self&#39;" in html and builders.inlined_rows(html) == {}
        status, body = get(url + "api/rows?section=run-1&answer=no")
        assert status == 200 and [row["id"] for row in body["rows"]] == ["r1", "r2"]
        assert (body["total"], body["matched"], body["marks"], body["marks_matched"]) == (3, 2, 9, 5)
        assert [row["id"] for row in get(url + "api/rows?section=run-1&offset=1&limit=1")[1]["rows"]] == ["r1"]
        assert [row["id"] for row in get(url + "api/rows?section=run-1&id=R2")[1]["rows"]] == ["r2"]  # part of the id, any case
        assert get(url + "api/rows?section=run-9")[0] == 404 and get(url + "api/rows?section=run-1&offset=x")[0] == 400
        assert get(url + "elsewhere")[0] == 404


def test_a_grid_is_filtered_by_arm_failed_question_and_disagreement():
    def cell(*passed: bool | None, error: str = "") -> GridCell:
        return GridCell(output="x", checks=[Check(name=f"c{k}", by="code", passed=p) for k, p in enumerate(passed)], score=None if error else 1.0, error=error)

    grid = [
        GridRow(id="a", cells={"one": cell(True, True), "two": cell(True, True)}),
        GridRow(id="b", cells={"one": cell(True, False), "two": cell(True, True)}),
        GridRow(id="c", cells={"one": cell(True, True), "two": cell(error="boom")}),
        GridRow(id="d", cells={"one": cell(True, None)}),
    ]
    rows = grid_rows(grid, ["one", "two"])
    assert rows[3]["cells"][1] is None and rows[1]["cells"][0]["checks"][1] == {"name": "c1", "answer": "no", "text": ""}

    def ids(**query: Any) -> list[str]:
        return [row["id"] for row in page(rows, Query(**query)).rows]

    assert ids() == ["a", "b", "c", "d"] and ids(failed=True) == ["b", "c", "d"]
    assert ids(failed=True, arm="two") == ["c"] and ids(failed=True, arm="one", question="c1") == ["b", "d"]
    assert ids(answer="no") == ["b"] and ids(disagree=True) == ["b", "c"]  # d has one column: nothing to disagree with


def test_view_serves_until_ctrl_c_and_stops_cleanly(tmp_path):
    run = builders.large_judge_run(tmp_path, 120)
    process = subprocess.Popen(
        [sys.executable, "-m", "bineval_dspy.cli", "view", str(run), "--port", "0", "--no-charts"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert line.startswith("serving 1 run(s) at http://127.0.0.1:") and line.rstrip().endswith("(Ctrl-C stops)"), line
        url = line.split(" at ")[1].split()[0]
        assert get(url)[0] == 200
        body = get(url + "api/rows?section=run-1&offset=50")[1]
        assert body["total"] == 120 and [row["id"] for row in body["rows"]] == [f"o{k}" for k in range(50, 100)]
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0 and "Traceback" not in err and "stopped" in err, err


def test_a_missing_run_is_one_line(tmp_path, capsys):
    from bineval_dspy import cli

    assert cli.main(["view", str(tmp_path / "nope.jsonl"), "--port", "0"]) == 2
    assert "nope.jsonl: no such file or folder" in capsys.readouterr().err


def shown_ids(driver: Any) -> list[str]:
    return driver.execute_script("return Array.from(document.querySelectorAll('#run-1 article.output')).map((a) => a.dataset.output)")


def text(driver: Any, selector: str) -> str:
    return driver.execute_script("return document.querySelector(arguments[0]).textContent", selector)


@needs_browser
def test_a_50000_row_run_opens_filters_and_pages_in_a_browser(large):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    viewer = Viewer.of(load_runs(large), charts_on=False)
    assert len(viewer.page) < 100_000  # the tables: not the run's 58 MB of rows
    with serving(viewer) as url, browser.chromium(offline=False) as driver:
        browser.open_report(driver, url)
        assert shown_ids(driver) == [f"o{k}" for k in range(50)]
        assert text(driver, "#run-1 output.count") == f"{3 * LARGE} of {3 * LARGE} verdicts in {LARGE} output(s)"
        assert text(driver, "#run-1 nav.pager output.page") == f"page 1 of {LARGE // 50} (1-50 of {LARGE})"

        driver.find_element(By.CSS_SELECTOR, '#run-1 nav.pager [data-page="next"]').click()
        browser.wait_rows(driver)
        assert shown_ids(driver) == [f"o{k}" for k in range(50, 100)]

        Select(driver.find_element(By.CSS_SELECTOR, '#run-1 select[data-filter="answer"]')).select_by_value("no")
        browser.wait_rows(driver)
        rude = [k for k in range(LARGE) if k % 7 == 3]
        assert shown_ids(driver) == [f"o{k}" for k in rude[:50]]  # back to the first page of what the filter keeps
        assert text(driver, "#run-1 output.count") == f"{len(rude)} of {3 * LARGE} verdicts in {len(rude)} output(s)"
        hidden = driver.execute_script("return Array.from(document.querySelectorAll('#run-1 article[data-output=\"o3\"] tr.verdict')).map((r) => r.hidden)")
        assert hidden == [True, False, True]  # only the verdict the filter chose

        driver.find_element(By.CSS_SELECTOR, '#run-1 input[data-filter="id"]').send_keys("o4999")
        browser.wait_rows(driver)
        assert shown_ids(driver) == [f"o{k}" for k in rude if f"o{k}".startswith("o4999")]
        assert browser.problems(driver) == []


@needs_browser
def test_the_served_page_and_the_written_file_show_the_same_rows(tmp_path, monkeypatch):
    """One page, two sources: the file's inlined rows filtered by report.js, the server's by report.pages."""
    from selenium.webdriver.support.ui import Select

    runs = load_runs(builders.judge_run(tmp_path, monkeypatch))
    written = write_report(runs, tmp_path / "report.html", charts_on=False)
    choices = [{}, {"answer": "no"}, {"dimension": "tone", "answer": "yes"}, {"question": "Is it polite?"}, {"judge": "nobody"}]
    seen: dict[str, list[Any]] = {}
    with serving(Viewer.of(runs, charts_on=False)) as url, browser.chromium(offline=False) as driver:
        for where in (written, url):
            browser.open_report(driver, where)
            for choice in choices:
                for name in ("dimension", "answer", "judge", "question"):
                    select = Select(driver.find_element("css selector", f'#run-1 select[data-filter="{name}"]'))
                    if name == "judge" and choice.get(name) == "nobody":  # a value no option holds: set as a script would
                        driver.execute_script("const s = arguments[0]; s.add(new Option('nobody', 'nobody')); s.value = 'nobody'; s.dispatchEvent(new Event('change'))", select._el)
                    else:
                        select.select_by_value(choice.get(name, ""))
                browser.wait_rows(driver)
                hidden = driver.execute_script("return Array.from(document.querySelectorAll('#run-1 tr.verdict')).map((r) => r.hidden)")
                seen.setdefault(str(choice), []).append((shown_ids(driver), hidden, text(driver, "#run-1 output.count")))
            assert browser.problems(driver) == []
    assert all(file == served for file, served in seen.values()), seen
    assert seen[str({"answer": "no"})][0][0] == ["r1", "r2"] and seen[str({"judge": "nobody"})][0][0] == []


def test_a_port_out_of_range_or_taken_is_one_line(tmp_path, capsys):
    """Issue 46 probes v6, v7: --port 99999 was an OverflowError traceback; a taken port said only 'Address already in use'."""
    import socket

    from bineval_dspy import cli

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["view", str(tmp_path), "--port", "99999"])
    assert exit_info.value.code == 2 and "a port is a whole number from 0 to 65535" in capsys.readouterr().err
    run = Path(__file__).resolve().parents[2] / "experiments" / "results" / "experiment_ifbench_enforce.json"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = cli.main(["view", str(run), "--port", str(port)])
    err = capsys.readouterr().err
    assert code == 2 and f"--port {port}:" in err and "--port 0" in err and "Traceback" not in err


def asked_as(url: str, host: str | None, target: str = "/api/rows?section=run-1") -> int:
    """The status of a GET of ``target`` sent with ``host`` as its Host header (None: no Host header at all)."""
    import socket

    port = int(url.rstrip("/").rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET {target} HTTP/1.0\r\n{'' if host is None else f'Host: {host}' + chr(13) + chr(10)}\r\n".encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def test_a_request_for_any_other_host_is_refused(tmp_path, monkeypatch):
    """Issue 55, break 3: `Host: attacker.example:8765` got every row, so a page the user visits could rebind its
    name to 127.0.0.1 and read the run (DNS rebinding)."""
    viewer = Viewer.of(load_runs(builders.judge_run(tmp_path, monkeypatch)), charts_on=False)
    with serving(viewer) as url:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}", "127.0.0.1", "localhost"):
            assert asked_as(url, host) == 200, host
        for host in (f"attacker.example:{port}", "attacker.example", f"127.0.0.1.attacker.example:{port}", f"localhost:{port + 1}", "", None):
            assert asked_as(url, host) == 403, host
            assert asked_as(url, host, "/") == 403, host


def test_an_idle_connection_is_closed_and_many_wait_to_be_accepted(tmp_path, monkeypatch):
    """The minor items: no read timeout (300 idle connections held 257 threads) and a listen backlog of 5."""
    import socket

    httpd = server(Viewer.of(load_runs(builders.judge_run(tmp_path, monkeypatch)), charts_on=False), 0, read_timeout=0.3)
    assert httpd.request_queue_size >= 128
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        with socket.create_connection(("127.0.0.1", httpd.server_address[1]), timeout=10) as idle:
            assert idle.recv(1) == b""  # closed by the server, not left open for ever
    finally:
        httpd.shutdown()
        httpd.server_close()
