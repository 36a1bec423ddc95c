"""``bineval view``: the report on runs served on this machine, its row lists answered a page at a time.

The page is the one ``bineval report`` writes (``html.render``), less its inlined rows: the page asks
``/api/rows?section=run-K&offset=N&limit=M&<filters>`` for each page (``report.pages``), so a 50,000-row run is read
once here and never sent whole. Only the standard library's threaded HTTP server; it listens on 127.0.0.1 alone,
and answers only requests addressed to it by that name (``own_host``): a web page the user visits cannot rebind
its own name to 127.0.0.1 and read the rows (DNS rebinding). An idle connection is closed after ``READ_TIMEOUT``
seconds, so idle sockets cannot hold every thread.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from bineval_dspy.report.html import anchors, render, section_rows
from bineval_dspy.report.pages import PAGE_SIZE, Row, page, query_of
from bineval_dspy.report.runs import LoadedRun

API = "api/rows"  # relative to the page: a server behind a path prefix still answers it
HOST = "127.0.0.1"
NAMES = (HOST, "localhost")  # what a request's Host header may name, with the port the server listens on or none
READ_TIMEOUT = 10.0  # seconds a connection may stay silent before the server closes it
BACKLOG = 128  # connections waiting to be accepted (the standard library's default is 5)


def own_host(header: str | None, port: int) -> bool:
    """Whether a request's ``Host`` header names this server: 127.0.0.1 or localhost, with no port or ``port``."""
    host = (header or "").strip().lower()
    name, colon, given = host.rpartition(":")
    if not colon:
        name, given = host, ""
    return name in NAMES and given in ("", str(port))


@dataclass(frozen=True)
class Viewer:
    """What the server answers with: the page, and each section's rows."""

    page: bytes
    rows: dict[str, list[Row]]

    @classmethod
    def of(cls, runs: Sequence[LoadedRun], title: str = "bineval report", charts_on: bool = True) -> Viewer:
        rows = {anchor: found for anchor, run in zip(anchors(runs), runs, strict=True) if (found := section_rows(run)) is not None}
        return cls(page=render(runs, title, charts_on, api=API).encode("utf-8"), rows=rows)

    def answer(self, target: str) -> tuple[HTTPStatus, str, bytes]:
        """Status, content type and body for one GET of ``target`` (a path with its query)."""
        parts = urlsplit(target)
        if parts.path in ("/", "/index.html"):
            return HTTPStatus.OK, "text/html; charset=utf-8", self.page
        if parts.path != "/" + API:
            return _json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {parts.path}"})
        params = dict(parse_qsl(parts.query, keep_blank_values=True))
        rows = self.rows.get(params.get("section", ""))
        if rows is None:
            return _json(HTTPStatus.NOT_FOUND, {"error": f"no row list in section {params.get('section', '')!r}"})
        try:
            offset, limit = int(params.get("offset", "0")), int(params.get("limit", str(PAGE_SIZE)))
        except ValueError:
            return _json(HTTPStatus.BAD_REQUEST, {"error": "offset and limit are whole numbers"})
        return _json(HTTPStatus.OK, page(rows, query_of(params), offset, limit).model_dump())


def _json(status: HTTPStatus, body: dict[str, Any]) -> tuple[HTTPStatus, str, bytes]:
    return status, "application/json", json.dumps(body, ensure_ascii=False).encode("utf-8")


def server(viewer: Viewer, port: int = 0, read_timeout: float = READ_TIMEOUT) -> ThreadingHTTPServer:
    """A threaded HTTP server for ``viewer`` on 127.0.0.1 (``port`` 0: a free one; ``server_address`` says which),
    not yet serving: call ``serve_forever``, and ``shutdown`` from another thread or Ctrl-C to stop. A request for
    another host is refused (403); a connection silent for ``read_timeout`` seconds is closed."""

    class ViewHandler(BaseHTTPRequestHandler):
        timeout = read_timeout  # the socket's, set by ``setup``

        def do_GET(self) -> None:
            if own_host(self.headers.get("Host"), port):
                status, kind, body = viewer.answer(self.path)
            else:
                status, kind, body = _json(HTTPStatus.FORBIDDEN, {"error": f"this server answers {HOST} and localhost only, not {self.headers.get('Host')!r}"})
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            """Quiet: a request is not news (``log_error`` still writes to stderr)."""

        def log_error(self, format: str, *args: Any) -> None:
            """Quiet about an idle connection closed at ``read_timeout`` (a browser's unused preconnection)."""
            if not format.startswith("Request timed out"):
                super().log_error(format, *args)

    class Server(ThreadingHTTPServer):
        request_queue_size = BACKLOG
        daemon_threads = True

    httpd = Server((HOST, port), ViewHandler)
    port = httpd.server_address[1]  # the one a request's Host may name (``port`` 0 picked a free one)
    return httpd
