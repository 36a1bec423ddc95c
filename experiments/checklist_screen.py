"""What share of the questions the embedded LM writes passes the checklist screen, per writer, before and after.

Before: the checklists ``checklist_coverage.py`` recorded (one write per InFoBench instruction, no screen), read
from its results file; no LM call. After: the same instructions written through ``write_screened`` as
``bineval checklist`` does (up to two retries as new samples, the fit questions of every attempt kept) on the
embedded LM, for the writers named by ``--writers`` (Qworld's tree costs dozens of calls a task: before only by
default). Reported per writer: the share of written questions that pass, the share of checklists left with no
problem, attempts and LM calls per instruction.

Usage: python experiments/checklist_screen.py [--writers tick,bineval] [--cache-dir DIR] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import dspy

from bineval_dspy.checklists.screen import RETRY_TEMPERATURE, promised_minimum, question_problem, write_screened
from bineval_dspy.checklists.writers import make_writer
from bineval_dspy.core.errors import one_line
from bineval_dspy.core.schema import Checklist
from bineval_dspy.lm.runtime import configure
from bineval_dspy.lm.usage import measured
from bineval_dspy.meta.datasets import load_infobench

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))
RECORDED = REPO / "experiments" / "results" / "checklist_coverage.json"
DEFAULT_OUT = REPO / "experiments" / "results" / "checklist_screen.json"
WRITERS = {"bineval": ("bineval", {"max_questions": 12}), "tick": ("tick", {})}  # as checklist_coverage.py writes them
MINIMUM = {"tick": 2}  # the fewest questions a writer promises (one dimension); the others promise one


def before(recorded: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The screen applied to every recorded checklist: questions passing, checklists with no problem."""
    out: dict[str, dict[str, Any]] = {}
    for name, summary in recorded["results"].items():
        written = [r["checklist"] for r in summary["per_instruction"] if "checklist" in r]
        questions = [q for checklist in written for q in checklist]
        fit = [q for q in questions if question_problem(q) is None]
        minimum = MINIMUM.get(name.split()[0], 1)
        clean = [c for c in written if len([q for q in c if question_problem(q) is None]) >= minimum and len(c) == len([q for q in c if question_problem(q) is None])]
        reasons: dict[str, int] = {}
        for q in questions:
            if (problem := question_problem(q)) is not None:
                key = problem.split(" (")[0]
                reasons[key] = reasons.get(key, 0) + 1
        out[name] = {"instructions": len(summary["per_instruction"]), "written": len(written), "questions": len(questions),
                     "passing": len(fit), "clean_checklists": len(clean), "problems": reasons}
    return out


def _screened_row(row: Any, writer: Any, lm: dspy.LM) -> dict[str, Any]:
    """One instruction written through the screen: the first attempt's questions, what passed, what was left."""
    raw: list[str] = []
    minimum = promised_minimum(writer, [])

    def attempt(k: int) -> Checklist | None:
        try:
            if k == 0:
                checklist = writer(task=row.input)
                raw.extend(q.text for q in checklist.questions)
                return checklist
            with dspy.context(lm=lm.copy(rollout_id=k, temperature=RETRY_TEMPERATURE)):
                return writer(task=row.input)
        except Exception:  # an unusable answer: that attempt gave nothing, as in `bineval checklist`
            return None

    try:
        screened, cost = measured(lambda: write_screened(attempt, [], minimum))
    except Exception as exc:
        return {"id": row.id, "error": one_line(exc)}
    first_fit = [q for q in raw if question_problem(q) is None]
    final = screened.checklist
    return {"id": row.id, "first_attempt": raw, "first_passing": len(first_fit),
            "clean_first": bool(raw) and len(first_fit) == len(raw) and len(raw) >= minimum,
            "final": [q.text for q in final.questions] if final else [], "problems": screened.problems,
            "attempts": screened.attempts, "lm_calls": cost.lm_calls}


def after(rows: list[Any], name: str, lm: dspy.LM) -> dict[str, Any]:
    """Each instruction written through the screen, with retries; what passed and what was left."""
    method, params = WRITERS[name]
    per = []
    for row in rows:
        per.append(_screened_row(row, make_writer(method, **params), lm))
        print(f"{name} {row.id}: {per[-1].get('attempts')} attempt(s), problems {per[-1].get('problems', per[-1].get('error'))}", flush=True)
    ok = [r for r in per if "error" not in r]
    return {"instructions": len(rows), "failed": len(rows) - len(ok),
            "first_questions": sum(len(r["first_attempt"]) for r in ok), "first_passing": sum(r["first_passing"] for r in ok),
            "clean_first": sum(r["clean_first"] for r in ok), "clean_final": sum(not r["problems"] for r in ok),
            "final_questions": sum(len(r["final"]) for r in ok),
            "attempts": sum(r["attempts"] for r in ok) / max(1, len(ok)), "lm_calls": sum(r["lm_calls"] for r in ok) / max(1, len(ok)),
            "per_instruction": per}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SHARED)
    parser.add_argument("--writers", default="tick,bineval", help="writers to run through the screen (none: before only)")
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/bineval-checklist-screen-cache"))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    report: dict[str, Any] = {"instructions": recorded["instructions"], "before": before(recorded), "after": {}}
    wanted = set(recorded["instructions"])
    rows = [r for r in load_infobench(args.data / "infobench" / "infobench.jsonl", args.data / "infobench" / "infobench_gpt4_outputs_gpt4_judgments.jsonl") if r.id in wanted]
    rows.sort(key=lambda r: recorded["instructions"].index(r.id))
    names = [n for n in args.writers.split(",") if n]
    if names:
        lm = configure("smollm2", args.cache_dir)
        for name in names:
            report["after"][name] = after(rows, name, lm)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    print(f"\n{len(rows)} InFoBench instructions (checklist_coverage.py's sample), embedded SmolLM2-135M\n")
    print("| writer | before: questions passing | before: clean checklists | after: first-attempt questions passing | after: clean checklists (<= 3 attempts) | attempts | LM calls |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, b in report["before"].items():
        a = report["after"].get(name.split()[0]) if name in WRITERS else None
        first = f"{a['first_passing']}/{a['first_questions']}" if a else "-"
        clean = f"{a['clean_final']}/{a['instructions'] - a['failed']}" if a else "-"
        attempts = f"{a['attempts']:.2f}" if a else "-"
        calls = f"{a['lm_calls']:.1f}" if a else "-"
        print(f"| {name} | {b['passing']}/{b['questions']} | {b['clean_checklists']}/{b['written']} | {first} | {clean} | {attempts} | {calls} |")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
