"""``bineval compare BASE NEW``: two runs paired on their shared keys, a paired interval and a sign test, the verdicts
that flipped, and ``--fail-on-regression``'s own exit code (issue 57, item 17)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.console import console
from bineval_dspy.core.errors import ExitCode
from bineval_dspy.core.schema import Checklist, Question, Verdict
from bineval_dspy.core.scoring import score
from bineval_dspy.experiment.grid import Check, GridCell, GridRow
from bineval_dspy.experiment.runner import ExperimentResults
from bineval_dspy.judges.rows import JudgeResult
from bineval_dspy.report.compare import compare_paths, compare_runs
from bineval_dspy.report.runs import ExperimentRun
from bineval_dspy.stats.sign import sign_test

CHECKLIST = Checklist(task="Reply.", dimensions=["tone"], questions=[Question(text="Is it polite?", dimension="tone"), Question(text="Is it warm?", dimension="tone")])


def judged(path: Path, answers: dict[str, tuple[str, str]]) -> Path:
    """`bineval judge` output in its real format: each row id's two answers."""
    with path.open("w", encoding="utf-8") as handle:
        for line, (key, pair) in enumerate(answers.items(), start=1):
            verdicts = [Verdict(question_id=q.id, answer=a, judge="custom/scripted") for q, a in zip(CHECKLIST.questions, pair, strict=True)]  # type: ignore[arg-type]
            card = score(CHECKLIST, verdicts)
            result = JudgeResult(line=line, complete="unanswered" not in pair, scorecard=card)
            handle.write(json.dumps(result.row({"id": key, "input": f"in {key}", "output": f"out {key}"})) + "\n")
    return path


def generated(path: Path, responses: dict[str, str]) -> Path:
    path.write_text("".join(json.dumps({"key": key, "prompt": f"Say {key}.", "response": text}) + "\n" for key, text in responses.items()))
    return path


def test_the_sign_test_is_the_exact_binomial():
    assert sign_test(0, 0) is None
    assert sign_test(5, 0) == pytest.approx(2 / 32)
    assert sign_test(3, 3) == 1.0
    assert sign_test(1, 9) == pytest.approx(2 * 11 / 1024)


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    """A console wide enough that no line the tests look for wraps."""
    monkeypatch.setattr(console, "width", 200)


def test_a_worse_run_fails_the_gate_with_its_own_code(tmp_path, capsys):
    rows = [f"r{k}" for k in range(12)]
    base = judged(tmp_path / "base.jsonl", {key: ("yes", "yes") for key in rows})
    new = judged(tmp_path / "new.jsonl", {key: ("yes", "no") if k < 9 else ("yes", "yes") for k, key in enumerate(rows)})
    assert cli.main(["compare", str(base), str(new)]) == ExitCode.OK  # without the flag: a report, exit 0
    out = capsys.readouterr().out
    assert "-0.375" in out and "(regression)" in out and "flipped yes>no" in out and "r0: Is it warm?" in out
    assert cli.main(["compare", str(base), str(new), "--fail-on-regression"]) == ExitCode.REGRESSION == 5
    assert "regression" in capsys.readouterr().err

    comparison = compare_paths(base, new)
    (column,) = comparison.columns
    assert (column.improved, column.worsened, len(column.lost()), len(column.gained())) == (0, 9, 9, 0)
    assert column.sign_p == pytest.approx(2 / 512)
    assert column.difference.high is not None and column.difference.high < 0


