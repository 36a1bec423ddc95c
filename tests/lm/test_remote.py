"""Remote LMs (``--api-base``) against tiny servers on 127.0.0.1: options on the wire, schema spellings, cache keys,
and a server that never answers. The real DSPy LM, engine and cache run; only the servers are fakes."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import dspy
import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import ExitCode, InputError
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.lm import remote, runtime
from bineval_dspy.lm.specs import make_lm
from tests.fake_openai import running, scripted_server, verdict

LLAMA_CPP_PYTHON_REFUSAL = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)


@pytest.fixture(autouse=True)
def fresh_format_memory(monkeypatch):
    """Servers of different tests may get the same port; what one refused must not carry over."""
    monkeypatch.setattr(remote, "_server_forms", {})


class FakeServer:
    """An OpenAI-compatible chat server that answers every question ``answer``; records requests.

    ``refuse_json_schema`` answers a ``json_schema`` response_format as llama-cpp-python's server does (HTTP 500);
    ``refuse_extra_keys`` answers a ``json_object`` carrying a schema as a strict validator would (HTTP 400).
    """

    def __init__(self, answer: str, *, refuse_json_schema: bool = False, refuse_extra_keys: bool = False) -> None:
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.bodies.append(body)
                server.headers.append(dict(self.headers))
                response_format = body.get("response_format", {})
                if refuse_json_schema and response_format.get("type") == "json_schema":
                    self._send(500, {"error": {"message": LLAMA_CPP_PYTHON_REFUSAL, "type": "internal_server_error"}})
                    return
                if refuse_extra_keys and set(response_format) - {"type"}:
                    self._send(
                        400,
                        {
                            "error": {
                                "message": "response_format: extra keys not permitted",
                                "type": "invalid_request_error",
                            }
                        },
                    )
                    return
                content = json.dumps({"verdict": {"answer": answer, "explanation": f"the server says {answer}"}})
                choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
                self._send(
                    200,
                    {
                        "id": "c",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [choice],
                        "usage": usage,
                    },
                )

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def formats(self) -> list[dict | None]:
        return [body.get("response_format") for body in self.bodies]


@contextmanager
def serving(answer: str, **options) -> Iterator[FakeServer]:
    with running(FakeServer(answer, **options)) as server:
        yield server


def ask(lm: dspy.LM, question: str = "Is it short?") -> str:
    with dspy.context(lm=lm):
        return BinaryJudge().judge_question("in", "out", Question(text=question, dimension="d")).answer


def judge_files(tmp_path: Path) -> list[str]:
    checklist = tmp_path / "checklist.json"
    checklist.write_text(
        Checklist(
            task="t", dimensions=["d"], questions=[Question(text="Is it short?", dimension="d")]
        ).model_dump_json()
    )
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"input": "a", "output": "b"}) + "\n")
    return [
        "judge",
        "--checklist",
        str(checklist),
        "--data",
        str(data),
        "-o",
        str(tmp_path / "out.jsonl"),
        "--cache-dir",
        str(tmp_path / "cache"),
    ]


def verdicts(tmp_path: Path) -> list[dict]:
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    return [v for row in rows for v in row["bineval"]["scorecard"]["verdicts"]]


def test_options_schema_and_key_reach_the_server(tmp_path, monkeypatch):
    monkeypatch.setenv("BINEVAL_TEST_KEY", "sekrit")
    with serving("yes") as server:
        options = ["--lm", "openai/m", "--api-base", server.url, "--api-key-env", "BINEVAL_TEST_KEY"]
        code = cli.main([*judge_files(tmp_path), *options, "--temperature", "0.3", "--max-tokens", "50"])
    assert code == ExitCode.OK
    assert [v["answer"] for v in verdicts(tmp_path)] == ["yes"]
    (body,) = server.bodies
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("m", 0.3, 50)
    assert server.headers[0]["Authorization"] == "Bearer sekrit"
    assert body["response_format"]["type"] == "json_schema"
    assert '"yes"' in json.dumps(body["response_format"]["json_schema"]["schema"])  # the judge's answer enum


def test_unset_key_variable_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("BINEVAL_NO_SUCH_KEY", raising=False)
    args = [
        *judge_files(tmp_path),
        "--lm",
        "openai/m",
        "--api-base",
        "http://127.0.0.1:9/v1",
        "--api-key-env",
        "BINEVAL_NO_SUCH_KEY",
    ]
    assert cli.main(args) == ExitCode.INPUT
    assert (
        capsys.readouterr().err
        == "error: --api-key-env BINEVAL_NO_SUCH_KEY: environment variable BINEVAL_NO_SUCH_KEY is not set\n"
    )


def test_servers_with_one_model_name_do_not_share_cache_entries(tmp_path):
    with serving("yes") as first, serving("no") as second:
        runtime.configure(runtime.LMOptions(spec="openai/m", api_base=first.url), tmp_path / "cache")  # disk + memory
        lm_first, lm_second = make_lm("openai/m", api_base=first.url), make_lm("openai/m", api_base=second.url)
        assert ask(lm_first) == "yes"
        assert ask(lm_second) == "no"  # not the first server's cached answer
        assert ask(lm_first) == "yes"
        assert (len(first.bodies), len(second.bodies)) == (1, 1)  # the repeat was a cache hit


def test_refused_schema_spelling_is_retried_once_then_remembered():
    with serving("no", refuse_json_schema=True) as server:
        lm = make_lm("openai/m", api_base=server.url)
        assert ask(lm, "Is it short?") == "no"
        assert ask(lm, "Is it kind?") == "no"
    first, retried, second = server.formats
    assert first["type"] == "json_schema"
    assert retried == second == {"type": "json_object", "schema": first["json_schema"]["schema"]}  # llama-cpp-python's


def test_a_server_refusing_both_schema_spellings_gets_json_mode():
    with serving("yes", refuse_json_schema=True, refuse_extra_keys=True) as server:
        lm = make_lm("openai/m", api_base=server.url)
        assert ask(lm, "Is it short?") == "yes"
        assert ask(lm, "Is it kind?") == "yes"
    assert [f["type"] for f in server.formats] == ["json_schema", "json_object", "json_object", "json_object"]
    assert server.formats[2:] == [{"type": "json_object"}] * 2


def test_a_server_that_never_answers_gives_unanswered_verdicts(tmp_path):
    listener = socket.create_server(("127.0.0.1", 0))  # accepts connections (backlog), never reads or answers
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        code = cli.main([*judge_files(tmp_path), "--lm", "openai/m", "--api-base", url, "--timeout", "2"])
    finally:
        listener.close()
    assert code == ExitCode.LM_FAILURE  # every call failed alike: the LM failed
    (verdict,) = verdicts(tmp_path)
    assert verdict["answer"] == "unanswered"
    assert "Timeout" in verdict["explanation"]


@pytest.mark.parametrize(
    "spec, api_base, message",
    [
        ("smollm2", "http://127.0.0.1:8000/v1", "runs in this process"),
        ("openai/m", "127.0.0.1:8000", "expected an http(s) URL"),
        ("openai/m", "http://user:pw@127.0.0.1:8000/v1", "`api_key_env`, not in the URL"),
        ("openai/m", "http://127.0.0.1:8000/v1?api-key=sk-pw123", "drop the URL's query string"),
        ("openai/m", "http://127.0.0.1:8000/v1#pw", "drop the URL's query string"),
        ("openai/m", "ftp://x:pw@127.0.0.1/v1", "expected an http(s) URL"),
    ],
)
def test_bad_remote_settings_are_input_errors(spec, api_base, message):
    with pytest.raises(InputError, match="`api_base`") as caught:
        make_lm(spec, api_base=api_base)
    assert message in str(caught.value) and "pw" not in str(caught.value)


def test_no_file_a_run_writes_holds_the_api_key(tmp_path, monkeypatch):
    """The key travels in a header only: outputs, sidecars, the cache and the journal never hold it."""
    secret = "sk-test-7f3a9c1e5b2d"
    monkeypatch.setenv("BINEVAL_TEST_KEY", secret)
    with scripted_server(lambda body: verdict("yes")) as server:
        code = cli.main([*judge_files(tmp_path), *server.lm_args(), "--api-key-env", "BINEVAL_TEST_KEY", "--cache-dir", str(tmp_path / "cache")])
    assert code == ExitCode.OK
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert any(path.name.endswith(".run.json") for path in written)  # the header, which holds the fingerprint
    assert [path for path in written if secret.encode() in path.read_bytes()] == []


def test_a_concurrency_above_the_pool_widens_the_pool():
    """256 requests in flight on a pool of 100 left 61 verdicts unanswered on a healthy server (issue 32, item 5)."""
    engine = remote.RemoteEngine("openai/m", "http://127.0.0.1:9/v1")
    assert engine._client.config.max_connections is None  # lm15's default pool
    engine.limit_in_flight(64)
    assert engine._client.config.max_connections is None
    engine.limit_in_flight(256)
    assert engine._client.config.max_connections == 256


def test_a_reply_dripped_a_byte_at_a_time_ends_within_twice_the_timeout(tmp_path):
    """lm15 bounds each read; the call as a whole is bounded too (issue 32, item 6: it took 326 s at --timeout 3)."""
    import threading
    import time

    body = json.dumps({"id": "x", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": '{"verdict": {"answer": "yes"}}'}, "finish_reason": "stop"}]}).encode()
    stop = threading.Event()
    sent: list[int] = []

    class Drip(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for byte in body:  # one byte every 0.3 s: each read is quick, the reply takes a minute
                if stop.is_set():
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                sent.append(byte)
                time.sleep(0.3)

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    httpd.daemon_threads = True
    with running(type("S", (), {"httpd": httpd})()):
        try:
            code = cli.main([*judge_files(tmp_path), "--lm", "openai/m", "--api-base", f"http://127.0.0.1:{httpd.server_address[1]}/v1", "--timeout", "1"])
        finally:
            stop.set()
    assert code == ExitCode.LM_FAILURE and len(sent) < len(body)  # it gave up while the reply was still coming
    (verdict,) = verdicts(tmp_path)
    assert verdict["answer"] == "unanswered" and "within the call's 2 s" in verdict["explanation"]
