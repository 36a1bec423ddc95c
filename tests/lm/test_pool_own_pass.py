"""A replica answering 200 with a body cut short (issue 55's minor list): its verdicts were unanswered (35 of 120)
and it stayed in the rotation; now such a reply is a failure of that replica, whose call goes to another."""

from __future__ import annotations

import json

from bineval_dspy.testing.server import FixedDelayServer as Replica
from bineval_dspy.testing.server import serving as running
from tests.fake_openai import completion, scripted_server
from tests.lm.test_pool import files, judge, verdicts


def test_a_replica_with_cut_replies_is_routed_around(tmp_path):
    given = files(tmp_path, rows=6)

    def cut(body):
        return 200, json.dumps(completion(body, json.dumps({"answer": "yes"}))).encode()[:40]

    with scripted_server(cut) as torn, running(Replica(0.0)) as well:
        assert judge(given, tmp_path / "out.jsonl", [torn, well], "--concurrency", "4") == 0
        assert len(torn.bodies) >= 1 and well.answered == 12  # tried, left out of the rotation, answered elsewhere
    assert all(answers == ["yes", "no"] for _, answers in verdicts(tmp_path / "out.jsonl"))
