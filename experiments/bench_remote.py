"""What ``bineval judge`` costs against remote servers, measured side by side in one run.

Arms:

- bineval@N: ``bineval judge --concurrency N`` (the library's judging runner, through the CLI's ``main()`` in this
  process, a fresh cache folder each run) on ``--rows`` rows x a 10-question checklist against an instant
  OpenAI-compatible server on 127.0.0.1 (a uvicorn subprocess answering every chat completion at once);
- raw@N: a plain asyncio httpx loop sending the same number of chat completions, N at a time, to the same server;
- llama_cpp: ``bineval judge --concurrency 4`` against a real ``python -m llama_cpp.server`` on the bundled
  SmolLM2 GGUF (``--llama-rows`` rows; 0 leaves it out). llama-cpp-python's server has no parallel slots (no
  ``--n_parallel``: it answers one request at a time under a lock), so the requests in flight queue there;
- rss: the peak RSS of a ``bineval judge --concurrency 64`` subprocess on ``--rss-rows`` rows against the instant
  server (one LM question and nine code-verified ones, so the rows' scorecards are full-size and the LM calls few).

Usage: python experiments/bench_remote.py [--rows N] [--rss-rows N] [--llama-rows N] [--out PATH]
Prints one line per arm and ends with ``ratios: bineval/raw@64=A bineval/raw@256=B``.
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
async def instant_app(scope: dict, receive: Any, send: Any) -> None:
    """An OpenAI-compatible chat endpoint that answers every request at once with one verdict."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    if scope["path"].endswith("/models"):
        payload: dict[str, Any] = {"object": "list", "data": [{"id": "m", "object": "model"}]}
    else:
        payload = {
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def serve(port: int) -> None:
    import uvicorn

    uvicorn.run(instant_app, host="127.0.0.1", port=port, log_level="error", access_log=False, backlog=4096, timeout_keep_alive=300)


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


def instant_server(folder: Path) -> Any:
    port = free_port()
    return running([sys.executable, __file__, "--serve", str(port)], f"http://127.0.0.1:{port}/v1", 30, folder / "instant.log")


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


def judge_argv(checklist: Path, data: Path, out: Path, url: str, concurrency: int, model: str = "openai/m") -> list[str]:
    return [
        "judge", "--checklist", str(checklist), "--data", str(data), "-o", str(out), "--overwrite",
        "--cache-dir", str(out.with_suffix(".cache")), "--lm", model, "--api-base", url, "--concurrency", str(concurrency),
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


def raw_arm(url: str, calls: int, concurrency: int) -> float:
    """Seconds a plain asyncio httpx loop takes to send ``calls`` chat completions, ``concurrency`` at a time."""
    import httpx

    async def run() -> float:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
            gate = asyncio.Semaphore(concurrency)

            async def one(i: int) -> None:
                body = {
                    "model": "m", "temperature": 0.0, "max_tokens": 256,
                    "messages": [{"role": "system", "content": "You are a strict evaluator."}, {"role": "user", "content": f"Article {i}. Question {i % QUESTIONS}?"}],
                    "response_format": {"type": "json_schema", "json_schema": {"name": "verdict", "schema": {"type": "object"}}},
                }
                async with gate:
                    reply = await client.post("/chat/completions", json=body)
                    reply.raise_for_status()
                    json.loads(reply.json()["choices"][0]["message"]["content"])

            started = time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(calls)))
            return time.perf_counter() - started

    return asyncio.run(run())


def rss_arm(checklist: Path, data: Path, out: Path, url: str, concurrency: int = 64) -> float:
    """Peak RSS in MB of one ``bineval judge`` subprocess (its own, read from the kernel when it ends)."""
    script = "import sys, resource; from bineval_dspy import cli; code = cli.main(sys.argv[1:]); " \
             "print('peak_rss_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(code)"
    done = subprocess.run([sys.executable, "-c", script, *judge_argv(checklist, data, out, url, concurrency)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bineval judge (rss) exited with {done.returncode}: {done.stderr[-2000:]}")
    return int(done.stderr.rsplit("peak_rss_kb", 1)[1].split()[0]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200, help="rows judged per arm against the instant server (x 10 questions)")
    parser.add_argument("--rss-rows", type=int, default=10_000, help="rows of the peak-RSS run")
    parser.add_argument("--llama-rows", type=int, default=2, help="rows judged against llama_cpp.server (0: leave it out)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    results: dict[str, Any] = {"rows": args.rows, "questions": QUESTIONS, "calls": args.rows * QUESTIONS}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        checklist, data = write_inputs(folder, args.rows)
        calls = args.rows * QUESTIONS
        with instant_server(folder) as url:
            raw_arm(url, min(calls, 256), 64)  # warm: imports, connections
            bineval_arm(judge_argv(checklist, data, folder / "warm.jsonl", url, 64))
            for concurrency in CONCURRENCY:
                ours = bineval_arm(judge_argv(checklist, data, folder / f"judge-{concurrency}.jsonl", url, concurrency))
                raw = raw_arm(url, calls, concurrency)
                results[f"bineval@{concurrency}"] = {"seconds": ours, "calls_per_s": calls / ours}
                results[f"raw@{concurrency}"] = {"seconds": raw, "calls_per_s": calls / raw}
                print(f"@{concurrency}: bineval {calls / ours:,.0f} calls/s, raw {calls / raw:,.0f} calls/s", flush=True)
            rss_checklist, rss_data = write_inputs(folder, args.rss_rows, coded=QUESTIONS - 1)
            rss = rss_arm(rss_checklist, rss_data, folder / "rss.jsonl", url)
            results["rss"] = {"rows": args.rss_rows, "peak_mb": rss}
            print(f"peak RSS for {args.rss_rows:,} rows: {rss:,.0f} MB", flush=True)
        if args.llama_rows:
            llama_checklist, llama_data = write_inputs(folder, args.llama_rows)
            with llama_server(folder) as url:
                llama_out = folder / "llama.jsonl"
                seconds = bineval_arm(judge_argv(llama_checklist, llama_data, llama_out, url, LLAMA_CONCURRENCY, model="openai/smollm2"), incomplete_ok=True)
            llama_calls, missing = args.llama_rows * QUESTIONS, unanswered(llama_out)
            results["llama_cpp"] = {"rows": args.llama_rows, "concurrency": LLAMA_CONCURRENCY, "seconds": seconds, "calls_per_s": llama_calls / seconds, "unanswered": missing}
            print(f"llama_cpp.server (--concurrency {LLAMA_CONCURRENCY}): {llama_calls / seconds:.1f} calls/s on {args.llama_rows} rows, {missing} unanswered", flush=True)
    ratios = {c: results[f"raw@{c}"]["calls_per_s"] / results[f"bineval@{c}"]["calls_per_s"] for c in CONCURRENCY}
    results["ratios"] = ratios
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"ratios: bineval/raw@64={ratios[64]:.2f} bineval/raw@256={ratios[256]:.2f}")


if __name__ == "__main__":
    main()
