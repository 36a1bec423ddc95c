"""`bineval judge --ray` on a local Ray cluster of two workers (issue 35): the file equals a single-process run's,
and a worker killed mid-run has its rows redone, none written twice. Skipped where Ray is not installed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.testing.server import FixedDelayServer, serving

pytest.importorskip("ray")


def files(tmp_path: Path, rows: int) -> tuple[Path, Path]:
    checklist = Checklist(task="t", dimensions=["d"], questions=[Question(text="Is it short?", dimension="d"), Question(text="Is it kind?", dimension="d")])
    (tmp_path / "checklist.json").write_text(checklist.model_dump_json())
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps({"input": f"in {n}", "output": f"out {n}"}) + "\n" for n in range(rows)))
    return tmp_path / "checklist.json", tmp_path / "rows.jsonl"


def judge(given: tuple[Path, Path], out: Path, server: FixedDelayServer, *extra: str) -> int:
    return cli.main([
        "judge", "--checklist", str(given[0]), "--data", str(given[1]), "-o", str(out), "--lm", "openai/m", "--api-base", server.url,
        "--explanations", "none", "--concurrency", "8", "--cache-dir", str(out.parent / f"cache-{out.stem}"), *extra,
    ])  # fmt: skip


def written(out: Path) -> list[tuple[int, list[str]]]:
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return [(row["bineval"]["line"], [v["answer"] for v in row["bineval"]["scorecard"]["verdicts"]]) for row in rows]


def test_two_workers_write_what_one_process_writes(tmp_path, ray_cluster):
    given = files(tmp_path, rows=40)
    with serving(FixedDelayServer(0.005, slots=64)) as server:
        assert judge(given, tmp_path / "one.jsonl", server) == 0
        assert judge(given, tmp_path / "ray.jsonl", server, "--ray", "local", "--ray-workers", "2") == 0
        assert server.answered == 2 * 40 * 2  # each run asked every question once (their caches are apart)
        assert judge(given, tmp_path / "ray.jsonl", server) == 0  # one process resumes it: complete, nothing to judge
        assert server.answered == 2 * 40 * 2
    assert written(tmp_path / "ray.jsonl") == written(tmp_path / "one.jsonl")
    strip = lambda path: [{k: v for k, v in json.loads(line).items() if k != "bineval"} for line in path.read_text().splitlines()]  # noqa: E731
    assert strip(tmp_path / "ray.jsonl") == strip(tmp_path / "one.jsonl")  # the rows' own fields, in order


def test_a_killed_worker_has_its_rows_redone_and_none_written_twice(tmp_path, ray_cluster):
    given = files(tmp_path, rows=64)
    with serving(FixedDelayServer(0.05, slots=64)) as server:
        killed: list[int] = []

        def kill_one_worker() -> None:
            while server.answered < 20:
                time.sleep(0.01)
            found = subprocess.run(["pgrep", "-f", "ray::_Worker"], capture_output=True, text=True).stdout.split()
            if found:
                os.kill(int(found[0]), signal.SIGKILL)
                killed.append(int(found[0]))

        killer = threading.Thread(target=kill_one_worker, daemon=True)
        killer.start()
        assert judge(given, tmp_path / "ray.jsonl", server, "--ray", "local", "--ray-workers", "2") == 0
        killer.join(5)
    assert killed, "no worker process was found to kill"
    rows = written(tmp_path / "ray.jsonl")
    assert [line for line, _ in rows] == list(range(1, 65))  # every row once, in input order
    assert all(answers == ["yes", "no"] for _, answers in rows)


def test_ray_missing_or_with_a_budget_is_one_line(tmp_path, monkeypatch, capsys):
    given = files(tmp_path, rows=1)
    args = ["judge", "--checklist", str(given[0]), "--data", str(given[1]), "-o", str(tmp_path / "o.jsonl"), "--lm", "openai/m"]
    assert cli.main([*args, "--api-base", "http://127.0.0.1:1/v1", "--ray", "local", "--max-calls", "5"]) == 2
    assert "--ray: a cluster run takes no --batch and no budget (--max-cost, --max-calls)" in capsys.readouterr().err
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # as where Ray is not installed
    assert cli.main([*args, "--api-base", "http://127.0.0.1:1/v1", "--ray", "local"]) == 2
    assert "--ray: Ray is not installed; pip install 'bineval-dspy[ray]'" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()
