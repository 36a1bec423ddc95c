"""``bineval judge --batch`` against an OpenAI-style batch API on 127.0.0.1 (``tests.batch_server``): the requests
are written, uploaded and submitted as one batch, polled, and answered from its results through the normal judge
path; a run interrupted after submission resumes the same batch; a request the batch failed is unanswered, never
a yes. The real DSPy LM, our batch client and DSPy's cache run; only the provider is a fake."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import dspy
import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import ExitCode, InputError
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.lm import batches
from bineval_dspy.lm.batches import OPENAI_BASE, batch_lm, batch_target, state_path
from bineval_dspy.lm.prices import BATCH_DISCOUNT, BATCH_SUFFIX, price_of
from bineval_dspy.lm.runtime import LMOptions
from bineval_dspy.lm.specs import make_lm
from tests.batch_server import batch_server
from tests.cli.test_reliability import answers, judge_args, results, write_inputs
from tests.conftest import prompt_fields
from tests.fake_openai import verdict

QUESTIONS = [Question(text="Is it short?", dimension="d"), Question(text="Is it polite?", dimension="d")]
ROWS = [{"input": f"task {i}", "output": f"answer {i}"} for i in range(3)]
FAILED = (500, {"error": {"message": "the model is overloaded", "type": "server_error"}})


def question(body: dict) -> str:
    return prompt_fields(body["messages"][-1]["content"])["question"]


def yes_to_short(body: dict) -> str:
    return verdict("yes" if question(body) == "Is it short?" else "no")


def batch_args(tmp_path: Path, server, *extra: str) -> list[str]:
    return judge_args(tmp_path, *server.lm_args(), "--batch", *extra)


def test_a_batch_run_submits_once_and_writes_the_rows_through_the_normal_path(tmp_path, capsys):
    write_inputs(tmp_path, QUESTIONS, ROWS)
    with batch_server(yes_to_short) as server:
        assert cli.main(batch_args(tmp_path, server)) == ExitCode.OK
        err = capsys.readouterr().err
        assert server.created == 1 and len(server.bodies) == len(ROWS) * len(QUESTIONS)
        assert server.authorization == {"Bearer EMPTY"}  # no --api-key-env: the placeholder the direct path sends too
        body = server.bodies[0]
        assert body["model"] == "m" and body["max_tokens"] == 256 and body["response_format"]["type"] == "json_schema"
        out = tmp_path / "out.jsonl"
        assert answers(out) == ["yes", "no"] * len(ROWS)
        first = results(out)[0]
        assert first["scorecard"]["verdicts"][0]["judge"] == f"openai/m@{server.url}{BATCH_SUFFIX}"
        assert first["usage"]["lm_calls"] == 2 and first["usage"]["tokens"] == 4 and first["usage"]["usd"] is None
        assert "submitted batch batch_1: 6 request(s)" in err and "6 request(s) answered by 1 batch(es)" in err
        state = json.loads(state_path(out).read_text())
        assert [(b["id"], b["status"], b["collected"], len(b["keys"])) for b in state["batches"]] == [("batch_1", "completed", True, 6)]
        assert not (tmp_path / "out.jsonl.batch-0.jsonl").exists()  # the input file goes once its batch is collected
        # a rerun finds every row done: nothing is submitted
        assert cli.main(batch_args(tmp_path, server)) == ExitCode.OK
        assert server.created == 1


def interrupted_after_submission(tmp_path: Path, server) -> tuple[int, str]:
    """Run the batched judge in a subprocess with the batch held, Ctrl-C it once it has polled: (exit code, stderr)."""
    server.hold = True
    proc = subprocess.Popen(
        [sys.executable, "-m", "bineval_dspy.cli", *batch_args(tmp_path, server)],
        stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    deadline = time.time() + 60
    while server.polls < 1 and time.time() < deadline:  # submitted, and polled at least once
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


def test_an_interrupted_run_resumes_polling_the_same_batch(tmp_path):
    write_inputs(tmp_path, QUESTIONS, ROWS[:1])
    with batch_server(yes_to_short) as server:
        returncode, err = interrupted_after_submission(tmp_path, server)
        assert returncode == ExitCode.INTERRUPTED, err
        assert "batch batch_1 is still running at the provider" in err and "Traceback" not in err
        assert not (tmp_path / "out.jsonl").exists() or not (tmp_path / "out.jsonl").read_text()
        assert json.loads(state_path(tmp_path / "out.jsonl").read_text())["batches"][0]["id"] == "batch_1"
        server.hold = False
        assert cli.main(batch_args(tmp_path, server)) == ExitCode.OK
    assert server.created == 1  # the rerun collected batch_1, it did not submit another
    assert answers(tmp_path / "out.jsonl") == ["yes", "no"]


def test_requests_the_batch_failed_are_unanswered_and_a_rerun_sends_only_them(tmp_path, capsys):
    write_inputs(tmp_path, QUESTIONS, ROWS[:2])

    def polite_fails(body: dict):
        return FAILED if question(body) == "Is it polite?" else verdict("yes")

    with batch_server(polite_fails) as server:
        assert cli.main(batch_args(tmp_path, server)) == ExitCode.INCOMPLETE
        err = capsys.readouterr().err
        out = tmp_path / "out.jsonl"
        assert answers(out) == ["yes", "unanswered"] * 2
        verdicts = results(out)[0]["scorecard"]["verdicts"]
        assert "failed in the batch: HTTP 500: the model is overloaded" in verdicts[1]["explanation"]
        assert "2 request(s) answered by 1 batch(es), 2 failed there" in err
        server.reply = lambda body: verdict("yes")  # the provider recovers: a rerun asks again for the failed ones only
        assert cli.main(batch_args(tmp_path, server)) == ExitCode.OK
    assert server.created == 2
    assert [question(b) for b in server.bodies[4:]] == ["Is it polite?", "Is it polite?"]
    assert answers(tmp_path / "out.jsonl") == ["yes", "yes"] * 2


def test_explanations_of_failures_go_in_a_second_batch(tmp_path):
    write_inputs(tmp_path, QUESTIONS, ROWS[:2])
    with batch_server(yes_to_short) as server:
        assert cli.main(batch_args(tmp_path, server, "--explanations", "failures")) == ExitCode.OK
    assert server.created == 2  # the verdicts, then the explanation of each "no"
    assert len(server.bodies) == 4 + 2 and all("stop" not in b for b in server.bodies[4:])
    assert answers(tmp_path / "out.jsonl") == ["yes", "no"] * 2


def test_the_samples_of_a_vote_are_separate_requests(tmp_path):
    write_inputs(tmp_path, QUESTIONS[:1], ROWS[:1])
    with batch_server(yes_to_short) as server:
        assert cli.main(batch_args(tmp_path, server, "--samples", "3")) == ExitCode.OK
    assert len(server.bodies) == 3 and server.created == 1


def test_batch_is_refused_for_the_embedded_model_in_one_line(tmp_path, capsys):
    write_inputs(tmp_path, QUESTIONS, ROWS[:1])
    assert cli.main(judge_args(tmp_path, "--batch")) == ExitCode.INPUT
    err = capsys.readouterr().err.strip()
    assert err == "error: --batch: --lm smollm2 runs in this process; a batch goes to a provider's batch API (--lm openai/<model>, or --api-base)"


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--lm", "anthropic/claude-sonnet-4-5"], "only OpenAI-style batch APIs"),
        (["--lm", "openai/m", "--api-base", "http://127.0.0.1:9/v1", "--max-calls", "5"], "billed whole once submitted"),
        (["--lm", "openai/m", "--api-base", "http://127.0.0.1:9/v1", "--rpm", "60"], "paces a batch itself"),
    ],
)
def test_batch_refuses_what_it_cannot_do_before_any_work(tmp_path, capsys, extra, says):
    write_inputs(tmp_path, QUESTIONS, ROWS[:1])
    assert cli.main(judge_args(tmp_path, "--batch", *extra)) == ExitCode.INPUT
    assert says in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()


def test_batch_dry_run_says_what_it_would_submit(tmp_path, capsys):
    write_inputs(tmp_path, QUESTIONS, ROWS)
    with batch_server(yes_to_short) as server:
        assert cli.main(batch_args(tmp_path, server, "--dry-run")) == ExitCode.OK
        assert server.created == 0 and not server.files
    said = " ".join(capsys.readouterr().out.split())
    assert "6 LM call(s)" in said
    assert f"--batch: would submit 6 request(s) in 1 batch(es) to {server.url}/files and {server.url}/batches" in said
    assert "nothing was submitted" in said


def test_a_pending_batch_for_other_settings_is_not_dropped_silently(tmp_path, capsys):
    write_inputs(tmp_path, QUESTIONS, ROWS[:1])
    with batch_server(yes_to_short) as server:
        interrupted_after_submission(tmp_path, server)
        assert cli.main(batch_args(tmp_path, server, "--partial")) == ExitCode.INPUT
        err = capsys.readouterr().err
        assert "batch batch_1: made with other settings (judge.partial: false -> true)" in err
        server.hold = False
        assert cli.main(batch_args(tmp_path, server, "--partial", "--overwrite")) == ExitCode.OK
        assert "batch batch_1 is left at the provider" in capsys.readouterr().err
    assert server.created == 2


def test_batch_prices_are_the_maps_batch_rates_or_half():
    base, batched = price_of("openai/gpt-4o-mini"), price_of("openai/gpt-4o-mini" + BATCH_SUFFIX)
    assert base is not None and batched is not None
    assert batched.input == pytest.approx(base.input / 2) and batched.output == pytest.approx(base.output / 2)
    assert price_of(f"openai/m@http://127.0.0.1:1/v1{BATCH_SUFFIX}") is None  # a server's own price stays unknown


def test_a_model_without_batch_rates_in_the_map_is_billed_half():
    base, batched = price_of("openai/gpt-3.5-turbo"), price_of("openai/gpt-3.5-turbo" + BATCH_SUFFIX)
    assert base is not None and batched is not None and batched.input == pytest.approx(base.input * BATCH_DISCOUNT)


def test_openai_models_go_to_openais_batch_api_in_its_own_dialect(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    target = batch_target(LMOptions(spec="openai/gpt-4o-mini"))
    assert target.base_url == OPENAI_BASE and target.api_key == "sk-test"
    lm, engine = batch_lm(make_lm("openai/gpt-4o-mini"), target)
    checklist = Checklist(task="t", dimensions=["d"], questions=QUESTIONS[:1])
    with dspy.context(lm=lm):
        card = BinaryJudge()(input="a", output="b", checklist=checklist)
    assert [v.answer for v in card.verdicts] == ["unanswered"]  # recorded for the batch, never a yes
    (body,) = engine.recorded.values()
    assert body["model"] == "gpt-4o-mini" and body["max_completion_tokens"] == 256 and "max_tokens" not in body
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(InputError, match="no API key: set OPENAI_API_KEY"):
        batch_target(LMOptions(spec="openai/gpt-4o-mini"))


def test_batch_dry_run_prices_the_calls_at_batch_rates(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    write_inputs(tmp_path, QUESTIONS, ROWS)
    assert cli.main(judge_args(tmp_path, "--lm", "openai/gpt-4o-mini", "--batch", "--dry-run")) == ExitCode.OK
    said = " ".join(capsys.readouterr().out.split())
    listed = float(re.search(r"at most \$([0-9.]+) \(list price", said).group(1))
    batched = float(re.search(r"at most \$([0-9.]+) at batch rates", said).group(1))
    assert batched == pytest.approx(listed / 2, rel=0.02)
    assert f"to {OPENAI_BASE}/files and {OPENAI_BASE}/batches" in said


def test_a_batch_that_fails_validation_leaves_every_question_unanswered(tmp_path, capsys):
    write_inputs(tmp_path, QUESTIONS, ROWS[:1])
    with batch_server(yes_to_short) as server:
        server.invalid = True
        assert cli.main(batch_args(tmp_path, server)) == ExitCode.LM_FAILURE  # every verdict failed alike: the LM failed
    assert answers(tmp_path / "out.jsonl") == ["unanswered", "unanswered"]
    assert "batch batch_1 failed: line 1 is not valid; its requests are unanswered" in " ".join(capsys.readouterr().err.split())


def test_a_status_check_the_api_refuses_for_a_moment_is_tried_again(tmp_path):
    write_inputs(tmp_path, QUESTIONS, ROWS[:1])
    with batch_server(yes_to_short) as server:
        server.hold = True  # the batch is in progress at creation: the client polls
        server.broken_polls = 2
        threading.Timer(1.0, lambda: setattr(server, "hold", False)).start()
        assert cli.main(batch_args(tmp_path, server, "--timeout", "30")) == ExitCode.OK
    assert server.broken_polls == 0 and server.created == 1
    assert answers(tmp_path / "out.jsonl") == ["yes", "no"]


def test_a_refused_key_is_one_line_naming_the_call(tmp_path, capsys, monkeypatch):
    write_inputs(tmp_path, QUESTIONS, ROWS[:1])
    monkeypatch.setenv("BATCH_KEY", "sk-wrong")
    with batch_server(yes_to_short) as server:
        server.key = "sk-right"
        assert cli.main(batch_args(tmp_path, server, "--api-key-env", "BATCH_KEY")) == ExitCode.LM_FAILURE
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert line == f"error: POST {server.url}/files: HTTP 401: Incorrect API key provided"
    assert server.created == 0


def test_ctrl_c_while_the_batch_is_created_still_records_it(tmp_path):
    write_inputs(tmp_path, QUESTIONS, ROWS[:1])
    with batch_server(yes_to_short) as server:
        server.hold, server.create_delay = True, 2.0
        proc = subprocess.Popen(
            [sys.executable, "-m", "bineval_dspy.cli", *batch_args(tmp_path, server)],
            stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2],
        )  # fmt: skip
        assert server.creating.wait(60)
        proc.send_signal(signal.SIGINT)  # while the provider makes the batch: it is billed, so it must be kept
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == ExitCode.INTERRUPTED, err
        assert [b["id"] for b in json.loads(state_path(tmp_path / "out.jsonl").read_text())["batches"]] == ["batch_1"]
        assert "batch batch_1 is still running at the provider" in err
        server.hold, server.create_delay = False, 0.0
        assert cli.main(batch_args(tmp_path, server)) == ExitCode.OK
    assert server.created == 1


def test_requests_past_a_batchs_limit_go_in_another_batch_of_the_same_round(tmp_path, monkeypatch):
    monkeypatch.setattr(batches.run, "MAX_REQUESTS", 4)
    write_inputs(tmp_path, QUESTIONS, ROWS)
    with batch_server(yes_to_short) as server:
        assert cli.main(batch_args(tmp_path, server)) == ExitCode.OK
    assert server.created == 2 and len(server.bodies) == 6
    assert answers(tmp_path / "out.jsonl") == ["yes", "no"] * len(ROWS)


def test_a_result_line_with_a_raw_line_separator_in_a_string_is_read(tmp_path):
    """JSON Lines end at "\\n" only: a raw U+2028 inside a reply jammed every rerun (issue 32, item 9)."""
    write_inputs(tmp_path, QUESTIONS, ROWS[:1])
    reply = '{"verdict": {"answer": "yes", "explanation": "short\u2028and kind"}}'  # the separator itself, not an escape
    with batch_server(lambda body: reply) as server:
        server.raw_unicode = True
        assert cli.main(batch_args(tmp_path, server)) == ExitCode.OK
        assert any("\u2028".encode() in data for data in server.files.values())  # the result file held it raw
    assert answers(tmp_path / "out.jsonl") == ["yes", "yes"]


def test_a_vanished_result_file_leaves_its_requests_unanswered_and_a_rerun_submits_them_again(tmp_path, capsys):
    write_inputs(tmp_path, QUESTIONS, ROWS[:1])
    with batch_server(yes_to_short) as server:
        server.vanish = True
        assert cli.main(batch_args(tmp_path, server)) == ExitCode.LM_FAILURE  # every verdict failed alike
        assert "is gone" in capsys.readouterr().err
        server.vanish = False
        assert cli.main(batch_args(tmp_path, server)) == ExitCode.OK
        assert server.created == 2  # the vanished batch's requests went out again; the run was not jammed
    assert answers(tmp_path / "out.jsonl") == ["yes", "no"]
