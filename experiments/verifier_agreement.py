"""Agreement of our code verifiers with IFBench's official strict and loose verdicts.

Usage: python experiments/verifier_agreement.py [--data DIR] [--only PREFIX]
Prints every disagreement, per-mode agreement, and ends with ``agreement: strict=X loose=Y``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from bineval_dspy.verifiers import build_check, follows, known_instruction_ids

DEFAULT_DATA = Path(os.environ.get("BINEVAL_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def graded_checks(data_dir: Path) -> list[dict]:
    """One record per (graded response, instruction) with the suite kwargs joined by key."""
    suite = {}
    for line in (data_dir / "ifbench" / "ifbench_test_shared.jsonl").read_text().splitlines():
        row = json.loads(line)
        suite[row["key"]] = row
    records = []
    for line in (data_dir / "ifbench" / "ifbench_sample_responses_graded.jsonl").read_text().splitlines():
        row = json.loads(line)
        kwargs_list = suite[str(row["key"])]["kwargs"]
        for i, instruction_id in enumerate(row["instruction_id_list"]):
            records.append(
                {
                    "key": row["key"],
                    "instruction_id": instruction_id,
                    "kwargs": kwargs_list[i],
                    "prompt": row["prompt"],
                    "response": row["response"],
                    "strict": row["strict_follow_instruction_list"][i],
                    "loose": row["loose_follow_instruction_list"][i],
                }
            )
    return records


def agreement(data_dir: Path, only: str = "") -> dict[str, dict]:
    """Per mode: number checked, number agreeing, and the disagreements."""
    known = set(known_instruction_ids())
    out = {mode: {"checked": 0, "agree": 0, "disagreements": []} for mode in ("strict", "loose")}
    for rec in graded_checks(data_dir):
        if rec["instruction_id"] not in known or not rec["instruction_id"].startswith(only):
            continue
        check = build_check(rec["instruction_id"], rec["kwargs"], rec["prompt"])
        for mode in ("strict", "loose"):
            ours = follows(check, rec["response"], mode)
            out[mode]["checked"] += 1
            if ours == rec[mode]:
                out[mode]["agree"] += 1
            else:
                out[mode]["disagreements"].append({"key": rec["key"], "id": rec["instruction_id"], "official": rec[mode], "ours": ours})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--only", default="", help="restrict to instruction ids with this prefix")
    args = parser.parse_args()
    result = agreement(args.data, args.only)
    for mode, res in result.items():
        for d in res["disagreements"]:
            print(f"{mode}: key={d['key']} {d['id']} official={d['official']} ours={d['ours']}")
    rates = {mode: res["agree"] / res["checked"] if res["checked"] else float("nan") for mode, res in result.items()}
    for mode, res in result.items():
        print(f"{mode}: {res['agree']}/{res['checked']} agree")
    print(f"agreement: strict={rates['strict']:.4f} loose={rates['loose']:.4f}")


if __name__ == "__main__":
    main()
