"""Several ``bineval tune`` workers on one PostgreSQL study: no trial twice, the exact total, a killed worker resumed.

A throwaway PostgreSQL cluster runs on 127.0.0.1 on a free port in a temporary folder (as the ``postgres`` user
when the tests run as root: PostgreSQL refuses root). The workers are processes of ``tests.tune.fake_worker``,
the bineval CLI with the cheap test kind registered. Skipped only where PostgreSQL is not installed; ``.ci/run``
installs it.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from optuna.trial import FrozenTrial, TrialState

INITDB = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not INITDB, reason="PostgreSQL is not installed (Debian: apt-get install postgresql; .ci/run does)")

BODY = """
name = "shared"
storage = "{url}"
trials = {trials}
seed = 3
heartbeat = 1
[objectives]
loss = "minimize"
[space]
x = {{ type = "float", low = 0.0, high = 1.0 }}
y = {{ type = "float", low = 0.0, high = 1.0 }}
[pruner]
kind = "none"
[run]
kind = "fake"
steps = 2
delay = {delay}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A fresh cluster, stopped and removed afterwards; yields its SQLAlchemy URL."""
    bin_dir = Path(INITDB[-1]).parent
    root = os.geteuid() == 0
    folder = Path(tempfile.mkdtemp(prefix="bineval-pg-", dir="/tmp" if root else None))  # /tmp: the postgres user can reach it
    as_owner: list[str] = []
    if root:
        shutil.chown(folder, "postgres")
        as_owner = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", free_port()

    def pg(*command: str | Path) -> None:
        subprocess.run([*as_owner, *map(str, command)], check=True, capture_output=True, timeout=120)

    try:
        pg(bin_dir / "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8")
        pg(bin_dir / "pg_ctl", "-D", data, "-l", folder / "log", "-w", "-o", f"-p {port} -k {folder} -c listen_addresses=127.0.0.1", "start")
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres"
    finally:
        if (data / "postmaster.pid").exists():
            pg(bin_dir / "pg_ctl", "-D", data, "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)


def worker(config: Path, log: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.tune.fake_worker", "tune", str(config), *extra],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )


def finish(processes: list[subprocess.Popen], logs: list[Path], timeout: float = 240) -> None:
    for process, log in zip(processes, logs):
        assert process.wait(timeout=timeout) == 0, log.read_text()[-3000:]


def trials(url: str) -> list[FrozenTrial]:
    return optuna.load_study(study_name="shared", storage=url).get_trials()


def check_no_duplicates(all_trials: list[FrozenTrial]) -> None:
    numbers = [t.number for t in all_trials]
    assert numbers == sorted(set(numbers))
    # a worker killed between its two suggestions leaves a trial holding x only: a whole parameter set is both
    drawn = [(t.params["x"], t.params["y"]) for t in all_trials if {"x", "y"} <= t.params.keys()]
    assert len(drawn) == len(set(drawn))  # no parameter set twice, though every worker has seed 3
    failed = [t for t in all_trials if t.state == TrialState.FAIL]
    assert all(t.user_attrs.get("surplus") or t.params for t in failed)  # a surplus trial never took parameters


def test_two_workers_share_a_study_and_a_killed_one_is_resumed(tmp_path, postgres):
    config = tmp_path / "tune.toml"
    config.write_text(BODY.format(url=postgres, trials=8, delay=0.5))
    logs = [tmp_path / f"worker{i}.log" for i in range(2)]
    finish([worker(config, log) for log in logs], logs)  # started together, on an empty database
    first = trials(postgres)
    check_no_duplicates(first)
    complete = [t for t in first if t.state == TrialState.COMPLETE]
    assert len(complete) == 8 and not [t for t in first if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    assert len({t.user_attrs["worker"] for t in complete}) == 2  # both did some

    config.write_text(BODY.format(url=postgres, trials=20, delay=0.8))  # 12 more; slower, to be killed in the middle
    logs = [tmp_path / f"second{i}.log" for i in range(3)]
    a, b = worker(config, logs[0]), worker(config, logs[1])
    deadline = time.monotonic() + 120
    victim = None
    while victim is None and time.monotonic() < deadline:
        if sum(t.state == TrialState.COMPLETE for t in trials(postgres)) >= 10:
            a.send_signal(signal.SIGSTOP)  # frozen, so the trial it holds now is the one the kill leaves behind
            now = trials(postgres)
            running = [t for t in now if t.state == TrialState.RUNNING and t.user_attrs.get("worker", "").endswith(f":{a.pid}") and t.params]
            if running:
                victim = running[0].number
                break
            a.send_signal(signal.SIGCONT)  # caught between two trials: let it start the next
        time.sleep(0.1)
    assert victim is not None, "the worker was never caught inside a trial: " + logs[0].read_text()[-3000:]
    a.send_signal(signal.SIGKILL)
    a.wait(timeout=30)
    c = worker(config, logs[2])  # the rerun
    finish([b, c], logs[1:])

    final = trials(postgres)
    check_no_duplicates(final)
    assert final[victim].state == TrialState.FAIL  # failed by its stale heartbeat, not counted
    assert sum(t.state == TrialState.COMPLETE for t in final) == 20 and not [t for t in final if t.state == TrialState.RUNNING]
    assert [t.params for t in final[:8]] == [t.params for t in first[:8]]  # finished trials are kept

    config.write_text(BODY.format(url=postgres, trials=26, delay=0.2))
    log = tmp_path / "spawned.log"
    parent = worker(config, log, "--workers", "2")
    finish([parent], [log])
    spawned = trials(postgres)
    check_no_duplicates(spawned)
    assert sum(t.state == TrialState.COMPLETE for t in spawned) == 26
    pids = {t.user_attrs["worker"].rsplit(":", 1)[1] for t in spawned[len(final):] if t.state == TrialState.COMPLETE}
    assert 1 <= len(pids) <= 2 and str(parent.pid) not in pids  # the spawned workers ran them, not the parent
