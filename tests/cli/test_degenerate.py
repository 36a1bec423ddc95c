"""A judge whose LM verdicts are all one answer, or whose explanations repeat a phrase or echo the prompt, is said to
be degenerate in one line by `judge`, `show`, the HTML report and the pytest plugin (issue 47, item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.degenerate import Tally, degeneracy, degenerate_explanation
from bineval_dspy.core.schema import Checklist, Question, Verdict
from tests.conftest import route_cli_lm, verdict_json


def verdicts(answers: str, by: str = "custom/lm", explanation: str = "it does") -> list[Verdict]:
    return [Verdict(question_id=f"q{k}", answer="yes" if a == "y" else "no", explanation=explanation, judge=by) for k, a in enumerate(answers)]


def test_the_rule_reads_lm_verdicts_only_and_needs_ten():
    assert degeneracy(Tally.of(verdicts("y" * 9))) is None  # too few to tell
    found = degeneracy(Tally.of(verdicts("y" * 15)))
    assert found is not None and (found.kind, found.answer, found.count, found.verdicts) == ("one_answer", "yes", 15, 15)
    assert degeneracy(Tally.of(verdicts("y" * 19 + "n"))) is not None  # 95%: nearly all one answer
    assert degeneracy(Tally.of(verdicts("y" * 14 + "n"))) is None  # 93%
    assert degeneracy(Tally.of([*verdicts("yyyyynnnnn"), *verdicts("y" * 30, by="code:punctuation:no_comma")])) is None  # code does not count
    assert degeneracy(Tally.of(verdicts("n" * 12))).answer == "no"  # type: ignore[union-attr]


def test_degenerate_explanations_are_a_repeated_phrase_or_prompt_text():
    assert degenerate_explanation("Your output fields are: 1. `verdict`")
    assert degenerate_explanation("the poem is good the poem is good the poem is good")
    assert not degenerate_explanation("It has three lines, and the second names the autumn wind.")
    leaked = degeneracy(Tally.of(verdicts("yyyyynnnnn", explanation="[[ ## verdict ## ]] yes")))
    assert leaked is not None and leaked.kind == "explanations" and "echo the prompt" in leaked.message()
    assert degeneracy(Tally.of(verdicts("yyyyynnnnn"))) is None


def judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> tuple[Path, str]:
    """`bineval judge` of 5 rows x 3 questions on an LM that says yes to all: 15 of 15 LM verdicts 'yes'."""
    questions = [Question(text=f"Is it {w}?", dimension="d") for w in ("short", "kind", "clear")]
    checklist = tmp_path / "checklist.json"
    checklist.write_text(Checklist(task="t", dimensions=["d"], questions=questions).model_dump_json())
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"input": "a", "output": f"b{k}"}) + "\n" for k in range(5)))
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes"))
    out = tmp_path / "out.jsonl"
    assert cli.main(["judge", "--checklist", str(checklist), "--data", str(data), "-o", str(out)]) == 0
    return out, capsys.readouterr().err


def test_judge_and_show_say_a_one_answer_judge_is_degenerate(tmp_path, monkeypatch, capsys):
    out, err = judged(tmp_path, monkeypatch, capsys)
    line = next(line for line in err.splitlines() if "degenerate" in line)
    assert "15 of 15 LM verdicts are 'yes'" in line and "bineval calibrate" in line and "--lm" in line
    assert cli.main(["show", str(out)]) == 0
    shown = capsys.readouterr()
    assert "15 of 15 LM verdicts are 'yes'" in shown.out + shown.err


def test_the_report_says_a_one_answer_judge_is_degenerate(tmp_path, monkeypatch, capsys):
    out, _ = judged(tmp_path, monkeypatch, capsys)
    report = tmp_path / "report.html"
    assert cli.main(["report", str(out), "-o", str(report), "--no-charts"]) == 0
    assert "15 of 15 LM verdicts are &#39;yes&#39;" in report.read_text() or "15 of 15 LM verdicts are 'yes'" in report.read_text()


def test_the_judged_summary_carries_the_flag(tmp_path, monkeypatch, capsys):
    from bineval_dspy.judges.question import NO_P_YES
    from bineval_dspy.judges.rows import JudgedSummary, JudgeResult

    out, _ = judged(tmp_path, monkeypatch, capsys)
    rows = [json.loads(line)["bineval"] for line in out.read_text().splitlines()]
    summary = JudgedSummary(Checklist.model_validate_json((tmp_path / "checklist.json").read_text()), NO_P_YES)
    for row in rows:
        summary.add(JudgeResult.model_validate(row))
    assert summary.degenerate is not None and summary.degenerate.kind == "one_answer"


def test_the_pytest_plugin_summary_says_so():
    from bineval_dspy.core.schema import Scorecard
    from bineval_dspy.pytest_plugin import BinevalSession

    session = BinevalSession(None, None)
    for _ in range(4):
        session.record(Scorecard(dimension_scores={"d": 1.0}, overall=1.0, verdicts=verdicts("yyy")), True, cost=None)  # type: ignore[arg-type]
    lines = session.summary()
    assert lines[0].startswith("bineval: 4 output(s) judged") and "12 of 12 LM verdicts are 'yes'" in lines[1] and "--bineval-lm" in lines[1]
