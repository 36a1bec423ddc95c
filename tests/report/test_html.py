"""The report file itself: self-contained, and every string from data escaped (no browser needed here)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from bineval_dspy import cli
from bineval_dspy.report import load_runs, render
from bineval_dspy.report.figures import plot_text
from bineval_dspy.report.html import ASSETS, _inline
from tests.report import builders


class Resources(HTMLParser):
    """Every tag name, and every attribute that could load something."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "srcset", "action", "data", "poster", "formaction") or (name.startswith("on")):
                self.links.append((tag, name, value or ""))


def test_the_report_needs_nothing_but_itself(every_kind):
    html = every_kind.report.read_text(encoding="utf-8")
    parsed = Resources()
    parsed.feed(html)
    assert {tag for tag, name, value in parsed.links if not (name == "href" and value.startswith("#"))} == set()
    assert "link" not in parsed.tags and "iframe" not in parsed.tags
    assert parsed.tags.count("script") == 3  # the figures' JSON, plotly.js, ours
    assert "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src &#39;none&#39;; script-src &#39;sha256-" in html
    assert render(load_runs(every_kind.paths[0])) == render(load_runs(every_kind.paths[0]))  # no clock, no randomness


def test_data_is_escaped_in_html_and_in_the_inline_json(tmp_path, monkeypatch):
    html = render(load_runs(builders.judge_run(tmp_path, monkeypatch, hostile=True)))
    for payload in builders.PAYLOADS.values():
        assert payload not in html
    assert html.lower().count("</script") == 3 and "<!--" not in html
    assert "&lt;script&gt;window.__pwned = &#39;script&#39;&lt;/script&gt;" in html  # in the tables, as text
    assert "\\u0026lt;script\\u0026gt;window.__pwned = \\u0027script\\u0027" in html  # in the figures' JSON, plot-safe


def test_plotly_strings_and_inline_code_are_made_safe():
    assert plot_text("<b>x</b> & <br>") == "&lt;b&gt;x&lt;/b&gt; &amp; &lt;br&gt;"
    for bad in ("a</script>b", "a</SCRIPT b", "<!-- x"):
        with pytest.raises(RuntimeError, match="cannot be inlined"):
            _inline(bad)
    assert _inline("x < y && y > z") == "x < y && y > z"


def test_report_command_writes_one_file_on_every_run(every_kind, tmp_path, capsys, monkeypatch):
    from bineval_dspy.core.console import console, shown

    for where in (console, shown):  # the written line names five run folders: unwrapped, however deep tmp_path is
        monkeypatch.setattr(where, "width", 400)
    out = tmp_path / "all.html"
    assert cli.main(["report", *map(str, every_kind.paths), "-o", str(out), "--title", "<i>mine</i>"]) == 0
    captured = capsys.readouterr()
    err = captured.err + captured.out  # notes on stderr, results on stdout
    assert f"wrote {out}" in err and "judge" in err and "tune" in err
    html = out.read_text(encoding="utf-8")
    assert "<title>&lt;i&gt;mine&lt;/i&gt;</title>" in html and html.count('<section id="run-') == 5
    assert cli.main(["report", str(every_kind.paths[0]), "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_an_optimizer_run_shows_its_test_split(every_kind):
    html = every_kind.report.read_text(encoding="utf-8")
    assert "Test split (1 items, never seen by the loop; final = iteration 1)" in html
    assert "+1.000 [1.000, 1.000]" in html  # the paired difference of the kept edit on the test prompt


def test_score_axes_span_the_whole_scale_and_names_are_never_broken():
    """A held-out score that moved from 0.61 to 0.63 is drawn on 0-1, not stretched to fill the plot; an arm's or a
    method's name in a table is kept on one line (issue 47, low)."""
    from bineval_dspy.report import figures
    from bineval_dspy.report.stats import TrajectoryStep

    steps = [TrajectoryStep(0, "start", 0.61, 300, "start", 0.61), TrajectoryStep(1, "rules", 0.63, 320, "accepted", 0.63)]
    layout = figures.trajectory(steps)["layout"]
    assert layout["yaxis"]["range"] == figures.SCORE_RANGE and figures.SCORE_RANGE[0] <= 0 and figures.SCORE_RANGE[1] >= 1
    css = (ASSETS / "report.css").read_text()
    assert "break-all" not in css and "white-space: nowrap" in css.split("code {", 1)[1].split("}", 1)[0]
