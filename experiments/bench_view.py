"""Time to first rows on a large judge run: `bineval view` (the page, then its first page of rows from the JSON
API) beside the static report `bineval report` writes (every row inlined, the first page drawn from them).

Both arms start from the run file (`testing.runs.synthetic_judge_run`: `bineval judge` output in its real format,
``--rows`` rows x 3 verdicts) and end when headless Chromium (Debian's ``chromium`` and ``chromium-driver``, through
``tests/report/browser.py``) shows the first page of outputs:

- report: read the run, write the HTML file (``--no-charts``), load it in the browser until the rows are drawn;
- view: read the run, build the served page, start the server, load its URL until the rows are drawn.

Each part is timed (read, build, browser) and the arms alternate ``--repeats`` times; the figure is each arm's
median total. Charts are off in both (they cost the same in both, and most of it is plotly.js).

Usage: python experiments/bench_view.py [--rows N] [--repeats N] [--out PATH]
Ends with ``ratios: report/view=R`` (how many times longer the static report takes to show its first rows).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests/report/browser.py: the tests' own Chromium session

from bineval_dspy.report import load_runs, write_report  # noqa: E402
from bineval_dspy.report.serve import Viewer, server  # noqa: E402
from bineval_dspy.testing.runs import synthetic_judge_run  # noqa: E402
from tests.report import browser  # noqa: E402

DEFAULT_OUT = REPO / "experiments" / "results" / "bench_view.json"


def first_rows(driver, where: str) -> float:
    """Seconds from asking the browser for ``where`` until the first page of rows is drawn."""
    start = time.perf_counter()
    browser.open_report(driver, where, timeout=600)
    drawn = driver.execute_script("return document.querySelectorAll('article.output').length")
    if not drawn:
        raise RuntimeError(f"{where}: no rows drawn")
    return time.perf_counter() - start


def report_arm(run: Path, folder: Path, driver) -> dict[str, float]:
    start = time.perf_counter()
    runs = load_runs(run)
    read = time.perf_counter() - start
    out = write_report(runs, folder / "report.html", charts_on=False)
    build = time.perf_counter() - start - read
    shown = first_rows(driver, out.resolve().as_uri())
    return {"read_s": read, "build_s": build, "browser_s": shown, "total_s": read + build + shown, "page_bytes": out.stat().st_size}


def view_arm(run: Path, driver) -> dict[str, float]:
    start = time.perf_counter()
    runs = load_runs(run)
    read = time.perf_counter() - start
    viewer = Viewer.of(runs, charts_on=False)
    httpd = server(viewer, 0)
    build = time.perf_counter() - start - read
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        shown = first_rows(driver, f"http://127.0.0.1:{httpd.server_address[1]}/")
    finally:
        httpd.shutdown()
        httpd.server_close()
    return {"read_s": read, "build_s": build, "browser_s": shown, "total_s": read + build + shown, "page_bytes": len(viewer.page)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if not browser.available():
        print("needs chromium and chromedriver (apt-get install chromium chromium-driver)", file=sys.stderr)
        return 2
    runs: dict[str, list[dict[str, float]]] = {"report": [], "view": []}
    with tempfile.TemporaryDirectory() as tmp, browser.chromium(offline=False) as driver:
        folder = Path(tmp)
        run = synthetic_judge_run(folder / "judged.jsonl", args.rows)
        for repeat in range(args.repeats):
            for arm in ("report", "view"):
                driver.get("about:blank")
                result = report_arm(run, folder, driver) if arm == "report" else view_arm(run, driver)
                runs[arm].append(result)
                print(f"{arm} #{repeat + 1}: " + " ".join(f"{k}={v:.2f}" if k.endswith("_s") else f"{k}={v}" for k, v in result.items()), flush=True)
    medians = {arm: statistics.median(r["total_s"] for r in results) for arm, results in runs.items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": args.rows, "repeats": args.repeats, "median_total_s": medians, "runs": runs}, indent=2) + "\n")
    print(f"median time to first rows: report {medians['report']:.2f} s, view {medians['view']:.2f} s")
    print(f"ratios: report/view={medians['report'] / medians['view']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
