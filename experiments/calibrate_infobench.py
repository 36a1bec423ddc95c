"""Cross-model calibration on InFoBench: align the embedded judge with recorded GPT-4 verdicts.

The target is ``BinaryJudge(probability=True, explanations="none")`` on the embedded LM (answers only, P(yes)
read); the reference is the GPT-4 verdict InFoBench records for each decomposed question of GPT-4's own output
(silver labels, 87.6% yes). ``BinEvalOptimizer`` with ``CrossModelFeedback()`` proposes, in turn, an edit of the
judge's instructions from train disagreements, a demonstration (a train question with the reference's answer)
and per-dimension P(yes) thresholds fitted on train, accepting each only when agreement on the val instructions
rises. Agreement, Cohen's kappa (with a 95% bootstrap interval over instructions) and per-dimension yes-rates
are reported on held-out test instructions before and after.

Selection (all seeded): only instructions whose GPT-4 output has at most ``--max-output-chars`` characters;
train instructions are drawn among those with at least one "no" verdict (else the optimizer would see almost
no strict-reference disagreements); val and test are drawn from the rest, so they keep the natural yes-rate.
The judge examples are written as JSON Lines ordered so that ``optimize_config.split`` with the same seed and
sizes returns exactly these splits (checked here), so ``bineval optimize experiments/calibrate_infobench.toml``
runs the same optimization.

Usage: python experiments/calibrate_infobench.py [--data DIR] [--train 30] [--val 30] [--test 80] [--seed 0]
       [--iterations 6] [--demos 2] [--max-output-chars 1500] [--run-dir DIR] [--out PATH]
Reruns resume: the LM cache and the optimizer's audit live in the run directory (under runs/ by default).
Prints markdown tables and writes ``experiments/results/calibrate_infobench.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

import dspy

from bineval_dspy.core.console import progress_map
from bineval_dspy.core.schema import Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.lm.runtime import configure
from bineval_dspy.meta.agreement import agreement, cohen_kappa, kappa_interval
from bineval_dspy.optimize.audit import Audit
from bineval_dspy.optimize.config import DataConfig, load_judge_examples, split
from bineval_dspy.optimize.feedback import CrossModelFeedback
from bineval_dspy.optimize.optimizer import BinEvalOptimizer, instructions_of

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))
DEFAULT_OUT = REPO / "experiments" / "results" / "calibrate_infobench.json"
EXAMPLES_FILE = "infobench_judge_examples.jsonl"
LM_SPEC = "smollm2"


# -- data -----------------------------------------------------------------------------------------------------------
def judge_records(data_dir: Path) -> list[dict]:
    """One judge example per decomposed question of every instruction, in dataset order."""
    folder = data_dir / "infobench"
    tasks = [json.loads(line) for line in (folder / "infobench.jsonl").read_text().splitlines() if line.strip()]
    answers = {}
    for line in (folder / "infobench_gpt4_outputs_gpt4_judgments.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            answers[row["id"]] = row
    records = []
    for task in tasks:
        answer = answers[task["id"]]
        questions, labels, verdicts = task["decomposed_questions"], task["question_label"], answer["eval"]
        if not (len(questions) == len(labels) == len(verdicts)):
            raise ValueError(f"{task['id']}: {len(questions)} questions, {len(labels)} labels, {len(verdicts)} verdicts")
        context = task["input"].strip()
        task_input = f"{task['instruction'].strip()}\n\n{context}" if context else task["instruction"].strip()
        for k, (question, label, verdict) in enumerate(zip(questions, labels, verdicts)):
            records.append(
                {
                    "input": task_input,
                    "output": answer["output"],
                    "question": question,
                    "dimension": label[0],
                    "question_id": f"{task['id']}#{k}",
                    "example_id": task["id"],
                    "reference": "yes" if verdict is True else "no",
                }
            )
    return records


def choose_instructions(records: list[dict], args: argparse.Namespace) -> dict[str, list[str]]:
    """Seeded train/val/test instruction ids among short outputs; train only among instructions with a "no"."""
    eligible = sorted({r["example_id"] for r in records if len(r["output"]) <= args.max_output_chars})
    with_no = sorted({r["example_id"] for r in records if r["reference"] == "no"} & set(eligible))
    if len(with_no) < args.train or len(eligible) < args.train + args.val + args.test:
        sys.exit(f"not enough instructions: {len(eligible)} eligible ({len(with_no)} with a 'no') for "
                 f"train {args.train} + val {args.val} + test {args.test}")
    rng = random.Random(args.seed)
    train = rng.sample(with_no, args.train)
    rest = rng.sample(sorted(set(eligible) - set(train)), args.val + args.test)
    return {"train": train, "val": rest[: args.val], "test": rest[args.val :]}


def file_order(groups: list[str], seed: int) -> list[str]:
    """The order to write ``groups`` in so that ``split`` (which shuffles with ``Random(seed)``) restores it.

    ``random.shuffle`` permutes by position only, so shuffling indices gives the permutation it will apply.
    """
    perm = list(range(len(groups)))
    random.Random(seed).shuffle(perm)
    ordered: list[str] = [""] * len(groups)
    for position, source in enumerate(perm):
        ordered[source] = groups[position]
    return ordered


def write_examples(records: list[dict], chosen: dict[str, list[str]], path: Path, seed: int) -> None:
    by_id: dict[str, list[dict]] = {}
    for record in records:
        by_id.setdefault(record["example_id"], []).append(record)
    groups = file_order(chosen["train"] + chosen["val"] + chosen["test"], seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for g in groups for r in by_id[g]), encoding="utf-8")


# -- metrics --------------------------------------------------------------------------------------------------------
def judge_all(program: BinaryJudge, examples: list[dspy.Example], label: str) -> list[dict]:
    """The target's verdict on every example, next to the reference."""

    def one(example: dspy.Example) -> dict:
        question = Question(id=example.question_id, text=example.question, dimension=example.dimension)
        verdict = program.judge_question(example.input, example.output, question)
        return {"question_id": example.question_id, "dimension": example.dimension, "target": verdict.answer, "reference": example.reference}

    return list(progress_map(one, examples, label))


