"""Batch against per-question scoring in a meta-eval run: how often the two modes give the same verdict, and what
each costs, for every pair of methods named ``X-pq`` and ``X-batch`` (the checklist bench's naming).

Usage: python experiments/scoring_agreement.py RUN_DIR [RUN_DIR ...]

Per pair, over the outputs both scored and the questions both asked (matched by question text, so a checklist
written per input pairs up too): verdict agreement (an unanswered verdict on either side disagrees), Cohen's kappa
over the pairs both answered, unanswered verdicts per mode, and LM calls and tokens per output of each mode.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from bineval_dspy.meta.agreement import agreement, cohen_kappa

SCORES_FILE = "scores.jsonl"


def _records(run_dir: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """method -> output id -> score record (those with a scorecard)."""
    by_method: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    path = run_dir / SCORES_FILE
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise SystemExit(f"{path}:{number}: not a JSON line") from None
        if record.get("scorecard"):
            by_method[record["method"]][record["id"]] = record
    return by_method


def _verdicts(record: dict[str, Any]) -> dict[str, str]:
    """Question text -> answer, the LM's verdicts only (code-checked ones are equal in both modes by construction)."""
    return {v["question"]: v["answer"] for v in record["scorecard"]["verdicts"] if not str(v["judge"]).startswith("code:")}


def _per_output(records: dict[str, dict[str, Any]], ids: list[str], field: str) -> float:
    return sum(float(records[i]["usage"].get(field) or 0) for i in ids) / len(ids) if ids else 0.0


def compare(run_dir: Path) -> list[dict[str, Any]]:
    """One row per (X-pq, X-batch) pair of the run."""
    by_method = _records(run_dir)
    rows = []
    for name in sorted(by_method):
        twin = name.replace("-pq", "-batch", 1)
        if "-pq" not in name or twin not in by_method:
            continue
        each, batch = by_method[name], by_method[twin]
        ids = sorted(set(each) & set(batch))
        pairs = [(a[q], b[q]) for i in ids for a, b in [(_verdicts(each[i]), _verdicts(batch[i]))] for q in a if q in b]
        answered = [(x, y) for x, y in pairs if x != "unanswered" and y != "unanswered"]
        rows.append({
            "method": name.replace("-pq", "", 1),
            "outputs": len(ids),
            "verdict pairs": len(pairs),
            "agreement": agreement([x for x, _ in pairs], [y for _, y in pairs]),
            "kappa": cohen_kappa([x for x, _ in answered], [y for _, y in answered]) if answered else None,
            "unanswered pq": sum(x == "unanswered" for x, _ in pairs),
            "unanswered batch": sum(y == "unanswered" for _, y in pairs),
            "calls/output pq": _per_output(each, ids, "lm_calls"),
            "calls/output batch": _per_output(batch, ids, "lm_calls"),
            "tokens/output pq": _per_output(each, ids, "tokens"),
            "tokens/output batch": _per_output(batch, ids, "tokens"),
        })
    return rows


def _cell(value: Any) -> str:
    if value is None:
        return "undefined"
    return f"{value:.3f}" if isinstance(value, float) and not value.is_integer() else f"{value:g}" if isinstance(value, float) else str(value)


def table(run_dir: Path, rows: list[dict[str, Any]]) -> str:
    if not rows:
        return f"{run_dir}: no X-pq / X-batch method pairs with scorecards\n"
    head = list(rows[0])
    lines = [f"{run_dir.name}", "", "| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    lines += ["| " + " | ".join(_cell(row[k]) for k in head) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", type=Path, help="meta-eval run directories (each with scores.jsonl)")
    args = parser.parse_args(argv)
    for run_dir in args.run_dirs:
        if not (run_dir / SCORES_FILE).is_file():
            print(f"{run_dir}: no {SCORES_FILE}", file=sys.stderr)
            return 2
        print(table(run_dir, compare(run_dir)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
