"""`bineval judge --ray` and `bineval generate --ray` on a local Ray cluster of two workers (issue 35): the file
equals a single-process run's, and a worker killed mid-run has its rows redone, none written twice. Skipped where
Ray is not installed."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.testing.server import FixedDelayServer, serving
from tests.fake_openai import scripted_server

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


@contextmanager
def killing_one(actor: str, ready: Callable[[], bool]) -> Iterator[list[int]]:
    """A thread that SIGKILLs one Ray actor process of class ``actor`` once ``ready()`` holds; yields the pids it
    killed (checked, on leaving, to be one)."""
    killed: list[int] = []

    def kill() -> None:
        while not ready():
            time.sleep(0.01)
        found = subprocess.run(["pgrep", "-f", f"ray::{actor}"], capture_output=True, text=True).stdout.split()
        if found:
            os.kill(int(found[0]), signal.SIGKILL)
            killed.append(int(found[0]))

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    yield killed
    killer.join(5)
    assert killed, "no worker process was found to kill"


def test_a_killed_worker_has_its_rows_redone_and_none_written_twice(tmp_path, ray_cluster):
    given = files(tmp_path, rows=64)
    with serving(FixedDelayServer(0.05, slots=64)) as server, killing_one("JudgeWorker", lambda: server.answered >= 20):
        assert judge(given, tmp_path / "ray.jsonl", server, "--ray", "local", "--ray-workers", "2") == 0
    rows = written(tmp_path / "ray.jsonl")
    assert [line for line, _ in rows] == list(range(1, 65))  # every row once, in input order
    assert all(answers == ["yes", "no"] for _, answers in rows)


def test_ray_missing_or_with_a_budget_is_one_line(tmp_path, monkeypatch, capsys):
    given = files(tmp_path, rows=1)
    args = ["judge", "--checklist", str(given[0]), "--data", str(given[1]), "-o", str(tmp_path / "o.jsonl"), "--lm", "openai/m"]
    assert cli.main([*args, "--api-base", "http://127.0.0.1:1/v1", "--ray", "local", "--max-calls", "5"]) == 2
    assert "--ray: a cluster run takes no budget (--max-cost, --max-calls)" in capsys.readouterr().err
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # as where Ray is not installed
    assert cli.main([*args, "--api-base", "http://127.0.0.1:1/v1", "--ray", "local"]) == 2
    assert "--ray: Ray is not installed; pip install 'bineval-dspy[ray]'" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


def suite(tmp_path: Path, rows: int) -> Path:
    """IFEval-style rows, their keys integers as IFEval writes them (an output writes each key back as given)."""
    lines = [{"key": n, "prompt": f"Say {n} in lowercase.", "instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]} for n in range(rows)]
    (tmp_path / "suite.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return tmp_path / "suite.jsonl"


def echo(body: dict) -> str:
    """A response that names its prompt's number: a row's output tells which row it answers."""
    prompt = str(body["messages"][-1]["content"])
    return "number " + prompt.split("Say ", 1)[1].split(" ", 1)[0] if "Say " in prompt else "no prompt"


def generate(suite: Path, out: Path, url: str, *extra: str) -> int:
    return cli.main([
        "generate", "--suite", str(suite), "-o", str(out), "--lm", "openai/m", "--api-base", url, "--threads", "4",
        "--cache-dir", str(out.parent / f"cache-{out.stem}"), *extra,
    ])  # fmt: skip


def test_generate_on_two_workers_writes_what_one_process_writes(tmp_path, ray_cluster):
    rows = suite(tmp_path, 40)
    with scripted_server(echo) as server:
        assert generate(rows, tmp_path / "one.jsonl", server.url) == 0
        assert generate(rows, tmp_path / "ray.jsonl", server.url, "--ray", "local", "--ray-workers", "2") == 0
        assert len(server.bodies) == 2 * 40
        assert generate(rows, tmp_path / "ray.jsonl", server.url) == 0  # one process resumes it: nothing to generate
        assert len(server.bodies) == 2 * 40
    keep = lambda path: [{k: v for k, v in json.loads(line).items() if k not in ("usage", "seconds")} for line in path.read_text().splitlines()]  # noqa: E731
    ray, one = keep(tmp_path / "ray.jsonl"), keep(tmp_path / "one.jsonl")
    assert ray == one and [row["key"] for row in ray] == list(range(40))  # in suite order, integer keys as given
    assert all(row["response"] == f"number {row['key']}" for row in ray)


def test_a_killed_generate_worker_has_its_rows_redone_and_none_written_twice(tmp_path, ray_cluster):
    rows = suite(tmp_path, 64)

    def slow_echo(body: dict) -> str:
        time.sleep(0.05)
        return echo(body)

    with scripted_server(slow_echo) as server, killing_one("GenerateWorker", lambda: len(server.bodies) >= 20):
        assert generate(rows, tmp_path / "ray.jsonl", server.url, "--ray", "local", "--ray-workers", "2") == 0
    written = [json.loads(line) for line in (tmp_path / "ray.jsonl").read_text().splitlines()]
    assert [row["key"] for row in written] == list(range(64))  # every row once, in suite order
    assert all(row["response"] == f"number {row['key']}" for row in written)


def test_generate_on_ray_with_a_budget_is_one_line(tmp_path, capsys):
    args = ["generate", "--suite", str(suite(tmp_path, 1)), "-o", str(tmp_path / "o.jsonl"), "--lm", "openai/m", "--api-base", "http://127.0.0.1:1/v1"]
    assert cli.main([*args, "--ray", "local", "--max-calls", "5"]) == 2
    assert "--ray: a cluster run takes no budget (--max-cost, --max-calls)" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


def test_meta_eval_on_two_workers_scores_what_one_process_scores(tmp_path, ray_cluster):
    from tests.meta.fixtures import CHECKLIST, summeval_files
    from tests.meta.test_meta_eval_cli import write_config

    (tmp_path / "data").mkdir()
    summeval_files(tmp_path / "data")
    (tmp_path / "checklist.json").write_text(json.dumps(CHECKLIST))
    methods = '[[methods]]\nname = "b"\nkind = "bineval"\nchecklist = "checklist.json"\n\n[[methods]]\nname = "r"\nkind = "rouge_l"\n'
    with serving(FixedDelayServer(0.0, slots=64, no_words=("fluent",))) as server:
        head = f'[lm]\nspec = "openai/m"\napi_base = "{server.url}"\n'
        config = write_config(tmp_path, methods, head=head)
        one = ["meta-eval", str(config), "--cache-dir", str(tmp_path / "c1")]
        assert cli.main(one) == 0
        (tmp_path / "runs" / "meta").rename(tmp_path / "one")
        asked = server.answered
        assert cli.main(["meta-eval", str(config), "--cache-dir", str(tmp_path / "c2"), "--ray", "local", "--ray-workers", "2"]) == 0
        assert server.answered == 2 * asked  # every question asked once more, by the workers
    keep = lambda path: [{k: v for k, v in json.loads(line).items() if k not in ("usage", "seconds")} for line in path.read_text().splitlines()]  # noqa: E731
    ray, single = keep(tmp_path / "runs" / "meta" / "scores.jsonl"), keep(tmp_path / "one" / "scores.jsonl")
    assert ray == single and {row["method"] for row in ray} == {"b", "r"}
    table = lambda path: [{k: v for k, v in row.items() if "seconds" not in k} for row in csv.DictReader(path.open())]  # noqa: E731
    assert table(tmp_path / "runs" / "meta" / "results.csv") == table(tmp_path / "one" / "results.csv")  # all but the timings
