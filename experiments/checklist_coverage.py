"""Three ways to write a checklist, measured against InFoBench's human-written decomposed questions.

For a seeded sample of InFoBench instructions, each writer configuration (BinEval's two steps, TICK, Qworld at
several depths) writes a checklist for the instruction on the embedded LM; Coverage (share of gold questions some
generated question matches) and Uniqueness (share of generated questions matching no gold one) are computed by
MiniLM cosine (``analysis.coverage``), with questions and LM calls per instruction. A writer that fails on an
instruction (an unusable LM answer everywhere) is counted, never replaced by a made-up checklist. Means come with
95% bootstrap intervals over instructions. LM calls are cached under the run directory, so a rerun is cheap.

Usage: python experiments/checklist_coverage.py [--instructions 20] [--seed 0] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bineval_dspy.analysis.coverage import coverage as coverage_of
from bineval_dspy.analysis.coverage import embedding_matcher
from bineval_dspy.checklists.writers import make_writer
from bineval_dspy.core.errors import one_line
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.lm.budget import metered_map
from bineval_dspy.lm.runtime import configure
from bineval_dspy.lm.usage import measured
from bineval_dspy.meta.datasets import load_infobench

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))
DEFAULT_OUT = REPO / "experiments" / "results" / "checklist_coverage.json"
CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "bineval": ("bineval", {"max_questions": 12}),
    "tick": ("tick", {}),
    "qworld w1=1 w2=1": ("qworld", {"w1": 1, "w2": 1, "w3": 0}),
    "qworld w1=2 w2=2": ("qworld", {"w1": 2, "w2": 2, "w3": 0}),
    "qworld w1=3 w2=4 (paper)": ("qworld", {"w1": 3, "w2": 4, "w3": 0}),
}


def interval(values: list[float], seed: int, resamples: int = 1000) -> list[float]:
    """95% percentile bootstrap interval of the mean over instructions."""
    if not values:
        return []
    draws = np.random.default_rng(seed).integers(0, len(values), size=(resamples, len(values)))
    means = np.asarray(values)[draws].mean(axis=1)
    return [float(x) for x in np.percentile(means, [2.5, 97.5])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SHARED)
    parser.add_argument("--instructions", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threshold", type=float, default=0.7, help="MiniLM cosine at which two questions match")
    parser.add_argument("--run-dir", type=Path, default=REPO / "runs" / "checklist-coverage")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    configure("smollm2", args.run_dir / "cache")
    rows = list(load_infobench(args.data / "infobench" / "infobench.jsonl", args.data / "infobench" / "infobench_gpt4_outputs_gpt4_judgments.jsonl"))
    rows = random.Random(args.seed).sample(sorted(rows, key=lambda r: r.id), args.instructions)
    matcher = embedding_matcher(threshold=args.threshold)
    results: dict[str, Any] = {}
    for name, (method, params) in CONFIGS.items():
        writer = make_writer(method, **params)

        def one(row, writer=writer, name=name) -> dict[str, Any]:
            gold = Checklist(task=row.input, dimensions=[], questions=[Question(id=f"g{k}", text=q.text, dimension=q.dimension) for k, q in enumerate(row.questions)])
            started = time.perf_counter()
            try:
                checklist, cost = measured(lambda: writer(task=row.input))
            except Exception as exc:  # counted as a failure of the writer, never replaced
                return {"id": row.id, "error": one_line(exc)}
            found = coverage_of(checklist, gold, matcher, name=name)
            return {"id": row.id, "coverage": found.coverage, "uniqueness": found.uniqueness, "questions": found.questions,
                    "gold_questions": found.gold_questions, "lm_calls": cost.lm_calls, "tokens": cost.tokens,
                    "seconds": time.perf_counter() - started, "checklist": [q.text for q in checklist.questions]}

        per = [r for r, _ in metered_map(one, rows, name)]
        ok = [r for r in per if "error" not in r]
        summary: dict[str, Any] = {"instructions": len(rows), "failed": len(rows) - len(ok), "per_instruction": per}
        for key in ("coverage", "uniqueness", "questions", "lm_calls", "seconds"):
            values = [float(r[key]) for r in ok]
            summary[key] = float(np.mean(values)) if values else None
            summary[key + "_ci"] = interval(values, args.seed)
        results[name] = summary
        print(f"{name}: coverage {summary['coverage']}, uniqueness {summary['uniqueness']}, questions {summary['questions']}, "
              f"LM calls {summary['lm_calls']}, failed {summary['failed']}", flush=True)

    gold_mean = float(np.mean([len(r.questions) for r in rows]))
    report = {"instructions": [r.id for r in rows], "gold_questions_per_instruction": gold_mean, "threshold": args.threshold,
              "configs": {k: {"method": m, "params": p} for k, (m, p) in CONFIGS.items()}, "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    def cell(summary: dict[str, Any], key: str) -> str:
        if summary[key] is None:
            return "-"
        low, high = summary[key + "_ci"]
        return f"{summary[key]:.3f} [{low:.3f}, {high:.3f}]" if key in ("coverage", "uniqueness") else f"{summary[key]:.1f}"

    print(f"\n{len(rows)} InFoBench instructions, {gold_mean:.1f} gold questions each; MiniLM match at cosine >= {args.threshold}\n")
    # seconds are left out of the table: deeper Qworld settings replay the shallower ones' calls from the cache
    print("| writer | coverage [95% CI] | uniqueness [95% CI] | questions / instruction | LM calls / instruction | failed |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, summary in results.items():
        print(f"| {name} | {cell(summary, 'coverage')} | {cell(summary, 'uniqueness')} | {cell(summary, 'questions')} | "
              f"{cell(summary, 'lm_calls')} | {summary['failed']} |")
    print(f"\nwrote {args.out}")
    failed = sum(summary["failed"] for summary in results.values())
    if failed:
        sys.exit(f"{failed} checklist(s) could not be written (no usable LM answer); the means above leave them out")


if __name__ == "__main__":
    main()
