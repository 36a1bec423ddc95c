"""The one loop every resumable run goes through (``runs.execute``): resume, refusal of other settings, the header
and how a run ends, on a toy run whose units are squares."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bineval_dspy.core.errors import BudgetExhausted, InputError
from bineval_dspy.core.runlog import RunLog, model_log
from bineval_dspy.lm.budget import Budget, BudgetMeter
from bineval_dspy.lm.usage import Cost
from bineval_dspy.runs.execute import Here, execute, executor_of
from bineval_dspy.runs.header import RunHeader, read_header


class Square(BaseModel):
    n: int
    square: int


@dataclass
class Squares:
    out: Path
    numbers: list[int]
    power: str = "2"
    fail: set[int] = field(default_factory=set)  # units whose outcome is an error, not a record
    stop_after: int | None = None  # a budget that ends the run after this many units
    done: list[int] = field(default_factory=list)  # the units this process did
    kind: str = "squares"
    prune: bool = False

    def items(self) -> list[int]:
        return self.numbers

    def key(self, item: int) -> str:
        return str(item)

    def log(self) -> RunLog[Square]:
        return model_log(self.out, Square, key=lambda r: str(r.n))

    def fingerprint(self) -> dict[str, str]:
        return {"power": self.power}

    def do(self, todo: Sequence[int], meter: BudgetMeter) -> Iterator[Square | str]:
        for index, n in enumerate(todo):
            if self.stop_after is not None and index == self.stop_after:
                raise BudgetExhausted("budget reached")
            self.done.append(n)
            yield f"{n}: refused" if n in self.fail else Square(n=n, square=n * n)

    def actor(self) -> tuple[type, tuple[Any, ...]]:
        raise AssertionError("not on a cluster")

    def record(self, outcome: Square | str) -> Square | None:
        return outcome if isinstance(outcome, Square) else None

    def usage(self, outcome: Square | str) -> Cost:
        return Cost(lm_calls=1)


def test_a_run_writes_its_records_and_header_and_a_rerun_does_only_what_is_left(tmp_path):
    out = tmp_path / "squares.jsonl"
    first = Squares(out, [1, 2, 3, 4], fail={3})
    done = execute(first, Here())
    assert (done.written, done.todo, done.kept, len(done.failed)) == (3, 4, 0, 1)
    header = read_header(out)
    assert header is not None and (header.kind, header.status, header.usage.lm_calls) == ("squares", "stopped", 4)  # a failed unit: stopped
    again = Squares(out, [1, 2, 3, 4, 5])
    done = execute(again, Here())
    assert again.done == [3, 5] and done.kept == 3 and sorted(done.records) == ["1", "2", "3", "4", "5"]
    header = read_header(out)
    assert header is not None and (header.status, header.usage.lm_calls) == ("finished", 6)  # usage summed over resumes


def test_other_settings_are_refused_and_overwrite_starts_afresh(tmp_path):
    out = tmp_path / "squares.jsonl"
    execute(Squares(out, [1, 2]), Here())
    with pytest.raises(InputError, match=r"made with other settings \(power: '2' -> '3'\)"):
        execute(Squares(out, [1, 2], power="3"), Here())
    cubes = Squares(out, [1, 2], power="3")
    assert execute(cubes, Here(), overwrite=True).written == 2 and cubes.done == [1, 2]


def test_a_budget_stop_keeps_what_was_written_and_says_stopped(tmp_path):
    out = tmp_path / "squares.jsonl"
    done = execute(Squares(out, [1, 2, 3], stop_after=2), Here())
    assert done.stopped is not None and done.written == 2
    header = read_header(out)
    assert header is not None and header.status == "stopped"
    assert execute(Squares(out, [1, 2, 3]), Here()).written == 1


def test_a_cluster_takes_no_budget(tmp_path):
    with pytest.raises(InputError, match="a cluster run takes no budget"):
        executor_of("local", 2, BudgetMeter(Budget(max_calls=5)))
    assert isinstance(executor_of(None, 2, BudgetMeter(Budget(max_calls=5))), Here)


def test_pruning_runs_drop_records_they_no_longer_ask_for(tmp_path):
    out = tmp_path / "squares.jsonl"
    execute(Squares(out, [1, 2, 3]), Here())
    kept = Squares(out, [1, 2])
    assert sorted(execute(kept, Here()).records) == ["1", "2", "3"]  # not pruning: a smaller limit keeps the rest
    pruned = Squares(out, [1, 2])
    pruned.prune = True
    assert sorted(execute(pruned, Here()).records) == ["1", "2"]
    assert len(out.read_text().splitlines()) == 2


def test_a_new_kind_of_run_is_read_by_show_and_report_from_its_header(tmp_path, capsys):
    """A resumable command added later needs its run, its parser and its test: ``show`` and ``report`` read its log
    by the header, with no reader of its own."""
    from bineval_dspy import cli
    from bineval_dspy.report import render
    from bineval_dspy.report.runs import LogRun, load_run

    out = tmp_path / "squares.jsonl"
    execute(Squares(out, [1, 2, 3]), Here())
    for path in (out, tmp_path / "squares.jsonl.run.json"):  # the log, or its header
        run = load_run(path)
        assert isinstance(run, LogRun) and run.header.kind == "squares" and [r["square"] for r in run.records] == [1, 4, 9]
    assert cli.main(["show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "'squares' run, finished" in shown and "square" in shown
    page = render([run])
    assert "squares</code> run (finished" in page and "<td class=\"text\">9</td>" in page


def test_a_run_with_records_a_rerun_does_again_is_incomplete_not_finished(tmp_path):
    """Issue 55, minor: the header said `finished` for a judge run that exited 1 with incomplete rows."""

    @dataclass
    class SmallSquares(Squares):
        def log(self) -> RunLog[Square]:
            return model_log(self.out, Square, key=lambda r: str(r.n), finished=lambda r: r.square < 10)

    out = tmp_path / "squares.jsonl"
    done = execute(SmallSquares(out, [1, 2, 4]), Here())
    header = read_header(out)
    assert done.unfinished == 1 and header is not None and header.status == "incomplete"
    again = SmallSquares(out, [1, 2])
    execute(again, Here())
    header = read_header(out)
    assert again.done == [] and header is not None and header.status == "finished"


def test_a_torn_header_is_one_line_and_the_run_starts_afresh_with_overwrite(tmp_path):
    out = tmp_path / "squares.jsonl"
    execute(Squares(out, [1, 2, 3]), Here())
    header = out.with_name(out.name + ".run.json")
    assert not out.with_name(out.name + ".fingerprint.json").exists()  # the header is the one fingerprint store
    header.write_text(header.read_text()[:25])
    with pytest.raises(InputError, match=r"squares.jsonl.run.json:3: malformed JSON .*; it records what made the records of squares.jsonl"):
        execute(Squares(out, [1, 2, 3, 4]), Here())
    again = Squares(out, [1, 2, 3, 4])
    assert execute(again, Here(), overwrite=True).kept == 0 and again.done == [1, 2, 3, 4]


def test_output_from_before_headers_resumes_under_its_sidecar_which_the_header_then_replaces(tmp_path):
    out = tmp_path / "squares.jsonl"
    execute(Squares(out, [1, 2]), Here())
    header = out.with_name(out.name + ".run.json")
    old = out.with_name(out.name + ".fingerprint.json")
    old.write_text(json.dumps(RunHeader.model_validate_json(header.read_text()).fingerprint))
    header.unlink()  # as written before headers: the records and their sidecar
    again = Squares(out, [1, 2, 3])
    assert execute(again, Here()).kept == 2 and again.done == [3]
    assert not old.exists() and RunHeader.model_validate_json(header.read_text()).status == "finished"
    old.write_text(json.dumps({"n": "other"}))
    header.unlink()
    with pytest.raises(InputError, match="made with other settings"):
        execute(Squares(out, [1, 2, 3]), Here())


def test_a_failed_run_says_why_in_its_header(tmp_path):
    out = tmp_path / "squares.jsonl"

    class Failing(Squares):
        def do(self, todo, meter):
            raise ValueError("the LM went away\nsecond line")

    with pytest.raises(ValueError):
        execute(Failing(out, [1, 2]), Here())
    header = RunHeader.model_validate_json(out.with_name(out.name + ".run.json").read_text())
    assert (header.status, header.error) == ("failed", "ValueError: the LM went away")
