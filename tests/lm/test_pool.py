"""Replica pools (issue 35): `--api-base` given more than once; calls go to the least busy server, and a server
that dies mid-run loses no row: its open calls are answered by another, and the file equals an undisturbed run's."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.lm.specs import make_lm
from bineval_dspy.testing.server import FixedDelayServer as Replica
from bineval_dspy.testing.server import serving as running
from tests.fake_openai import scripted_server, verdict


def files(tmp_path: Path, rows: int = 12) -> tuple[Path, Path]:
    checklist = Checklist(task="t", dimensions=["d"], questions=[Question(text="Is it short?", dimension="d"), Question(text="Is it kind?", dimension="d")])
    (tmp_path / "checklist.json").write_text(checklist.model_dump_json())
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps({"input": f"in {n}", "output": f"out {n}"}) + "\n" for n in range(rows)))
    return tmp_path / "checklist.json", tmp_path / "rows.jsonl"


def judge(files: tuple[Path, Path], out: Path, servers: list, *extra: str) -> int:
    bases = [arg for server in servers for arg in ("--api-base", server.url)]
    return cli.main([
        "judge", "--checklist", str(files[0]), "--data", str(files[1]), "-o", str(out), "--lm", "openai/m", *bases,
        "--explanations", "none", "--cache-dir", str(out.parent / f"cache-{out.stem}"), "--timeout", "5", *extra,
    ])  # fmt: skip


def verdicts(out: Path) -> list[tuple[int, list[str]]]:
    rows = [json.loads(line)["bineval"] for line in out.read_text().splitlines()]
    return [(row["line"], [v["answer"] for v in row["scorecard"]["verdicts"]]) for row in rows]


def test_a_replica_that_dies_mid_run_loses_no_row_and_answers_none_twice(tmp_path):
    given = files(tmp_path)
    with running(Replica(0.02, slots=64)) as a, running(Replica(0.02, slots=64)) as b, running(Replica(0.02, slots=64)) as c:
        assert judge(given, tmp_path / "calm.jsonl", [a, b, c], "--concurrency", "6") == 0
    with running(Replica(0.02, slots=64)) as a, running(Replica(0.02, slots=64, die_after=3)) as b, running(Replica(0.02, slots=64)) as c:
        assert judge(given, tmp_path / "stormy.jsonl", [a, b, c], "--concurrency", "6") == 0
        assert b.dead and b.answered == 3 and b.dropped >= 1  # it died holding calls
        assert a.answered + b.answered + c.answered == 12 * 2  # every verdict asked once more, none lost
    calm, stormy = verdicts(tmp_path / "calm.jsonl"), verdicts(tmp_path / "stormy.jsonl")
    assert stormy == calm and [line for line, _ in stormy] == list(range(1, 13))  # each row once, in order
    assert all(answers == ["yes", "no"] for _, answers in stormy)


def test_calls_go_to_the_least_busy_replica(tmp_path):
    given = files(tmp_path)
    with running(Replica(0.05, slots=4)) as a, running(Replica(0.05, slots=4)) as b, running(Replica(0.05, slots=4)) as c:
        assert judge(given, tmp_path / "out.jsonl", [a, b, c], "--concurrency", "12") == 0
    assert sorted(s.answered for s in (a, b, c))[0] >= 4  # none idle: 24 calls spread over three servers


def test_no_replica_answering_is_an_lm_failure_never_a_yes(tmp_path, capsys):
    given = files(tmp_path, rows=2)
    dead = [Replica(0.0), Replica(0.0)]
    for server in dead:
        server.httpd.server_close()  # nothing listens at either port
    assert judge(given, tmp_path / "out.jsonl", dead, "--timeout", "1") == 3
    assert "every LM verdict (4) unanswered" in capsys.readouterr().err
    assert all(answers == ["unanswered", "unanswered"] for _, answers in verdicts(tmp_path / "out.jsonl"))


def test_replicas_need_a_server_and_name_the_pool():
    with pytest.raises(InputError, match="`replicas`: more servers beside `api_base`"):
        make_lm("openai/m", replicas=["http://127.0.0.1:1/v1"])
    lm = make_lm("openai/m", api_base="http://127.0.0.1:1/v1", replicas=["http://127.0.0.1:2/v1"])
    assert lm.model == "openai/m@http://127.0.0.1:1/v1,http://127.0.0.1:2/v1"


def test_a_batch_run_is_refused_over_replicas(tmp_path, capsys):
    given = files(tmp_path, rows=1)
    code = cli.main([
        "judge", "--checklist", str(given[0]), "--data", str(given[1]), "--lm", "openai/m", "--batch",
        "--api-base", "http://127.0.0.1:1/v1", "--api-base", "http://127.0.0.1:2/v1", "-o", str(tmp_path / "o.jsonl"),
    ])  # fmt: skip
    assert code == 2 and "--batch: a batch goes to one server's batch API; give --api-base alone, without a second --api-base" in capsys.readouterr().err


def test_a_pool_is_another_lm_to_resume(tmp_path, capsys):
    """Cache keys and fingerprints name every server: output made by one server is not resumed by a pool."""
    given = files(tmp_path, rows=2)
    with running(Replica(0.0)) as a, running(Replica(0.0)) as b:
        assert judge(given, tmp_path / "out.jsonl", [a]) == 0
        capsys.readouterr()
        assert judge(given, tmp_path / "out.jsonl", [a, b]) == 2
    assert "made with other settings" in capsys.readouterr().err


def test_a_replica_that_answers_500_to_everything_is_routed_around(tmp_path):
    given = files(tmp_path, rows=6)
    with scripted_server(lambda body: (500, {"error": {"message": "sick"}})) as sick, running(Replica(0.0)) as well:
        assert judge(given, tmp_path / "out.jsonl", [sick, well], "--concurrency", "4") == 0
        assert well.answered == 12 and len(sick.bodies) >= 1  # tried, left out of the rotation, its calls answered elsewhere
    assert all(answers == ["yes", "no"] for _, answers in verdicts(tmp_path / "out.jsonl"))


def meta_config(tmp_path: Path, lm_table: str) -> Path:
    """A one-method meta-eval over three SummEval articles whose LM is given by ``lm_table``."""
    from tests.meta.fixtures import CHECKLIST, summeval_files
    from tests.meta.test_meta_eval_cli import write_config

    (tmp_path / "data").mkdir(exist_ok=True)
    summeval_files(tmp_path / "data")
    (tmp_path / "checklist.json").write_text(json.dumps(CHECKLIST))
    method = '[[methods]]\nname = "b"\nkind = "bineval"\nchecklist = "checklist.json"\n'
    return write_config(tmp_path, method, head=lm_table)


def test_an_lm_table_in_a_run_config_calls_its_replicas(tmp_path, capsys):
    with running(Replica(0.0, slots=8)) as a, running(Replica(0.0, slots=8)) as b:
        config = meta_config(tmp_path, f'[lm]\nspec = "openai/m"\napi_base = "{a.url}"\nreplicas = ["{b.url}"]\n')
        assert cli.main(["meta-eval", str(config), "--cache-dir", str(tmp_path / "c1"), "--threads", "4"]) == 0
        assert a.answered > 0 and b.answered > 0  # both servers of the table took calls
        pooled = a.answered + b.answered
        with running(Replica(0.0, slots=8)) as c:  # the command line's server replaces the table's, and says so
            assert cli.main(["meta-eval", str(config), "--cache-dir", str(tmp_path / "c2"), "--api-base", c.url, "--overwrite"]) == 0
        assert c.answered == pooled and a.answered + b.answered == pooled
    assert f"--api-base {c.url} replaces the servers of [lm]" in capsys.readouterr().err


def test_an_lm_table_is_checked_in_one_located_line(tmp_path, capsys):
    config = meta_config(tmp_path, '[lm]\nspec = "openai/m"\nreplicas = ["http://127.0.0.1:1/v1"]\n')
    assert cli.main(["meta-eval", str(config)]) == 2
    err = capsys.readouterr().err
    assert f"{config}:" in err and "[lm]" in err and "replicas are more servers beside api_base; give api_base too" in err
    config = meta_config(tmp_path, '[lm]\nspec = "openai/m"\nserver = "http://127.0.0.1:1/v1"\n')
    assert cli.main(["meta-eval", str(config)]) == 2
    assert "[lm] server: Extra inputs are not permitted" in capsys.readouterr().err


def test_an_lm_tables_servers_stay_out_of_the_run_fingerprint(tmp_path):
    from bineval_dspy.meta.config import load_config

    one = load_config(meta_config(tmp_path, '[lm]\nspec = "openai/m"\napi_base = "http://127.0.0.1:1/v1"\nreplicas = ["http://127.0.0.1:2/v1"]\n'))
    assert one.lm == "openai/m" and one.servers == ("http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1")
    plain = load_config(meta_config(tmp_path, 'lm = "openai/m"\n'))
    assert plain.servers == () and one.model_dump() == plain.model_dump()  # where the model runs is not what it is


def test_a_replica_that_hangs_loses_no_call_while_another_is_healthy(tmp_path):
    """Issue 46, item 1: one attempt had the call's whole budget, so a call routed to a hung replica ended unanswered
    (45 of 120 verdicts at --concurrency 8 --timeout 2); an attempt now gets one timeout and a slow one is hedged."""
    checklist = Checklist(task="t", dimensions=["d"], questions=[Question(text=f"Is it {word}?", dimension="d") for word in ("short", "kind", "clear")])
    (tmp_path / "checklist.json").write_text(checklist.model_dump_json())
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps({"input": f"in {n}", "output": f"out {n}"}) + "\n" for n in range(40)))
    given = (tmp_path / "checklist.json", tmp_path / "rows.jsonl")
    released = threading.Event()

    def hang(body: dict) -> str:
        released.wait(30)  # a process that accepted the request and never answers
        return verdict("yes")

    try:
        with scripted_server(hang) as hung, running(Replica(0.0, slots=16)) as well:
            started = time.monotonic()
            assert judge(given, tmp_path / "out.jsonl", [hung, well], "--concurrency", "8", "--timeout", "2") == 0
            took = time.monotonic() - started
            assert well.answered >= 40 * 3 and len(hung.bodies) >= 1  # the hung replica was tried, its calls answered elsewhere
    finally:
        released.set()
    assert all(answers == ["yes", "no", "yes"] for _, answers in verdicts(tmp_path / "out.jsonl"))
    assert took < 60  # hedged after a second, not each hung call waiting out its timeout in turn
