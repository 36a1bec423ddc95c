"""A scriptable OpenAI-compatible chat server on 127.0.0.1 for reliability tests.

The real DSPy LM, our remote engine and DSPy's cache run against it; only the server is a fake. Its ``reply``
(swappable mid-test, e.g. to "fix" the server) maps each request body to the message content, or to a whole
``(status, payload)`` when a test needs a malformed completion or an HTTP error.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

Reply = Callable[[dict], "str | None | tuple[int, Any]"]


def verdict(answer: str, explanation: str = "because") -> str:
    """The content a schema-following judge reply has."""
    return json.dumps({"verdict": {"answer": answer, "explanation": explanation}})


def completion(body: dict, content: str | None, *, choices: list | None = None, logprobs: Any = None) -> dict:
    """An OpenAI chat completion carrying ``content`` (``choices`` replaces the one choice)."""
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    if logprobs is not None:
        choice["logprobs"] = logprobs
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "m"),
        "choices": [choice] if choices is None else choices,
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
    """One reply of a loopback server: ``payload`` as JSON (or bytes as they are), with ``headers``."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    handler.send_response(status)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class _QuietServer(ThreadingHTTPServer):
    request_queue_size = 512  # the listen backlog: hundreds of clients connect at once in the concurrency tests
    daemon_threads = True
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up (a killed run, a timeout) is part of the test, not a server error


class LoopbackServer:
    """A server on 127.0.0.1 at a free port, and the options that point a command at it."""

    def listen(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = _QuietServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def lm_args(self) -> list[str]:
        """The command-line options that point a command at this server."""
        return ["--lm", "openai/m", "--api-base", self.url]


class ScriptedServer(LoopbackServer):
    """Answers every chat request with ``reply(body)``; keeps every request body in ``bodies`` (as sent in ``raw``, and its
    ``Authorization`` header in ``authorizations``), and counts the requests in flight (``most_in_flight``: the most at one time; ``reply`` may sleep to hold them open)."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.bodies: list[dict] = []
        self.raw: list[bytes] = []  # each request body as it came, byte for byte
        self.authorizations: list[str | None] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.headers: dict[int, dict[str, str]] = {}  # response status -> extra headers sent with it
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                body = json.loads(raw)
                with server._lock:
                    server.bodies.append(body)
                    server.raw.append(raw)
                    server.authorizations.append(self.headers.get("Authorization"))
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    answer = server.reply(body)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                status, payload = answer if isinstance(answer, tuple) else (200, completion(body, answer))
                send_json(self, status, payload, server.headers.get(status, {}))

            def log_message(self, *args: Any) -> None:
                pass

        self.listen(Handler)


@contextmanager
def scripted_server(reply: Reply) -> Iterator[ScriptedServer]:
    """A running ``ScriptedServer``, shut down afterwards."""
    with running(ScriptedServer(reply)) as server:
        yield server


S = TypeVar("S")


@contextmanager
def running(server: S) -> Iterator[S]:
    """``server`` (anything with an ``httpd``) serving on its own thread, shut down afterwards."""
    httpd = server.httpd  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