def _kappa_ci(answered: list[dict]) -> list[float]:
    """Kappa's 95% bootstrap interval over instructions (all questions of a drawn instruction together)."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for row in answered:
        groups.setdefault(row["question_id"].split("#")[0], []).append((row["target"], row["reference"]))
    return kappa_interval(groups)[1]


def report(rows: list[dict]) -> dict:
    """Agreement (unanswered = disagreement), kappa on answered pairs, per-dimension yes-rates and gaps."""
    answered = [r for r in rows if r["target"] != "unanswered"]
    dimensions = {}
    for dim in sorted({r["dimension"] for r in rows}):
        mine = [r for r in rows if r["dimension"] == dim]
        judged = [r for r in mine if r["target"] != "unanswered"]
        ref_rate = sum(r["reference"] == "yes" for r in mine) / len(mine)
        target_rate = sum(r["target"] == "yes" for r in judged) / len(judged) if judged else None
        dimensions[dim] = {
            "n": len(mine),
            "unanswered": len(mine) - len(judged),
            "target_yes_rate": target_rate,
            "reference_yes_rate": ref_rate,
            "gap": abs(target_rate - ref_rate) if target_rate is not None else None,
            "agreement": agreement([r["target"] for r in mine], [r["reference"] for r in mine]),
        }
    return {
        "n": len(rows),
        "agreement": agreement([r["target"] for r in rows], [r["reference"] for r in rows]),
        "kappa": cohen_kappa([r["target"] for r in answered], [r["reference"] for r in answered]),
        "kappa_ci": _kappa_ci(answered),
        "unanswered": len(rows) - len(answered),
        "target_yes_rate": sum(r["target"] == "yes" for r in answered) / len(answered) if answered else None,
        "reference_yes_rate": sum(r["reference"] == "yes" for r in rows) / len(rows),
        "confusion": {f"{t}/{r}": n for (t, r), n in sorted(Counter((x["target"], x["reference"]) for x in rows).items())},
        "dimensions": dimensions,
    }


def trajectory(audit: Audit) -> list[dict]:
    """Held-out (val) agreement and prompt length per iteration, accepted or not."""
    start = audit.start
    rows = [{"iteration": 0, "candidate": "start", "train": None, "val": start.val.score, "prompt_chars": start.prompt_chars,
             "failures": None, "lessons": None, "lm_calls": start.lm_calls, "decision": "start"}]
    for it in audit.iterations:
        decision = it.decision
        candidate = {"instructions": "instruction edit", "demo": "demonstration", "thresholds": f"thresholds {it.candidate_thresholds}"}[it.kind]
        rows.append({
            "iteration": it.iteration,
            "candidate": candidate,
            "train": it.train.score if it.train else None,
            "val": it.val.score if it.val else None,
            "prompt_chars": it.prompt_chars,
            "failures": len(it.failures or []),
            "lessons": f"{len(it.lessons_new or [])} new -> {len(it.lessons_after_dedup or [])} distinct, {len(it.selected or [])} tried",
            "lm_calls": it.lm_calls,
            "decision": "in progress" if decision is None else ("accepted: " if decision.accepted else "rejected: ") + decision.reason,
        })
    return rows


# -- printing -------------------------------------------------------------------------------------------------------
def _fmt(value) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def markdown(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _interval(bounds: list[float]) -> str:
    return "[{:.3f}, {:.3f}]".format(*bounds) if bounds else "undefined in every draw"


def print_results(result: dict) -> None:
    before, after = result["test"]["before"], result["test"]["after"]
    print(f"\n## Held-out test: {before['n']} questions from {len(result['splits']['test'])} instructions\n")
    overall = [
        ["agreement (unanswered = disagree)", before["agreement"], after["agreement"]],
        ["Cohen's kappa (answered only)", before["kappa"], after["kappa"]],
        ["kappa 95% CI (bootstrap over instructions)", _interval(before["kappa_ci"]), _interval(after["kappa_ci"])],
        ["unanswered (excluded from kappa)", before["unanswered"], after["unanswered"]],
        ["target yes-rate", before["target_yes_rate"], after["target_yes_rate"]],
        ["reference yes-rate", before["reference_yes_rate"], after["reference_yes_rate"]],
        ["confusion target/reference", ", ".join(f"{k}={v}" for k, v in before["confusion"].items()),
         ", ".join(f"{k}={v}" for k, v in after["confusion"].items())],
    ]
    print(markdown(["metric", "before", "after"], overall))
    print("\n### Per dimension (yes-rates S_d; gap = |S_d(target) - S_d(reference)|)\n")
    rows = []
    for dim, b in before["dimensions"].items():
        a = after["dimensions"][dim]
        rows.append([dim, b["n"], b["reference_yes_rate"], b["target_yes_rate"], a["target_yes_rate"], b["gap"], a["gap"],
                     b["agreement"], a["agreement"]])
    print(markdown(["dimension", "n", "S_d ref", "S_d target before", "S_d target after", "gap before", "gap after",
                    "agree before", "agree after"], rows))
    print(f"\n## Optimizer trajectory (held-out val: {result['sizes']['val_questions']} questions); stopped: {result['optimizer']['stopped']}\n")
    print(markdown(["iter", "candidate", "train agree", "val agree", "prompt chars", "failures", "lessons", "LM calls", "decision"],
                   [list(r.values()) for r in result["optimizer"]["trajectory"]]))
    print(f"\nfinal instructions ({len(result['optimizer']['final_instructions'])} chars):\n\n> "
          + result["optimizer"]["final_instructions"].replace("\n", "\n> "))
    print(f"\nwall time: {result['wall_seconds']:.0f} s " + ", ".join(f"{k} {v:.0f} s" for k, v in result["phase_seconds"].items()))


def _shown(path: Path) -> str:
    """Paths inside the repository (or its shared/ sibling) relative to the repository, so results stay portable."""
    path = path.resolve()
    return os.path.relpath(path, REPO) if path.is_relative_to(REPO.parent) else str(path)


# -- main -----------------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="shared data folder (holds infobench/)")
    parser.add_argument("--train", type=int, default=30, help="train instructions (each has at least one 'no')")
    parser.add_argument("--val", type=int, default=30, help="val instructions (the optimizer's held-out set)")
    parser.add_argument("--test", type=int, default=80, help="test instructions (reported before/after)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=6, help="optimizer max_iterations")
    parser.add_argument("--demos", type=int, default=2, help="demonstrations the optimizer may add")
    parser.add_argument("--max-output-chars", type=int, default=1500, help="skip instructions with longer GPT-4 outputs")
    parser.add_argument("--run-dir", type=Path, default=None, help="examples, LM cache and audit (default: runs/calibrate_infobench/<settings>)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    name = f"seed{args.seed}_tr{args.train}_va{args.val}_te{args.test}_it{args.iterations}_demos{args.demos}_out{args.max_output_chars}"
    run_dir = (args.run_dir or REPO / "runs" / "calibrate_infobench" / name).resolve()
    started = time.perf_counter()
    phases: dict[str, float] = {}

    records = judge_records(args.data)
    chosen = choose_instructions(records, args)
    examples_path = run_dir / EXAMPLES_FILE
    write_examples(records, chosen, examples_path, args.seed)
    data = DataConfig(examples=examples_path, train=args.train, val=args.val, test=args.test, seed=args.seed)
    train, val, test = split(load_judge_examples(examples_path), data, str(examples_path), group=lambda ex: ex.example_id)
    for part, examples in zip(("train", "val", "test"), (train, val, test)):
        if {ex.example_id for ex in examples} != set(chosen[part]):
            raise AssertionError(f"split() did not reproduce the {part} instructions")

    configure(LM_SPEC, run_dir / "cache")
    student = BinaryJudge(probability=True, explanations="none")  # answers only; P(yes) read for the thresholds
    clock = time.perf_counter()
    before = judge_all(student, test, "test, before")
    phases["test before"] = time.perf_counter() - clock

    clock = time.perf_counter()
    optimizer = BinEvalOptimizer(
        CrossModelFeedback(), max_iterations=args.iterations, patience=args.iterations, demos=args.demos, thresholds=True,
        run_dir=run_dir / "optimizer", seed=args.seed,
    )
    program = optimizer.compile(student, trainset=train, valset=val)
    phases["optimize"] = time.perf_counter() - clock

    clock = time.perf_counter()
    after = judge_all(program, test, "test, after")
    library_score = CrossModelFeedback().evaluate(program, test).score  # cached calls: the optimizer's own measure
    phases["test after"] = time.perf_counter() - clock
    after_report = report(after)
    if abs(library_score - after_report["agreement"]) > 1e-9:
        raise AssertionError(f"CrossModelFeedback agreement {library_score} != recomputed {after_report['agreement']}")

    audit = program.audit
    split_refs = {p: Counter(ex.reference for ex in xs) for p, xs in zip(("train", "val", "test"), (train, val, test))}
    result = {
        "command": " ".join(["python experiments/calibrate_infobench.py", *(argv if argv is not None else sys.argv[1:])]),
        "lm": LM_SPEC,
        "settings": vars(args) | {"data": _shown(args.data), "run_dir": _shown(run_dir), "out": _shown(args.out)},
        "selection": "GPT-4 output <= max_output_chars; train among instructions with >= 1 'no' verdict; val/test seeded "
                     "sample of the remaining eligible instructions (natural yes-rate)",
        "examples_file": _shown(examples_path),
        "splits": chosen,
        "sizes": {f"{p}_questions": len(xs) for p, xs in zip(("train", "val", "test"), (train, val, test))}
        | {f"{p}_no_references": split_refs[p]["no"] for p in split_refs},
        "test": {"before": report(before), "after": after_report, "library_agreement_after": library_score},
        "optimizer": {
            "stopped": audit.stopped,
            "best_iteration": audit.best.iteration,
            "settings": audit.settings.model_dump(),
            "trajectory": trajectory(audit),
            "start_instructions": audit.start.instructions["answer"],
            "final_instructions": instructions_of(program)["answer"],
            "final_demos": audit.best.demos.get("answer", []),
            "final_thresholds": audit.best.thresholds,
            "lessons": [lesson.model_dump(include={"text", "dimension", "support", "applied", "retired"}) for lesson in audit.bank],
            "edits": [{"iteration": it.iteration, "edits": [e.model_dump() for e in it.edits or []]} for it in audit.iterations],
        },
        "phase_seconds": phases,
        "wall_seconds": time.perf_counter() - started,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print_results(result)
    print(f"\nwrote {args.out}")
    missing = result["test"]["before"]["unanswered"] + result["test"]["after"]["unanswered"]
    if missing:
        sys.exit(f"{missing} test verdict(s) unanswered: counted as disagreements and left out of kappa")
    return result


if __name__ == "__main__":
    main()
