"""What a replica pool buys: ``bineval judge`` calls/s against 1 server and against 3 replicas of it, side by side in
one run. Each server (``bineval_dspy.testing.server``, on its own thread of this process) answers after a fixed
delay, a few requests at a time, so one replica binds at slots / delay calls/s; the client asks ``--concurrency``
at once (by default as many as the replicas' slots together), each run with a fresh cache folder. The arms
alternate, ``--repeats`` times, so machine load hits them alike; the figure is the median.

Usage: python experiments/bench_scale.py [--rows N] [--delay S] [--slots N] [--repeats N] [--out PATH]
Prints one line per run and ends with ``ratios: replicas3/replicas1=A``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from bineval_dspy import cli
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.testing.server import FixedDelayServer, serving

QUESTIONS = ("Is it short?", "Is it kind?")


def judged(folder: Path, rows: Path, checklist: Path, servers: list[FixedDelayServer], concurrency: int, run: str) -> float:
    """Seconds one ``bineval judge`` run takes over the rows against ``servers`` (exit 0 required)."""
    bases = [arg for server in servers for arg in ("--api-base", server.url)]
    started = time.perf_counter()
    code = cli.main([
        "judge", "--checklist", str(checklist), "--data", str(rows), "-o", str(folder / f"{run}.jsonl"), "--lm", "openai/m", *bases,
        "--explanations", "none", "--concurrency", str(concurrency), "--cache-dir", str(folder / f"cache-{run}"),
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
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    checklist = folder / "checklist.json"
    checklist.write_text(Checklist(task="t", dimensions=["d"], questions=[Question(text=q, dimension="d") for q in QUESTIONS]).model_dump_json())
    rows = folder / "rows.jsonl"
    rows.write_text("".join(json.dumps({"input": f"in {n}", "output": f"out {n}"}) + "\n" for n in range(args.rows)))
    calls = args.rows * len(QUESTIONS)
    rates: dict[str, list[float]] = {"replicas1": [], "replicas3": []}
    for repeat in range(args.repeats):
        for arm, replicas in (("replicas1", 1), ("replicas3", 3)):
            with ExitStack() as stack:
                servers = [stack.enter_context(serving(FixedDelayServer(args.delay, args.slots))) for _ in range(replicas)]
                seconds = judged(folder, rows, checklist, servers, 3 * args.slots, f"{arm}-{repeat}")
            rates[arm].append(calls / seconds)
            print(f"{arm} run {repeat + 1}: {calls} calls in {seconds:.2f} s = {calls / seconds:.1f} calls/s ({[s.answered for s in servers]} per server)")
    median = {arm: statistics.median(values) for arm, values in rates.items()}
    result = {
        "rows": args.rows, "calls": calls, "delay_s": args.delay, "slots": args.slots, "concurrency": 3 * args.slots,
        "bound_one_replica": args.slots / args.delay, "calls_per_s": rates, "median": median,
        "ratio": median["replicas3"] / median["replicas1"],
    }  # fmt: skip
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"ratios: replicas3/replicas1={result['ratio']:.2f}")


if __name__ == "__main__":
    main()
