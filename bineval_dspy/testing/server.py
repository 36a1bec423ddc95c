"""An OpenAI-compatible chat server on 127.0.0.1 that answers after a fixed delay, a few requests at a time: what
to point a pipeline at to measure the client (calls/s against 1 or 3 replicas) or to rehearse a failover (a
replica that dies after N answers). Every reply is a judge verdict: "no" to a question that names one of the
``no_words``, else "yes".

    python -m bineval_dspy.testing.server --delay 0.05 --slots 4 --port 8001
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Quiet(ThreadingHTTPServer):
    request_queue_size = 512  # hundreds of clients connect at once under load
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up is part of a load test, not a server error


class FixedDelayServer:
    """Answers each chat request after ``delay`` seconds, at most ``slots`` at a time (the rest wait, as on a
    server with that many parallel sequences). After ``die_after`` answers it dies: the requests it holds are
    dropped with no reply and it stops listening."""

    def __init__(self, delay: float = 0.05, slots: int = 4, die_after: int | None = None, port: int = 0, no_words: tuple[str, ...] = ("kind",)) -> None:
        self.delay, self.die_after, self.no_words = delay, die_after, no_words
        self.answered = self.dropped = 0
        self.dead = False
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(slots)
        self.httpd = _Quiet(("127.0.0.1", port), self._handler())
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._slots:
                    time.sleep(server.delay)
                    if not server._answers():  # a crashed process: the connection closes with no reply
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                question = str(body["messages"][-1]["content"])
                answer = "no" if any(word in question for word in server.no_words) else "yes"
                content = json.dumps({"verdict": {"answer": answer, "explanation": "fixed reply"}})
                data = json.dumps({
                    "id": "c", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def _answers(self) -> bool:
        """Whether this request gets a reply: False once the server has died (it dies at its ``die_after``-th)."""
        with self._lock:
            if not self.dead and self.die_after is not None and self.answered >= self.die_after:
                self.dead = True
                threading.Thread(target=self.httpd.shutdown, daemon=True).start()
            if self.dead:
                self.dropped += 1
                return False
            self.answered += 1
            return True


@contextmanager
def serving(server: FixedDelayServer) -> Iterator[FixedDelayServer]:
    """``server`` answering on its own thread, shut down afterwards."""
    thread = threading.Thread(target=server.httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description="a fixed-delay OpenAI-compatible chat server for load and failover tests")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds before each reply (default 0.05)")
    parser.add_argument("--slots", type=int, default=4, help="requests answered at once (default 4)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--die-after", type=int, default=None, help="drop every request after this many answers")
    args = parser.parse_args()
    server = FixedDelayServer(args.delay, args.slots, args.die_after, args.port)
    print(server.url, flush=True)
    server.httpd.serve_forever()


if __name__ == "__main__":
    main()
