"""`bineval tune --workers 2 --ray local`: the workers as Ray tasks on one study (issue 35): the study's exact count,
no trial run twice, a kind registered in the command's process known to the tasks. Skipped where Ray is not
installed."""

from __future__ import annotations

import pytest

from bineval_dspy import cli
from tests.tune.fakes import CALLS_FILE
from tests.tune.test_tune_study import config, fake_kind, results  # noqa: F401  (fake_kind: the autouse fixture)

pytest.importorskip("ray")


def test_trials_as_ray_tasks_share_one_study(tmp_path, ray_cluster, capsys):
    path = config(tmp_path, trials=6, extra="delay = 0.05")
    # a heartbeat no loaded test machine misses: a trial failed as stale (and replaced) is another test's subject
    path.write_text(path.read_text().replace("heartbeat = 1\n", "heartbeat = 60\n"))
    assert cli.main(["tune", str(path), "--workers", "2", "--ray", "local"]) == 0
    done = results(tmp_path)
    # finished: complete, or pruned (which trials the pruner stops depends on which others finished first)
    assert len(done.trials) == 6 and all(t.state in ("COMPLETE", "PRUNED") for t in done.trials)
    calls = [int(n) for p in (tmp_path / "runs" / "demo" / "trials").glob(f"*/{CALLS_FILE}") for n in p.read_text().split()]
    assert sorted(calls) == [t.number for t in sorted(done.trials, key=lambda t: t.number)]  # each trial run once
    assert cli.main(["tune", str(path)]) == 0  # one process resumes it: nothing left to run
    assert len(results(tmp_path).trials) == 6
