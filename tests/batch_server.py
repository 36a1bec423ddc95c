"""A small OpenAI-style batch API on 127.0.0.1 (``/v1/files``, ``/v1/batches``) for the ``judge --batch`` tests.

The real client (``bineval_dspy.lm.batches``), DSPy's LM and cache run against it; only the provider is a fake.
A batch's input lines are answered by ``reply(body)`` when the batch completes: a message content, or a whole
``(status, payload)`` for a request the provider fails (it lands in the batch's error file, as OpenAI puts it).
While ``hold`` is set a batch stays ``in_progress``; ``created`` counts the batches made. ``broken_polls`` status
checks answer HTTP 503 first, ``invalid`` batches fail validation (status ``failed``, no results), with ``key``
set a request without that bearer key is refused (401), and ``create_delay`` seconds pass between a batch
creation's arrival (``creating`` is set) and its answer.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fake_openai import LoopbackServer, Reply, completion, running, send_json


class BatchServer(LoopbackServer):
    """The files and batches of one fake provider, and what it was asked."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.hold = False
        self.broken_polls = 0
        self.invalid = False
        self.raw_unicode = False  # result lines written with ensure_ascii=False: a U+2028 in a reply stays raw
        self.vanish = False  # result files are deleted as soon as the batch completes (content: HTTP 404)
        self.key: str | None = None
        self.create_delay = 0.0
        self.creating = threading.Event()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.created = 0
        self.polls = 0
        self.bodies: list[dict] = []  # every request body of every batch, as answered
        self.authorization: set[str] = set()
        self._ids = itertools.count(1)  # of files and result lines
        self._batch_ids = itertools.count(1)
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                server.authorization.add(self.headers.get("Authorization", ""))
                data = self.rfile.read(int(self.headers["Content-Length"]))
                if server.key is not None and self.headers.get("Authorization") != f"Bearer {server.key}":
                    self._send(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
                elif self.path == "/v1/files":
                    self._send(200, server.upload(self.headers["Content-Type"], data))
                elif self.path == "/v1/batches":
                    self._send(200, server.create(json.loads(data)))
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_GET(self) -> None:
                parts = self.path.strip("/").split("/")
                if parts[:2] == ["v1", "batches"] and server.broken_polls > 0:
                    server.broken_polls -= 1
                    self._send(503, {"error": {"message": "try again", "type": "server_error"}})
                elif parts[:2] == ["v1", "batches"] and len(parts) == 3 and parts[2] in server.batches:
                    self._send(200, server.status(parts[2]))
                elif parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content" and parts[2] in server.files:
                    self._send(200, server.files[parts[2]])
                else:
                    self._send(404, {"error": {"message": f"no such object: {self.path}"}})

            def _send(self, status: int, payload: Any) -> None:
                send_json(self, status, payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.listen(Handler)

    def upload(self, content_type: str, data: bytes) -> dict[str, Any]:
        """A multipart upload (purpose, file) kept as a file."""
        message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + data)
        fields = {part.get_param("name", header="content-disposition"): part.get_payload(decode=True) for part in message.iter_parts()}
        assert fields["purpose"] == b"batch"
        return {"id": self._file(fields["file"]), "object": "file", "purpose": "batch", "bytes": len(fields["file"])}

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        assert body["endpoint"] == "/v1/chat/completions" and body["input_file_id"] in self.files
        self.creating.set()
        time.sleep(self.create_delay)
        with self._lock:
            self.created += 1
            batch_id = f"batch_{next(self._batch_ids)}"
            lines = self.files[body["input_file_id"]].decode().splitlines()
            self.batches[batch_id] = {"id": batch_id, "object": "batch", "status": "validating", "input_file_id": body["input_file_id"],
                                      "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}  # fmt: skip
        return self.status(batch_id, poll=False)

    def status(self, batch_id: str, poll: bool = True) -> dict[str, Any]:
        """The batch as the API shows it: in progress while held, else completed (answered on first sight)."""
        with self._lock:
            self.polls += poll
            batch = self.batches[batch_id]
            if batch["status"] not in ("completed", "failed"):
                batch["status"] = "in_progress" if self.hold else self._complete(batch)
            return dict(batch)

    def _complete(self, batch: dict[str, Any]) -> str:
        if self.invalid:
            batch["errors"] = {"object": "list", "data": [{"code": "invalid_json_line", "message": "line 1 is not valid", "line": 1}]}
            return "failed"
        answered, failed = [], []
        for line in self.files[batch["input_file_id"]].decode().splitlines():
            request = json.loads(line)
            self.bodies.append(request["body"])
            answer = self.reply(request["body"])
            status, payload = answer if isinstance(answer, tuple) else (200, completion(request["body"], answer))
            result = {"id": f"req_{next(self._ids)}", "custom_id": request["custom_id"], "response": {"status_code": status, "body": payload}, "error": None}
            (answered if status == 200 else failed).append(json.dumps(result, ensure_ascii=not self.raw_unicode))
        batch["output_file_id"] = self._file("".join(line + "\n" for line in answered).encode()) if answered else None
        batch["error_file_id"] = self._file("".join(line + "\n" for line in failed).encode()) if failed else None
        batch["request_counts"] = {"total": len(answered) + len(failed), "completed": len(answered), "failed": len(failed)}
        if self.vanish:
            for key in ("output_file_id", "error_file_id"):
                self.files.pop(batch[key] or "", None)
        return "completed"

    def _file(self, data: bytes) -> str:
        file_id = f"file-{next(self._ids)}"
        self.files[file_id] = data
        return file_id


@contextmanager
def batch_server(reply: Reply) -> Iterator[BatchServer]:
    """A running ``BatchServer``, shut down afterwards."""
    with running(BatchServer(reply)) as server:
        yield server
