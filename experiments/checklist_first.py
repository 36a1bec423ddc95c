"""The first checklist a newcomer writes (issue 33, item 7): what the relevance screen and the task's own checkable
constraints change, on IFEval prompts and InFoBench instructions, with the embedded LM.

Both arms write through ``bineval checklist``'s own path (``screen.with_constraints``, the bineval writer, up to two
retries as new samples):
- before: the screen as it was (question form only), no constraints from the task;
- after: questions unrelated to the task left out (``relevance.Relevance``) and the constraints the task states
  attached as code questions (``constraints.stated_constraints``).
The arms share the LM cache, so "after" replays "before"'s attempts and pays only for the retries its screen asks.

Measured per arm:
- IFEval: the share of each prompt's instructions (its ``instruction_id_list``) that got their verifier. The prompts
  are rows 135 onward of the shared file: the constraint patterns were written looking at rows 0-134 only.
- Both: questions written, questions left out as unrelated, and, with ``--reader FILE`` (a JSON object of question
  text -> true/false, a person's reading of whether they would keep it), the share a reader keeps. Questions the
  file does not cover are counted as unread, never as kept.

Usage: python experiments/checklist_first.py [--n 20] [--reader experiments/checklist_first_reader.json]
       [--retries 2] [--cache-dir DIR] [--out PATH]
Writes PATH (JSON) and PATH with .md: every question of every task, so a reader can fill the reader file.
``--retries 0`` (the smoke test's size) writes each task once: "after" then replays "before" and only screens it.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from bineval_dspy.checklists.first import write_attempt
from bineval_dspy.checklists.relevance import Relevance
from bineval_dspy.checklists.screen import RETRIES, with_constraints
from bineval_dspy.checklists.stated import stated_constraints
from bineval_dspy.checklists.writers import make_writer
from bineval_dspy.core.jsonio import read_jsonl
from bineval_dspy.lm.runtime import configure

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))
DEFAULT_OUT = REPO / "experiments" / "results" / "checklist_first.json"
HELD_OUT = 135  # IFEval rows before this one were read while writing the constraint patterns


def tasks(n: int) -> list[dict[str, Any]]:
    """``n`` IFEval prompts (held out from the patterns) and ``n`` InFoBench instructions (with their input)."""
    ifeval = [obj for _, obj in read_jsonl(SHARED / "ifeval" / "ifeval_shared.jsonl")][HELD_OUT : HELD_OUT + n]
    infobench = [obj for _, obj in read_jsonl(SHARED / "infobench" / "infobench.jsonl")][:n]
    return [
        *({"set": "ifeval", "id": str(r["key"]), "task": r["prompt"], "gold": r["instruction_id_list"]} for r in ifeval),
        *({"set": "infobench", "id": r["id"], "task": r["instruction"] + (f"\n\n{r['input']}" if r.get("input") else "")} for r in infobench),
    ]


def written(task: str, after: bool, lm: Any, retries: int) -> dict[str, Any]:
    """One arm's checklist for ``task``: its LM questions, its code questions, what the screen left out."""
    writer = make_writer("bineval")
    failures: list = []
    screened = with_constraints(
        lambda attempt: write_attempt(writer, task, [], lm, attempt, failures), task, [], 1,
        Relevance(task) if after else None, stated_constraints(task) if after else None, retries,
    )  # fmt: skip
    questions = screened.checklist.questions if screened.checklist is not None else []
    return {
        "questions": [q.text for q in questions if q.verifier is None],
        "code": {q.text: q.verifier for q in questions if q.verifier is not None},
        "unrelated": [line for line in screened.dropped if "unrelated to the task" in line],
        "attempts": screened.attempts,
    }


def shares(rows: list[dict[str, Any]], reader: dict[str, bool]) -> dict[str, Any]:
    """Per arm and set: questions, left out as unrelated, kept by the reader (of those read), verifiers attached."""
    out: dict[str, Any] = {}
    for arm in ("before", "after"):
        for name in ("ifeval", "infobench"):
            part = [r for r in rows if r["set"] == name]
            texts = [q for r in part for q in [*r[arm]["questions"], *r[arm]["code"]]]
            read = [q for q in texts if q in reader]
            gold = [(g, r) for r in part for g in r.get("gold", [])]
            attached = sum(g in r[arm]["code"].values() for g, r in gold)
            out[f"{arm}/{name}"] = {
                "tasks": len(part), "questions": len(texts), "code_questions": sum(len(r[arm]["code"]) for r in part),
                "left_out_unrelated": sum(len(r[arm]["unrelated"]) for r in part),
                "reader_read": len(read), "reader_kept": sum(reader[q] for q in read),
                "reader_kept_share": round(sum(reader[q] for q in read) / len(read), 3) if read else None,
                **({"constraints": len(gold), "verifier_attached": attached, "verifier_share": round(attached / len(gold), 3)} if gold else {}),
            }  # fmt: skip
    return out


def markdown(rows: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    lines = ["# The first checklist, before and after (issue 33, item 7)", "", "| arm/set | tasks | questions | code | left out | reader kept | verifiers attached |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for key, s in summary.items():
        kept = f"{s['reader_kept']}/{s['reader_read']} ({s['reader_kept_share']})" if s["reader_read"] else "unread"
        verifiers = f"{s['verifier_attached']}/{s['constraints']} ({s['verifier_share']})" if "constraints" in s else "-"
        lines.append(f"| {key} | {s['tasks']} | {s['questions']} | {s['code_questions']} | {s['left_out_unrelated']} | {kept} | {verifiers} |")
    for r in rows:
        lines += ["", f"## {r['set']} {r['id']}", "", r["task"][:300].replace("\n", " "), ""]
        for arm in ("before", "after"):
            lines += [f"- {arm}: " + ("; ".join([*r[arm]["questions"], *(f"{q} (code: {v})" for q, v in r[arm]["code"].items())]) or "(none)")]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="tasks from each set")
    parser.add_argument("--reader", type=Path, help="a JSON object of question text -> true/false (would a reader keep it)")
    parser.add_argument("--retries", type=int, default=RETRIES, help="writer attempts after the first (default: as many as bineval checklist's screen asks)")
    parser.add_argument("--cache-dir", type=Path, default=REPO / "runs" / "checklist-first-cache")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    lm = configure("smollm2", args.cache_dir)
    reader = json.loads(args.reader.read_text()) if args.reader else {}
    rows = []
    for number, task in enumerate(tasks(args.n), start=1):
        rows.append({**task, "before": written(task["task"], False, lm, args.retries), "after": written(task["task"], True, lm, args.retries)})
        print(f"{number}: {task['set']} {task['id']}: {len(rows[-1]['before']['questions'])} -> {len(rows[-1]['after']['questions'])} + {len(rows[-1]['after']['code'])} code", flush=True)
    summary = shares(rows, reader)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"n": args.n, "retries": args.retries, "summary": summary, "rows": rows}, indent=2))
    args.out.with_suffix(".md").write_text(markdown(rows, summary))
    for key, s in summary.items():
        print(key, json.dumps(s))


if __name__ == "__main__":
    main()
