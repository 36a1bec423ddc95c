"""Does the embedded judge agree with GPT-4's InFoBench verdicts beyond chance, and does calibrating its yes-bias help?

InFoBench's decomposed questions are judged by ``BinaryJudge(probability=True, explanations="none")`` on the
embedded LM; GPT-4's verdicts are the silver labels. Instructions are split by id with a fixed seed into a
calibration part and a held-out part. Rows, on the held-out instructions only:

- hard answers: the judge's "yes"/"no" (the yes-biased default);
- P(yes) >= 0.5;
- calibrated: "yes" when P(yes) reaches a threshold fitted on the calibration instructions (the threshold that
  maximizes Cohen's kappa there; one per question label with at least ``--min-per-label`` calibration questions,
  else the global one): calibration across the outputs judged together, as small-judge practice recommends;
- content-free: ``calibration="content_free"``: "yes" when P(yes) beats the question's P(yes) for a content-free
  output ("N/A"), contextual calibration with no fitted parameter.

Each row: agreement and Cohen's kappa with a bootstrap 95% interval over held-out instructions.

Usage: python experiments/infobench_kappa.py [--data DIR] [--calibration N] [--held-out N] [--seed S] [--run-dir DIR]
Verdicts are appended to RUN_DIR/verdicts.jsonl as they are made, so an interrupted run resumes (rows with an
unanswered verdict are judged again, and the run exits 1 while any remains); LM calls are cached.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

import dspy

from bineval_dspy.core.console import console, progress_map
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.lm.runtime import configure
from bineval_dspy.meta.agreement import agreement, cohen_kappa, kappa_interval
from bineval_dspy.meta.datasets import MetaRow, load_infobench

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))
DEFAULT_OUT = REPO / "experiments" / "results" / "infobench_kappa.json"


def judge_rows(rows: list[MetaRow], run_dir: Path) -> dict[str, list[dict]]:
    """Every decomposed question of every row judged once: label, answer, P(yes); resumable by row id."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "verdicts.jsonl"
    done: dict[str, list[dict]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            complete = all(q["answer"] != "unanswered" and "calibrated" in q for q in record["questions"])
            if complete:  # incomplete rows (or rows from before the calibrated judge) are judged again
                done[record["id"]] = record["questions"]
    judge = BinaryJudge(probability=True, explanations="none")
    calibrated = BinaryJudge(probability=True, explanations="none", calibration="content_free")  # same calls + priors

    def one(row: MetaRow) -> tuple[str, list[dict]]:
        questions = [Question(text=q.text, dimension=q.dimension) for q in row.questions]
        unique = list({q.id: q for q in questions}.values())
        checklist = Checklist(task=row.input, dimensions=[], questions=unique)
        by_id = {v.question_id: v for v in judge(input=row.input, output=row.output, checklist=checklist).verdicts}
        cal = {v.question_id: v for v in calibrated(input=row.input, output=row.output, checklist=checklist).verdicts}
        return row.id, [
            {"label": q.label, "dimension": q.dimension, "answer": by_id[question.id].answer, "p_yes": by_id[question.id].p_yes,
             "calibrated": cal[question.id].answer}
            for q, question in zip(row.questions, questions)
        ]

    todo = [row for row in rows if row.id not in done]
    with path.open("a", encoding="utf-8") as handle:
        for row_id, questions in progress_map(one, todo, "judging"):
            handle.write(json.dumps({"id": row_id, "questions": questions}) + "\n")
            handle.flush()
            done[row_id] = questions
    return done


def fit_threshold(p: list[float], labels: list[str]) -> float:
    """The P(yes) threshold that maximizes kappa on these pairs (ties: the lowest such threshold)."""
    best, best_kappa = 0.5, -2.0
    for t in sorted(set(p)):
        kappa = cohen_kappa(["yes" if x >= t else "no" for x in p], labels)
        if kappa is not None and kappa > best_kappa + 1e-12:
            best, best_kappa = t, kappa
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--calibration", type=int, default=40, help="instructions to fit thresholds on")
    parser.add_argument("--held-out", type=int, default=80, help="instructions to report on")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-per-label", type=int, default=30)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--run-dir", type=Path, default=REPO / "runs" / "infobench-kappa")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    configure("smollm2", args.run_dir / "cache")
    lm = dspy.settings.lm
    rows = list(load_infobench(args.data / "infobench" / "infobench.jsonl", args.data / "infobench" / "infobench_gpt4_outputs_gpt4_judgments.jsonl"))
    ids = sorted(row.id for row in rows)
    random.Random(args.seed).shuffle(ids)
    calibration_ids = set(ids[: args.calibration])
    held_out_ids = set(ids[args.calibration : args.calibration + args.held_out])
    chosen = [row for row in rows if row.id in calibration_ids | held_out_ids]
    started = time.perf_counter()
    verdicts = judge_rows(chosen, args.run_dir)
    seconds = time.perf_counter() - started

    calib = [q for i in calibration_ids for q in verdicts[i] if q["p_yes"] is not None]
    global_t = fit_threshold([q["p_yes"] for q in calib], [q["label"] for q in calib])
    per_label: dict[str, float] = {}
    for dim in sorted({q["dimension"] for q in calib}):
        mine = [q for q in calib if q["dimension"] == dim]
        if len(mine) >= args.min_per_label:
            per_label[dim] = fit_threshold([q["p_yes"] for q in mine], [q["label"] for q in mine])

    def rule(name: str):
        def decide(q: dict) -> str:
            if q["answer"] == "unanswered":
                return "unanswered"
            if name == "hard":
                return q["answer"]
            if name == "content-free":
                return q["calibrated"]
            if q["p_yes"] is None:
                return q["answer"]
            threshold = 0.5 if name == "p>=0.5" else per_label.get(q["dimension"], global_t)
            return "yes" if q["p_yes"] >= threshold else "no"

        return decide

    table = {}
    for name in ("hard", "p>=0.5", "calibrated", "content-free"):
        decide = rule(name)
        per_row = {i: [(decide(q), q["label"]) for q in verdicts[i]] for i in held_out_ids}
        answered = {i: [p for p in pairs if p[0] != "unanswered"] for i, pairs in per_row.items()}
        flat = [p for pairs in per_row.values() for p in pairs]
        interval = kappa_interval(answered, args.resamples, args.seed)
        table[name] = {
            "agreement": agreement([a for a, _ in flat], [b for _, b in flat]),
            "kappa": interval.estimate,
            "kappa_ci95": [interval.low, interval.high] if interval.low is not None else [],
            "yes_rate": sum(a == "yes" for a, _ in flat) / len(flat),
            "unanswered": sum(a == "unanswered" for a, _ in flat),
        }
    labels = [q["label"] for i in held_out_ids for q in verdicts[i]]
    summary = {
        "model": lm.model,
        "instructions": {"calibration": len(calibration_ids), "held_out": len(held_out_ids), "seed": args.seed},
        "questions": {"calibration": sum(len(verdicts[i]) for i in calibration_ids), "held_out": len(labels)},
        "reference_yes_rate": sum(label == "yes" for label in labels) / len(labels),
        "thresholds": {"global": global_t, "per_label": per_label},
        "seconds": round(seconds, 1),
        "rows": table,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    console.print(f"{len(held_out_ids)} held-out instructions, {len(labels)} questions; GPT-4 says yes to {summary['reference_yes_rate']:.3f}")
    print(f"{'rule':<12} {'agreement':>9} {'kappa':>7} {'95% CI':>17} {'yes rate':>9}")
    for name, row in table.items():
        ci = "[{:.3f}, {:.3f}]".format(*row["kappa_ci95"]) if row["kappa_ci95"] else "-"
        kappa = "n/a" if row["kappa"] is None else f"{row['kappa']:.3f}"
        print(f"{name:<12} {row['agreement']:>9.3f} {kappa:>7} {ci:>17} {row['yes_rate']:>9.3f}")
    print(f"thresholds: global {global_t:.3f}, per label {json.dumps({k: round(v, 3) for k, v in per_label.items()})}")
    unanswered = sum(q["answer"] == "unanswered" for qs in verdicts.values() for q in qs)
    if unanswered:  # figures that rest on unanswered verdicts must not read as a clean run
        console.print(f"[yellow]{unanswered} verdict(s) unanswered: rerun to judge them again[/]")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
