"""What ``bineval judge`` costs against remote servers, measured side by side in one run.

Arms, each against an OpenAI-compatible server on 127.0.0.1 (a subprocess on a bare asyncio protocol writing one
canned reply per request: thousands of calls a second on one core, so it is not what the bench measures), first
answering at once, then after ``--delay-ms`` (20: a real server's latency):

- bineval@N: ``bineval judge --concurrency N`` (the library's judging runner, through the CLI's ``main()`` in this
  process, a fresh cache folder each run) on ``--rows`` rows x a 10-question checklist: its verdicts go through the
  verdict fast path (``bineval_dspy.lm.fastpath``);
- dspy@N: the same with ``--no-fast-path``: every verdict through DSPy's per-call path (the path before issue 49);
- raw@N: a plain asyncio httpx loop sending the same number of chat completions, N at a time, to the same server;
- aiohttp@N: the same loop on aiohttp's client: how fast the server answers a lean client (the ratios' reference);
- every arm also reports its client CPU per call (this process's CPU time over the calls, all threads);
- llama_cpp: ``bineval judge --concurrency 4`` against a real ``python -m llama_cpp.server`` on the bundled
  SmolLM2 GGUF (``--llama-rows`` rows; 0 leaves it out). llama-cpp-python's server has no parallel slots (no
  ``--n_parallel``: it answers one request at a time under a lock), so the requests in flight queue there;
- rss: a ``bineval judge --concurrency 64`` subprocess on ``--rss-rows`` rows against the instant server (one LM
  question and nine code-verified ones, per-question scoring: the rows' scorecards are full-size and the LM calls
  few), its RSS sampled every second: the peak, and the growth over the run's last three quarters (flat: about 0).

Usage: python experiments/bench_remote.py [--rows N] [--delay-ms MS] [--rss-rows N] [--llama-rows N] [--out PATH]
Prints one line per server and concurrency and ends with
``ratios: bineval/aiohttp@64=A bineval/aiohttp@256=B bineval/raw@64=C bineval/raw@256=D`` (the instant server's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "experiments" / "results" / "bench_remote.json"
CONCURRENCY = (64, 256)
QUESTIONS = 10
LLAMA_CONCURRENCY = 4
REPLY = json.dumps({"verdict": {"answer": "yes", "explanation": "because"}})


# -- the instant server (run as this script with --serve PORT) ------------------------------------------------------
def _http_reply(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload).encode()
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


CHAT_REPLY = _http_reply({
    "id": "c", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
})  # fmt: skip
MODELS_REPLY = _http_reply({"object": "list", "data": [{"id": "m", "object": "model"}]})


class InstantServer(asyncio.Protocol):
    """An OpenAI-compatible endpoint on a bare asyncio protocol: it reads HTTP/1.1 requests off a keep-alive
    connection (head, then ``content-length`` bytes of body) and writes one canned reply each, with no framework in
    between, so it answers thousands of calls a second on one core and the client is what the bench measures.
    ``delay``: seconds before each reply (a timer, not a sleep: the other connections go on meanwhile)."""

    delay = 0.0

    def connection_made(self, transport: Any) -> None:
        self.transport, self.pending = transport, b""

    def data_received(self, data: bytes) -> None:
        self.pending += data
        while (end := self.pending.find(b"\r\n\r\n")) >= 0:
            head = self.pending[:end].lower()
            at = head.find(b"content-length:")
            length = int(head[at + 15 :].split(b"\r\n", 1)[0]) if at >= 0 else 0
            if len(self.pending) < end + 4 + length:
                return
            self.pending = self.pending[end + 4 + length :]
            reply = MODELS_REPLY if b"/models" in head.split(b"\r\n", 1)[0] else CHAT_REPLY
            if self.delay:
                asyncio.get_running_loop().call_later(self.delay, self._write, reply)
            else:
                self.transport.write(reply)

    def _write(self, reply: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(reply)


def serve(port: int, delay_ms: float = 0.0) -> None:
    InstantServer.delay = delay_ms / 1000

    async def forever() -> None:
        server = await asyncio.get_running_loop().create_server(InstantServer, "127.0.0.1", port, backlog=4096)
        async with server:
            await server.serve_forever()

    asyncio.run(forever())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_ready(url: str, process: subprocess.Popen, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"server not ready within {within:g} s")


@contextmanager
def running(command: list[str], url: str, within: float, log: Path) -> Iterator[str]:
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_ready(url, process, within)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def instant_server(folder: Path, delay_ms: float = 0.0) -> Any:
    port = free_port()
    command = [sys.executable, __file__, "--serve", str(port), "--delay-ms", str(delay_ms)]
    return running(command, f"http://127.0.0.1:{port}/v1", 30, folder / f"instant-{delay_ms:g}.log")


def llama_server(folder: Path) -> Any:
    from bineval_dspy.lm.specs import embedded_model_path

    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_model_path()), "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "2",
    ]
    return running(command, f"http://127.0.0.1:{port}/v1", 180, folder / "llama.log")


# -- inputs -------------------------------------------------------------------------------------------------------
def write_inputs(folder: Path, rows: int, coded: int = 0) -> tuple[Path, Path]:
    """A checklist of ``QUESTIONS`` questions (``coded`` of them answered by a code verifier) and ``rows`` rows."""
    from bineval_dspy.core.schema import Checklist, Question

    questions = [
        Question(text=f"Does the summary cover point {i} of the article?", dimension="content", verifier="count:word_count_range" if i < coded else None,
                 verifier_kwargs={"min_words": 1, "max_words": 50} if i < coded else None)
        for i in range(QUESTIONS)
    ]
    checklist = folder / f"checklist-{coded}.json"
    checklist.write_text(Checklist(task="Summarize the article.", dimensions=["content"], questions=questions).model_dump_json())
    data = folder / f"rows-{rows}.jsonl"
    with data.open("w") as sink:
        for i in range(rows):
            sink.write(json.dumps({"id": i, "input": f"Article {i}: the city council met on Monday and voted on the budget.", "output": f"Summary {i}: the council voted."}) + "\n")
    return checklist, data


def judge_argv(checklist: Path, data: Path, out: Path, url: str, concurrency: int, model: str = "openai/m", fast: bool = True) -> list[str]:
    return [
        "judge", "--checklist", str(checklist), "--data", str(data), "-o", str(out), "--overwrite",
        "--cache-dir", str(out.with_suffix(".cache")), "--lm", model, "--api-base", url, "--concurrency", str(concurrency),
        *([] if fast else ["--no-fast-path"]),
    ]


# -- arms ---------------------------------------------------------------------------------------------------------
def bineval_arm(argv: list[str], incomplete_ok: bool = False) -> float:
    """Seconds ``bineval judge`` takes in this process (its imports already loaded). ``incomplete_ok``: a real small
    model may leave verdicts unanswered (exit 1); they are counted in the output, not a failed benchmark."""
    from bineval_dspy import cli
    from bineval_dspy.core.errors import ExitCode

    started = time.perf_counter()
    code = cli.main(argv)
    seconds = time.perf_counter() - started
    if code != ExitCode.OK and not (incomplete_ok and code == ExitCode.INCOMPLETE):
        raise SystemExit(f"bineval judge exited with {code}")
    return seconds


def unanswered(out: Path) -> int:
    """The unanswered verdicts in a judge output."""
    rows = (json.loads(line)["bineval"]["scorecard"] for line in out.read_text().splitlines())
    return sum(v["answer"] == "unanswered" for card in rows for v in card["verdicts"])


def _chat_body(i: int) -> dict[str, Any]:
    return {
        "model": "m", "temperature": 0.0, "max_tokens": 256,
        "messages": [{"role": "system", "content": "You are a strict evaluator."}, {"role": "user", "content": f"Article {i}. Question {i % QUESTIONS}?"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "verdict", "schema": {"type": "object"}}},
    }  # fmt: skip


def raw_arm(url: str, calls: int, concurrency: int) -> float:
    """Seconds a plain asyncio httpx loop takes to send ``calls`` chat completions, ``concurrency`` at a time."""
    import httpx

    async def run() -> float:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
            gate = asyncio.Semaphore(concurrency)

            async def one(i: int) -> None:
                async with gate:
                    reply = await client.post("/chat/completions", json=_chat_body(i))
                    reply.raise_for_status()
                    json.loads(reply.json()["choices"][0]["message"]["content"])

            started = time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(calls)))
            return time.perf_counter() - started

    return asyncio.run(run())


def aiohttp_arm(url: str, calls: int, concurrency: int) -> float:
    """The same loop on aiohttp's client: how fast the server answers a client with little overhead of its own."""
    import aiohttp

    async def run() -> float:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as client:
            gate = asyncio.Semaphore(concurrency)

            async def one(i: int) -> None:
                async with gate, client.post(f"{url}/chat/completions", json=_chat_body(i)) as reply:
                    reply.raise_for_status()
                    json.loads((await reply.json())["choices"][0]["message"]["content"])

            started = time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(calls)))
            return time.perf_counter() - started

    return asyncio.run(run())


