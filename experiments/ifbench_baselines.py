"""IFBench baselines with the embedded LM: plain generation, STICK refinement (1 and 2 iterations), Best-of-4.

Every configuration runs on the same first N rows of the shared IFBench split with a fresh in-memory LM
cache (so each pays its full cost), and is graded by our code verifiers in strict and loose modes.

Usage: python experiments/ifbench_baselines.py [--rows 8] [--max-tokens 192] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import dspy

from bineval_dspy.judges.binary import hybrid_judge
from bineval_dspy.lm.specs import make_lm
from bineval_dspy.lm.usage import CallCounter
from bineval_dspy.programs.generator import Generator, run_generation
from bineval_dspy.suites import ResponseRow, load_suite, verify

DEFAULT_DATA = Path(os.environ.get("BINEVAL_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
CONFIGS = {"plain": (0, 1), "STICK x1": (1, 1), "STICK x2": (2, 1), "Best-of-4": (0, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=192)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=Path("experiments/results/ifbench_baselines.json"))
    args = parser.parse_args()
    rows = load_suite(args.data / "ifbench" / "ifbench_test_shared.jsonl")[: args.rows]
    lm = make_lm("smollm2")
    results = {}
    for name, (refine, best_of) in CONFIGS.items():
        dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)  # fresh: full cost per config
        counter = CallCounter()
        dspy.configure(lm=lm, callbacks=[counter])
        out = Path(tempfile.mkdtemp()) / "responses.jsonl"
        judge = hybrid_judge() if (refine or best_of > 1) else None
        started = time.perf_counter()
        report = run_generation(rows, Generator(max_tokens=args.max_tokens), out, refine=refine, best_of=best_of, judge=judge)
        seconds = time.perf_counter() - started
        records = [json.loads(line) for line in out.read_text().splitlines()]
        responses = [ResponseRow(where=f"{out}:{i}", key=r["key"], response=r["response"]) for i, r in enumerate(records, 1)]
        row = {"rows": len(records), "failed": len(report.failures), "lm_calls_per_row": counter.calls / len(rows), "seconds_per_row": seconds / len(rows)}
        for mode in ("strict", "loose"):
            _, stats = verify(rows, responses, mode)
            row[f"{mode}_prompt"] = stats.prompt_accuracy
            row[f"{mode}_instruction"] = stats.instruction_accuracy
        results[name] = row
        print(name, json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": args.rows, "max_tokens": args.max_tokens, "results": results}, indent=2))
    print("| config | strict prompt | strict instr. | loose prompt | loose instr. | LM calls/row | s/row |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, r in results.items():
        print(
            f"| {name} | {r['strict_prompt']:.3f} | {r['strict_instruction']:.3f} | {r['loose_prompt']:.3f} | "
            f"{r['loose_instruction']:.3f} | {r['lm_calls_per_row']:.1f} | {r['seconds_per_row']:.1f} |"
        )


if __name__ == "__main__":
    main()
