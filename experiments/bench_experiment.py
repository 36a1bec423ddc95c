"""What an experiment arm's test pass costs beside ``generate`` and ``verify`` on the same prompts: the first N rows of
a suite answered greedy on the embedded LM by ``bineval generate`` (then graded by ``bineval verify``) and by a
one-arm ``bineval experiment`` (a ``start`` arm, every row on test), each a fresh process with a fresh LM cache,
as a user runs them. The two orders alternate over repeats, so machine load drifting hits both alike.

Whole processes are timed, not calls: issue 57's 5x came from how the process loaded llama.cpp (an experiment's plan
loaded it before the engine chose passive OpenMP waiting), which an in-process timing cannot see. The outputs must
be equal row by row (same program, same greedy decoding); the script says how many are.

Usage: python experiments/bench_experiment.py [--suite FILE] [--prompts N] [--max-tokens N] [--repeats N] [--out PATH]
Ends with ``ratio: experiment/(generate+verify)=R; outputs equal K of N``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SUITE = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data")) / "ifeval" / "ifeval_shared.jsonl"
DEFAULT_OUT = REPO / "experiments" / "results" / "bench_experiment.json"
INSTRUCTIONS = "Answer the request. Follow every constraint it states exactly."  # the README quick start's strict arm


def bineval(*args: str | Path) -> float:
    """Run one ``bineval`` command in a fresh process; its wall seconds (a failure stops the bench, with its stderr)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bineval_dspy.cli", *map(str, args)], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"bineval {' '.join(map(str, args[:1]))} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return seconds


def generate_then_verify(work: Path, suite: Path, instructions: Path, max_tokens: int) -> tuple[float, float, dict[str, str]]:
    """``generate`` and ``verify`` seconds, and the replies by key."""
    replies, graded = work / "generated.jsonl", work / "verified.jsonl"
    for path in (replies, graded):
        path.unlink(missing_ok=True)
    generating = bineval("generate", "--suite", suite, "--instructions", instructions, "--max-tokens", str(max_tokens),
                         "--cache-dir", work / "cache-generate", "-o", replies)  # fmt: skip
    verifying = bineval("verify", "--suite", suite, "--responses", replies, "-o", graded)
    rows = [json.loads(line) for line in replies.read_text().splitlines() if line.strip()]
    return generating, verifying, {str(row["key"]): row["response"] for row in rows}


def experiment(work: Path, suite: Path, prompts: int, max_tokens: int) -> tuple[float, float, dict[str, str]]:
    """The one-arm experiment's seconds (the whole process, and its test pass as ``results.json`` records it), and
    the arm's test outputs by key."""
    run = work / "experiment"
    config = work / "experiment.toml"
    config.write_text(
        f'name = "bench-experiment"\nmode = "self"\nlm = "smollm2"\nrun_dir = {json.dumps(str(run))}\nbaseline = "start"\n'
        f"[data]\nsuite = {json.dumps(str(suite))}\ntrain = 0\nval = 0\ntest = {prompts}\nseed = 0\n"
        f"[program]\ninstructions = {json.dumps(INSTRUCTIONS)}\nmax_tokens = {max_tokens}\n"
        '[[arms]]\nname = "start"\nkind = "start"\n'
    )
    shutil.rmtree(run, ignore_errors=True)  # a fresh run, never a resumed one
    seconds = bineval("experiment", config, "--cache-dir", work / "cache-experiment")
    results = json.loads((run / "results.json").read_text())
    grid = [json.loads(line) for line in (run / "grid.jsonl").read_text().splitlines() if line.strip()]
    return seconds, float(results["arms"][0]["test_seconds"]), {str(row["id"]): row["cells"]["start"]["output"] for row in grid}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=Path, default=DEFAULT_SUITE)
    parser.add_argument("--prompts", type=int, default=8, help="the suite's first N rows")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each side (orders alternate); medians reported")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if args.prompts < 1 or args.max_tokens < 8 or args.repeats < 1:
        parser.error("--prompts and --repeats must be >= 1 and --max-tokens >= 8")
    if not args.suite.is_file():
        parser.error(f"--suite {args.suite}: no such file")
    rows = [line for line in args.suite.read_text().splitlines() if line.strip()][: args.prompts]
    times: dict[str, list[float]] = {"generate": [], "verify": [], "experiment": [], "experiment_test_pass": []}
    with tempfile.TemporaryDirectory(prefix="bench-experiment-") as folder:
        work = Path(folder)
        suite, instructions = work / "suite.jsonl", work / "instructions.txt"
        suite.write_text("\n".join(rows) + "\n")
        instructions.write_text(INSTRUCTIONS)
        for repeat in range(args.repeats):
            for side in ("generate", "experiment") if repeat % 2 == 0 else ("experiment", "generate"):
                for cache in work.glob("cache-*"):  # every run starts from an empty LM cache
                    shutil.rmtree(cache)
                if side == "generate":
                    generating, verifying, generated = generate_then_verify(work, suite, instructions, args.max_tokens)
                    times["generate"].append(generating)
                    times["verify"].append(verifying)
                else:
                    whole, test_pass, tested = experiment(work, suite, len(rows), args.max_tokens)
                    times["experiment"].append(whole)
                    times["experiment_test_pass"].append(test_pass)
                print(f"repeat {repeat + 1}/{args.repeats}: {side} done", flush=True)
    seconds = {name: round(median(values), 2) for name, values in times.items()}
    equal = sum(generated.get(key) == output for key, output in tested.items())
    ratio = seconds["experiment"] / (seconds["generate"] + seconds["verify"])
    result = {
        "prompts": len(rows), "max_tokens": args.max_tokens, "repeats": args.repeats, "seconds": seconds, "runs": times,
        "ratio_experiment_to_generate_and_verify": round(ratio, 2), "outputs_equal": equal, "outputs": len(tested),
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"generate {seconds['generate']:.1f} s + verify {seconds['verify']:.1f} s; experiment {seconds['experiment']:.1f} s "
          f"(its test pass {seconds['experiment_test_pass']:.1f} s); {len(rows)} prompts, {args.max_tokens} tokens, whole processes")  # fmt: skip
    print(f"ratio: experiment/(generate+verify)={ratio:.2f}; outputs equal {equal} of {len(tested)}")


if __name__ == "__main__":
    main()