def timed(arm: Any, *args: Any) -> tuple[float, float]:
    """An arm's wall seconds and the CPU seconds this process spent in it (every thread; the server is another
    process, so this is the client's CPU)."""
    cpu = time.process_time()
    seconds = arm(*args)
    return seconds, time.process_time() - cpu


def rss_arm(checklist: Path, data: Path, out: Path, url: str, concurrency: int = 64) -> dict[str, Any]:
    """One ``bineval judge`` subprocess's RSS, read from /proc every second while it runs: the peak in MB, the
    samples, and the growth from a quarter of the run to its end (flat: about 0), with its seconds."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "bineval_dspy.cli", *judge_argv(checklist, data, out, url, concurrency)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    samples: list[tuple[float, float]] = []  # (seconds, MB)
    while process.poll() is None:
        try:
            status = Path(f"/proc/{process.pid}/status").read_text()
            samples.append((time.perf_counter() - started, int(status.split("VmRSS:")[1].split()[0]) / 1024))
        except (OSError, IndexError):  # ended between the poll and the read
            pass
        time.sleep(1.0)
    error = process.stderr.read().decode() if process.stderr else ""
    if process.returncode != 0:
        raise SystemExit(f"bineval judge (rss) exited with {process.returncode}: {error[-2000:]}")
    seconds = time.perf_counter() - started
    mbs = [mb for _, mb in samples] or [0.0]
    quarter = next((mb for at, mb in samples if at >= seconds / 4), mbs[-1])
    return {"seconds": seconds, "peak_mb": max(mbs), "growth_after_first_quarter_mb": mbs[-1] - quarter, "samples": samples}


def measure(results: dict[str, Any], folder: Path, checklist: Path, data: Path, url: str, calls: int, tag: str) -> None:
    """Every arm at each concurrency against the server at ``url``; one line each, results under ``tag``."""
    raw_arm(url, min(calls, 256), 64)  # warm: imports, connections
    aiohttp_arm(url, min(calls, 256), 64)
    bineval_arm(judge_argv(checklist, data, folder / "warm.jsonl", url, 64))
    for concurrency in CONCURRENCY:
        arms = {
            "bineval": (bineval_arm, judge_argv(checklist, data, folder / f"judge-{tag}{concurrency}.jsonl", url, concurrency)),
            "dspy": (bineval_arm, judge_argv(checklist, data, folder / f"dspy-{tag}{concurrency}.jsonl", url, concurrency, fast=False)),
            "raw": (raw_arm, url, calls, concurrency),
            "aiohttp": (aiohttp_arm, url, calls, concurrency),
        }
        for name, (arm, *inputs) in arms.items():
            seconds, cpu = timed(arm, *inputs)
            results[f"{name}{tag}@{concurrency}"] = {"seconds": seconds, "calls_per_s": calls / seconds, "client_cpu_ms_per_call": 1000 * cpu / calls}
        line = ", ".join(f"{name} {results[f'{name}{tag}@{concurrency}']['calls_per_s']:,.0f} calls/s ({results[f'{name}{tag}@{concurrency}']['client_cpu_ms_per_call']:.2f} ms CPU/call)" for name in arms)
        ratio = results[f"aiohttp{tag}@{concurrency}"]["calls_per_s"] / results[f"bineval{tag}@{concurrency}"]["calls_per_s"]
        print(f"{tag or 'instant '}@{concurrency}: {line}; bineval/aiohttp {ratio:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200, help="rows judged per arm against each server (x 10 questions)")
    parser.add_argument("--delay-ms", type=float, default=20.0, help="the slow server's latency (0: leave that server out)")
    parser.add_argument("--rss-rows", type=int, default=10_000, help="rows of the RSS run")
    parser.add_argument("--llama-rows", type=int, default=2, help="rows judged against llama_cpp.server (0: leave it out)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.delay_ms)
        return
    calls = args.rows * QUESTIONS
    results: dict[str, Any] = {"rows": args.rows, "questions": QUESTIONS, "calls": calls, "delay_ms": args.delay_ms}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        checklist, data = write_inputs(folder, args.rows)
        with instant_server(folder) as url:
            measure(results, folder, checklist, data, url, calls, "")
            rss_checklist, rss_data = write_inputs(folder, args.rss_rows, coded=QUESTIONS - 1)
            rss = rss_arm(rss_checklist, rss_data, folder / "rss.jsonl", url)
            results["rss"] = {"rows": args.rss_rows, **rss}
            print(f"RSS for {args.rss_rows:,} rows ({rss['seconds']:,.0f} s): peak {rss['peak_mb']:,.0f} MB, "
                  f"{rss['growth_after_first_quarter_mb']:+,.0f} MB from a quarter of the run to its end", flush=True)  # fmt: skip
        if args.delay_ms:
            with instant_server(folder, args.delay_ms) as url:
                measure(results, folder, checklist, data, url, calls, f"{args.delay_ms:g}ms")
        if args.llama_rows:
            llama_checklist, llama_data = write_inputs(folder, args.llama_rows)
            with llama_server(folder) as url:
                llama_out = folder / "llama.jsonl"
                seconds = bineval_arm(judge_argv(llama_checklist, llama_data, llama_out, url, LLAMA_CONCURRENCY, model="openai/smollm2"), incomplete_ok=True)
            llama_calls, missing = args.llama_rows * QUESTIONS, unanswered(llama_out)
            results["llama_cpp"] = {"rows": args.llama_rows, "concurrency": LLAMA_CONCURRENCY, "seconds": seconds, "calls_per_s": llama_calls / seconds, "unanswered": missing}
            print(f"llama_cpp.server (--concurrency {LLAMA_CONCURRENCY}): {llama_calls / seconds:.1f} calls/s on {args.llama_rows} rows, {missing} unanswered", flush=True)
    ratios = {c: results[f"raw@{c}"]["calls_per_s"] / results[f"bineval@{c}"]["calls_per_s"] for c in CONCURRENCY}
    lean = {c: results[f"aiohttp@{c}"]["calls_per_s"] / results[f"bineval@{c}"]["calls_per_s"] for c in CONCURRENCY}
    results["ratios"], results["ratios_to_aiohttp"] = ratios, lean
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"ratios: bineval/aiohttp@64={lean[64]:.2f} bineval/aiohttp@256={lean[256]:.2f} bineval/raw@64={ratios[64]:.2f} bineval/raw@256={ratios[256]:.2f}")


if __name__ == "__main__":
    main()