def test_a_better_or_equal_run_passes_and_only_shared_keys_are_paired(tmp_path, capsys):
    base = judged(tmp_path / "base.jsonl", {"a": ("no", "no"), "b": ("yes", "no"), "gone": ("yes", "yes")})
    new = judged(tmp_path / "new.jsonl", {"a": ("yes", "yes"), "b": ("yes", "no"), "added": ("no", "no")})
    assert cli.main(["compare", str(base), str(new), "--fail-on-regression"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "1 (gone) only in BASE" in out and "1 (added) only in NEW" in out and "flipped no>yes" in out
    (column,) = compare_paths(base, new).columns
    assert [item.key for item in column.items] == ["a", "b"] and (column.improved, column.worsened) == (1, 0)


def test_an_unanswered_item_in_new_is_never_a_pass(tmp_path, capsys):
    base = judged(tmp_path / "base.jsonl", {"a": ("yes", "yes"), "b": ("yes", "yes")})
    new = judged(tmp_path / "new.jsonl", {"a": ("yes", "yes"), "b": ("yes", "unanswered")})
    assert cli.main(["compare", str(base), str(new), "--fail-on-regression"]) == ExitCode.INCOMPLETE
    captured = capsys.readouterr()
    assert "1 item(s) scored in BASE have no score in NEW" in captured.err
    (column,) = compare_paths(base, new).columns
    assert len(column.scored) == 1 and not column.flips  # an unanswered verdict is no flip either


def test_runs_of_different_kinds_or_no_shared_keys_are_one_line(tmp_path, capsys):
    base = judged(tmp_path / "base.jsonl", {"a": ("yes", "yes")})
    other = generated(tmp_path / "gen.jsonl", {"a": "hello"})
    assert cli.main(["compare", str(base), str(other)]) == ExitCode.INPUT
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'generate' run cannot be compared" in err and "'judge' run" in err
    apart = judged(tmp_path / "apart.jsonl", {"z": ("yes", "yes")})
    assert cli.main(["compare", str(base), str(apart)]) == ExitCode.INPUT
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no row key in common" in err


def test_generate_outputs_count_changed_outputs_and_the_gate_says_it_measured_nothing(tmp_path, capsys):
    base = generated(tmp_path / "base.jsonl", {"1": "hello", "2": "world", "3": "same"})
    new = generated(tmp_path / "new.jsonl", {"1": "hello!", "2": "world", "3": "same"})
    (column,) = compare_paths(base, new).columns
    assert sum(item.changed_output for item in column.items) == 1 and not column.scored
    assert cli.main(["compare", str(base), str(new), "--fail-on-regression"]) == ExitCode.INCOMPLETE
    assert "nothing was scored in both runs" in capsys.readouterr().err


def test_experiment_grids_are_compared_arm_by_arm(tmp_path):
    def run(scores: dict[str, list[float]]) -> ExperimentRun:
        grid = [
            GridRow(id=f"p{k}", cells={arm: GridCell(output="x", score=values[k], checks=[Check(name="q", by="code", passed=values[k] > 0.5)]) for arm, values in scores.items()})
            for k in range(10)
        ]
        return ExperimentRun(source=tmp_path, results=ExperimentResults.model_construct(), grid=grid)

    base = run({"start": [1.0] * 10, "enforce": [1.0] * 10})
    new = run({"start": [1.0] * 10, "enforce": [0.0] * 8 + [1.0] * 2, "only_new": [0.0] * 10})
    comparison = compare_runs("experiment", base, new, "base", "new")
    assert [column.name for column in comparison.columns] == ["enforce", "start"]  # arms in both runs only
    assert [column.name for column in comparison.regressed] == ["enforce"]
    assert len(comparison.columns[0].lost()) == 8


def test_keys_and_questions_are_printed_as_written(tmp_path, capsys):
    base = judged(tmp_path / "base.jsonl", {"[b]row[/b]": ("yes", "yes")})
    new = judged(tmp_path / "new.jsonl", {"[b]row[/b]": ("no", "yes")})
    assert cli.main(["compare", str(base), str(new)]) == ExitCode.OK
    assert "[b]row[/b]: Is it polite?" in capsys.readouterr().out


def test_the_report_pairs_two_runs_in_a_comparison_section(tmp_path, capsys):
    rows = [f"r{k}" for k in range(12)]
    base = judged(tmp_path / "base.jsonl", {key: ("yes", "yes") for key in rows})
    new = judged(tmp_path / "new.jsonl", {key: ("yes", "no") if k < 9 else ("yes", "yes") for k, key in enumerate(rows)})
    out = tmp_path / "r.html"
    assert cli.main(["report", str(base), str(new), "--compare", "--no-charts", "-o", str(out)]) == ExitCode.OK
    html = out.read_text(encoding="utf-8")
    section = html.split('<section id="compare-1"', 1)[1]
    assert html.count('<section id="run-') == 2 and "rows <strong>(regression)</strong>" in section
    assert "<td>-0.375 [" in section and "<td>0.004</td>" in section
    assert '<td class="text">r0</td><td class="text">Is it warm?</td><td>yes</td><td>no</td>' in section
    assert cli.main(["report", str(base), "--compare", "-o", str(tmp_path / "one.html")]) == ExitCode.INPUT
    assert "--compare holds two runs" in capsys.readouterr().err
