"""Headless Chromium (Debian's ``chromium`` and ``chromium-driver``) for the report tests, through Selenium.

``open_report`` loads a report from disk with every console message and page error captured, and waits until
every chart is drawn; ``python -m tests.report.browser OUT.png RUN...`` writes the README's screenshot from runs
with the same code path the tests use.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
WIDTH, HEIGHT = 1360, 1500

# Installed before any script of the page runs: page errors, alerts and console errors all land in a list, so a
# test reads them all at once (Chromium's console log misses nothing, but an alert would block the session).
WATCH = """
window.__errors = [];
window.__alerts = [];
window.addEventListener("error", (e) => window.__errors.push(String(e.message || e.type)));
window.addEventListener("securitypolicyviolation", (e) => window.__errors.push("CSP: " + e.violatedDirective + " " + e.blockedURI));
window.alert = window.confirm = window.prompt = (m) => { window.__alerts.push(String(m)); };
const original = console.error;
console.error = function (...args) { window.__errors.push(args.map(String).join(" ")); return original.apply(console, args); };
"""


def available() -> bool:
    return CHROMIUM is not None and CHROMEDRIVER is not None


@contextmanager
def chromium(width: int = WIDTH, height: int = HEIGHT, offline: bool = True) -> Iterator[Any]:
    """A headless Chromium session with the page watcher installed; network off, as a viewer's offline machine
    (``offline`` False: on, for `bineval view`'s page on 127.0.0.1)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or ""
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", f"--window-size={width},{height}", "--hide-scrollbars"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    profile = tempfile.mkdtemp(prefix="bineval-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    home = {"HOME": profile, "XDG_CONFIG_HOME": f"{profile}/config", "XDG_CACHE_HOME": f"{profile}/cache"}  # crash reports, dconf: not in $HOME
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER or "", env={**os.environ, **home}), options=options)
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": offline, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH})
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def open_report(driver: Any, path: Path | str, timeout: float = 60) -> None:
    """Load ``path`` (a report file, or a URL: `bineval view`'s) and wait until the page says every chart is drawn
    and every row list its first page."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(path if isinstance(path, str) else path.resolve().as_uri())
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script("return document.body && document.body.dataset.charts !== undefined"))
    wait_rows(driver, timeout)


def wait_rows(driver: Any, timeout: float = 60) -> None:
    """Wait until every row list on the page has drawn the page it last asked for (``report.js`` marks each
    ``.rows`` element ``loading``, then ``ready``)."""
    from selenium.webdriver.support.ui import WebDriverWait

    done = "return Array.from(document.querySelectorAll('.rows')).every((r) => r.dataset.state === 'ready')"
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(done))


def problems(driver: Any) -> list[str]:
    """Every page error, console error, CSP violation and alert so far (Chromium's log and the watcher's)."""
    logged = [f"{e['level']}: {e['message']}" for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    watched = driver.execute_script("return window.__errors.concat(window.__alerts.map((a) => 'alert: ' + a))")
    return logged + list(watched)


def screenshot(driver: Any, out: Path, height: int | None = None) -> Path:
    """A PNG of the page's top ``height`` pixels (the window's height by default)."""
    if height is not None:
        driver.set_window_size(driver.get_window_size()["width"], height)
    out.write_bytes(driver.get_screenshot_as_png())
    return out


def main(argv: Sequence[str]) -> int:
    """``OUT.png RUN...``: the report on the runs, as the tests render it, screenshot at its top."""
    from bineval_dspy.report import load_runs, write_report

    out, paths = Path(argv[0]), [Path(p) for p in argv[1:]]
    runs = [run for path in paths for run in load_runs(path)]
    with tempfile.TemporaryDirectory() as folder:
        report = write_report(runs, Path(folder) / "report.html")
        with chromium(width=1280, height=1400) as driver:
            open_report(driver, report)
            found = problems(driver)
            if found:
                print("\n".join(found), file=sys.stderr)
                return 1
            screenshot(driver, out)
    print(f"wrote {out} ({out.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
