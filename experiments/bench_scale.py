"""What a replica pool and a Ray cluster buy, side by side in one run, each arm a ``bineval judge`` (in this
process, a fresh cache folder each run) against servers (``python -m bineval_dspy.testing.server``, each its own
process, so their threads do not share the client's interpreter) that answer after a fixed ``--delay``:

- replicas1, replicas3: calls/s against 1 server and against 3 replicas of it, each answering ``--slots``
  requests at a time (one replica binds at slots / delay calls/s), ``--concurrency`` requests in flight (by default
  twice the three replicas' slots, so a replica never waits for the client);
- ray1, ray2, ray4 (``--ray-workers``): rows/s with 1, 2 and 4 local Ray workers, each at ``--concurrency 16``,
  against one server that answers 256 at a time (so the server does not bind).

The arms alternate, ``--repeats`` times, so machine load hits them alike; the figure is each arm's median.

Usage: python experiments/bench_scale.py [--rows N] [--delay S] [--slots N] [--repeats N] [--ray-workers 1,2,4] [--out PATH]
Prints one line per run and ends with ``ratios: replicas3/replicas1=A ray2/ray1=B ...``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bineval_dspy import cli
from bineval_dspy.core.schema import Checklist, Question

QUESTIONS = ("Is it short?", "Is it kind?")


@contextmanager
def spawned(delay: float, slots: int) -> Iterator[str]:
    """A fixed-delay server in its own process, for the block; its URL."""
    command = [sys.executable, "-m", "bineval_dspy.testing.server", "--delay", str(delay), "--slots", str(slots), "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait()


def judged(folder: Path, rows: Path, checklist: Path, urls: list[str], concurrency: int, run: str, *extra: str) -> float:
    """Seconds one ``bineval judge`` run takes over the rows against the servers at ``urls`` (exit 0 required)."""
    bases = [arg for url in urls for arg in ("--api-base", url)]
    started = time.perf_counter()
    code = cli.main([
        "judge", "--checklist", str(checklist), "--data", str(rows), "-o", str(folder / f"{run}.jsonl"), "--lm", "openai/m", *bases,
        "--explanations", "none", "--concurrency", str(concurrency), "--cache-dir", str(folder / f"cache-{run}"), *extra,
    ])  # fmt: skip
    if code != 0:
        raise SystemExit(f"{run}: bineval judge exited {code}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds per request at each server")
    parser.add_argument("--slots", type=int, default=4, help="requests each server answers at once")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=None, help="the replica arms' requests in flight (default: 6 x slots, twice the three replicas' slots)")
    parser.add_argument("--ray-workers", default="1,2,4", help="worker counts of the Ray arms (empty: none; needs the ray extra)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    checklist = folder / "checklist.json"
    checklist.write_text(Checklist(task="t", dimensions=["d"], questions=[Question(text=q, dimension="d") for q in QUESTIONS]).model_dump_json())
    rows = folder / "rows.jsonl"
    rows.write_text("".join(json.dumps({"input": f"in {n}", "output": f"out {n}"}) + "\n" for n in range(args.rows)))
    calls = args.rows * len(QUESTIONS)
    workers = [int(n) for n in args.ray_workers.split(",") if n.strip()]
    concurrency = args.concurrency or 6 * args.slots
    arms = [(f"replicas{n}", n, 0) for n in (1, 3)] + [(f"ray{n}", 1, n) for n in workers]
    rates: dict[str, list[float]] = {arm: [] for arm, _, _ in arms}
    if workers:
        from bineval_dspy.core.cluster import connect

        connect("local", max(workers))  # started once: each arm's run then costs its own work, not Ray's start
    for repeat in range(args.repeats):
        for arm, replicas, ray_workers in arms:
            with ExitStack() as stack:
                slots = 256 if ray_workers else args.slots
                urls = [stack.enter_context(spawned(args.delay, slots)) for _ in range(replicas)]
                extra = ("--ray", "local", "--ray-workers", str(ray_workers)) if ray_workers else ()
                seconds = judged(folder, rows, checklist, urls, 16 if ray_workers else concurrency, f"{arm}-{repeat}", *extra)
            rates[arm].append((args.rows if ray_workers else calls) / seconds)
            unit = "rows" if ray_workers else "calls"
            print(f"{arm} run {repeat + 1}: {rates[arm][-1]:.1f} {unit}/s ({seconds:.2f} s)")
    median = {arm: statistics.median(values) for arm, values in rates.items()}
    ratios = {"replicas3/replicas1": median["replicas3"] / median["replicas1"]}
    ratios.update({f"ray{n}/ray1": median[f"ray{n}"] / median["ray1"] for n in workers if n != 1 and "ray1" in median})
    result = {
        "rows": args.rows, "calls": calls, "delay_s": args.delay, "slots": args.slots, "bound_one_replica": args.slots / args.delay, "concurrency": concurrency,
        "rates": rates, "median": median, "ratios": ratios, "cpus": os.cpu_count(),
    }  # fmt: skip
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    print("ratios: " + " ".join(f"{name}={value:.2f}" for name, value in ratios.items()))


if __name__ == "__main__":
    main()
