"""Write InFoBench instructions with their human-written decomposed questions as gold checklists, in the
``bineval tune`` checklist-kind task format (JSON Lines: ``task``, ``gold``), for a seeded sample.

Usage: python experiments/infobench_tasks.py [--n 4] [--seed 0] [--out runs/tune-qworld/tasks.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

from bineval_dspy.meta.datasets import load_infobench

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SHARED)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "tune-qworld" / "tasks.jsonl")
    args = parser.parse_args()
    rows = list(load_infobench(args.data / "infobench" / "infobench.jsonl", args.data / "infobench" / "infobench_gpt4_outputs_gpt4_judgments.jsonl"))
    chosen = random.Random(args.seed).sample(sorted(rows, key=lambda r: r.id), args.n)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"task": row.input, "gold": [q.text for q in row.questions]}, ensure_ascii=False) for row in chosen]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} tasks to {args.out}")


if __name__ == "__main__":
    main()
