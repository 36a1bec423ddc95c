"""Prompt optimization on IFBench with the embedded LM: BinEval with and without the bloat guard, against GEPA.

All three arms start from one short generic instruction and optimize the generator's prompt on the same
seeded key split of the shared IFBench data, judged by code verifiers only (every IFBench constraint is
code-checkable, so the judge costs no LM call):

1. ``bineval+guard``: ``BinEvalOptimizer`` as ``bineval optimize`` builds it (``optimize_config.build``);
2. ``bineval-noguard``: the same with ``bloat_guard=False`` (the paper's loop: every edit is kept);
3. ``gepa``: ``dspy.GEPA`` on ``bineval_metric`` with the same LM reflecting, its ``max_metric_calls``
   set so it spends about as many LM calls as arm 1 did.

Every candidate prompt is also run on the test split and graded by our verifiers (strict prompt- and
instruction-level accuracy); test generation is measurement and is not counted in an arm's LM calls.
State lives in ``runs/optimize_ifbench/<config hash>/`` (DSPy disk cache, optimizer audits), so a rerun of
the same configuration is cheap and a different configuration starts clean. Results go to
``experiments/results/optimize_ifbench.json``; the last lines printed are a compact summary.

Usage: python experiments/optimize_ifbench.py [--train 8] [--val 8] [--test 16] [--iterations 3] [--data FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import dspy

from bineval_dspy.core.console import progress_map
from bineval_dspy.lm.runtime import configure
from bineval_dspy.lm.usage import CallCounter
from bineval_dspy.optimize.audit import Audit
from bineval_dspy.optimize.config import DataConfig, ProgramConfig, RunConfig, build
from bineval_dspy.optimize.metric import bineval_metric
from bineval_dspy.optimize.optimizer import instructions_of, set_instructions
from bineval_dspy.optimize.settings import OptimizerSettings as OptimizerConfig
from bineval_dspy.suites import SuiteRow, grade

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))
DEFAULT_DATA = SHARED_DATA / "ifbench" / "ifbench_test_shared.jsonl"
DEFAULT_OUT = REPO / "experiments" / "results" / "optimize_ifbench.json"
RUNS = REPO / "runs" / "optimize_ifbench"
START = "Respond to the user's request."
TARGET = "generate"  # the Generator's only predictor


class GepaLog(logging.Handler):
    """Keeps GEPA's per-iteration log lines with the LM-call count at the time, for a per-iteration trace."""

    def __init__(self, counter: CallCounter, start: int) -> None:
        super().__init__(logging.INFO)
        self.counter = counter
        self.start = start
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append({"lm_calls": self.counter.calls - self.start, "message": record.getMessage()[:600]})


class TestGrader:
    """Runs a prompt on the test split and grades the responses with our verifiers; memoized by prompt."""

    def __init__(self, student: dspy.Module, test: list[dspy.Example], counter: CallCounter) -> None:
        self.student = student
        self.rows = [
            SuiteRow(key=ex.key, prompt=ex.prompt, instruction_id_list=ex.instruction_id_list, kwargs=ex.kwargs)
            for ex in test
        ]
        self.counter = counter
        self.memo: dict[str, dict[str, Any]] = {}
        self.lm_calls = 0

    def __call__(self, instructions: str) -> dict[str, Any]:
        if instructions not in self.memo:
            program = self.student.deepcopy()
            set_instructions(program, {TARGET: instructions})  # as the optimizers set it, so prompts match exactly
            before = self.counter.calls

            def one(row: SuiteRow) -> str:
                try:
                    return str(program(prompt=row.prompt).response)
                except Exception:  # a failed generation is an empty response: it follows nothing it should
                    return ""

            responses = list(progress_map(one, self.rows, f"test ({len(self.rows)})"))
            self.lm_calls += self.counter.calls - before
            result: dict[str, Any] = {}
            for mode in ("strict", "loose"):
                graded = [grade(row, response, mode) for row, response in zip(self.rows, responses)]
                # an ungraded instruction (None) counts as not followed: the response earned nothing for it
                result[f"{mode}_prompt"] = sum(g.follow_all_instructions is True for g in graded) / len(graded)
                followed = sum(sum(x is True for x in g.follow_instruction_list) for g in graded)
                result[f"{mode}_instruction"] = followed / sum(len(g.follow_instruction_list) for g in graded)
            self.memo[instructions] = result
        return self.memo[instructions]


def run_config(args: argparse.Namespace, run_dir: Path, bloat_guard: bool) -> RunConfig:
    return RunConfig(
        mode="self",
        lm=args.lm,
        run_dir=run_dir,
        data=DataConfig(suite=args.data, train=args.train, val=args.val, test=args.test, seed=args.seed),
        program=ProgramConfig(instructions=args.start, max_tokens=args.max_tokens, llm_questions=(0, 0)),
        optimizer=OptimizerConfig(max_iterations=args.iterations, bloat_guard=bloat_guard),
        source=str(args.data),
    )


def bineval_arm(name: str, config: RunConfig, grader: TestGrader) -> dict[str, Any]:
    """Run (or resume) one BinEval optimization; a row per iteration with its candidate's test accuracy."""
    student, optimizer, (train, val, _) = build(config)
    started = time.perf_counter()
    program = optimizer.compile(student, trainset=train, valset=val)
    seconds = time.perf_counter() - started
    audit: Audit = program.audit
    calls = audit.start.lm_calls
    start = audit.start
    rows = [{
        "iteration": 0, "val": start.val.score, "test": grader(start.instructions[TARGET]),
        "prompt_chars": start.prompt_chars, "accepted": None, "reason": "start prompt", "lm_calls": calls,
    }]
    for record in audit.iterations:
        calls += record.lm_calls
        candidate = record.candidate_instructions
        rows.append({
            "iteration": record.iteration,
            "val": record.val.score if record.val else None,
            "test": grader(candidate[TARGET]) if candidate else None,
            "prompt_chars": record.prompt_chars,
            "accepted": record.decision.accepted if record.decision else None,
            "reason": record.decision.reason if record.decision else "in progress",
            "lm_calls": calls,
            "edits": [edit.model_dump() for edit in record.edits or []],
            "candidate": candidate[TARGET] if candidate else None,
        })
    final = instructions_of(program)[TARGET]
    return {
        "arm": name, "wall_s": round(seconds, 1), "lm_calls": calls, "stopped": audit.stopped,
        "kept_iteration": audit.best.iteration, "iterations": rows,
        "final": {
            "instructions": final, "prompt_chars": len(final), "val": audit.best.val_score, "test": grader(final),
        },
        "lessons": program.lesson_bank.to_json(),
    }


def gepa_arm(
    config: RunConfig, grader: TestGrader, lm: dspy.LM, counter: CallCounter, max_metric_calls: int, minibatch: int
) -> dict[str, Any]:
    """Run GEPA with the same student, splits and judge; report its candidates and per-iteration log."""
    student, optimizer, (train, val, _) = build(config)
    feedback = optimizer.feedback
    metric = bineval_metric(feedback.judge, feedback.checklist_for)
    gepa = dspy.GEPA(
        metric, max_metric_calls=max_metric_calls, reflection_lm=lm, reflection_minibatch_size=minibatch,
        num_threads=1, track_stats=True, seed=config.data.seed,
    )
    log = GepaLog(counter, counter.calls)
    gepa_logger = logging.getLogger("dspy.teleprompt.gepa")
    gepa_logger.addHandler(log)
    gepa_logger.setLevel(logging.INFO)
    started = time.perf_counter()
    try:
        program = gepa.compile(student, trainset=train, valset=val)
    finally:
        gepa_logger.removeHandler(log)
    seconds = time.perf_counter() - started
    calls = counter.calls - log.start
    results = program.detailed_results
    candidates = []
    for index, candidate in enumerate(results.candidates):
        text = instructions_of(candidate)[TARGET]
        candidates.append({
            "index": index, "parents": results.parents[index], "val": results.val_aggregate_scores[index],
            "discovered_at_metric_calls": results.discovery_eval_counts[index], "prompt_chars": len(text),
            "test": grader(text), "instructions": text,
        })
    final = instructions_of(program)[TARGET]
    return {
        "arm": "gepa", "wall_s": round(seconds, 1), "lm_calls": calls, "max_metric_calls": max_metric_calls,
        "total_metric_calls": results.total_metric_calls,
        "other_lm_calls": calls - (results.total_metric_calls or 0),
        "num_full_val_evals": results.num_full_val_evals, "best_idx": results.best_idx, "candidates": candidates,
        "iterations": gepa_iterations(log.lines), "log": log.lines,
        "final": {
            "instructions": final, "prompt_chars": len(final),
            "val": results.val_aggregate_scores[results.best_idx], "test": grader(final),
        },
    }


def gepa_iterations(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GEPA's log lines grouped by "Iteration N:"; each group keeps its last LM-call count and short events."""
    grouped: dict[int, dict[str, Any]] = {}
    for line in lines:
        message = line["message"]
        if not message.startswith("Iteration "):
            continue
        head, _, rest = message.partition(":")
        number = int(head.split()[1])
        entry = grouped.setdefault(number, {"iteration": number, "events": [], "lm_calls": 0})
        entry["lm_calls"] = line["lm_calls"]
        entry["events"].append(rest.strip()[:160])
    return list(grouped.values())


def pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def markdown(title: str, header: list[str], rows: list[list[Any]]) -> str:
    lines = [title, "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(cell).replace("|", "/") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


TEST_COLUMNS = ["val score", "test prompt (strict)", "test instr. (strict)", "prompt chars"]


def bineval_table(arm: dict[str, Any]) -> str:
    rows = []
    for row in arm["iterations"]:
        test = row["test"] or {}
        accepted = "start" if row["accepted"] is None else ("yes" if row["accepted"] else "no")
        chars = "—" if row["prompt_chars"] is None else row["prompt_chars"]
        rows.append([row["iteration"], pct(row["val"]), pct(test.get("strict_prompt")),
                     pct(test.get("strict_instruction")), chars, accepted, row["lm_calls"]])
    title = f"### {arm['arm']} (stopped: {arm['stopped']}; kept iteration {arm['kept_iteration']}; {arm['wall_s']} s)"
    return markdown(title, ["iter", *TEST_COLUMNS, "accepted", "LM calls so far"], rows)


def gepa_table(arm: dict[str, Any]) -> str:
    title = (
        f"### gepa (max_metric_calls {arm['max_metric_calls']}, used {arm['total_metric_calls']}; "
        f"LM calls {arm['lm_calls']}; best candidate {arm['best_idx']}; {arm['wall_s']} s)"
    )
    candidates = [
        [c["index"], c["parents"], pct(c["val"]), pct(c["test"]["strict_prompt"]), pct(c["test"]["strict_instruction"]),
         c["prompt_chars"], "yes" if c["index"] == arm["best_idx"] else "no", c["discovered_at_metric_calls"]]
        for c in arm["candidates"]
    ]
    header = ["candidate", "parents", *TEST_COLUMNS, "returned", "found at metric call"]
    noise = ("Individual", "New valset", "Objective", "Linear")
    iterations = [
        [it["iteration"], it["lm_calls"], "; ".join(e for e in it["events"] if not e.startswith(noise))[:300]]
        for it in arm["iterations"]
    ]
    steps = markdown("#### gepa iterations (from its log)", ["iteration", "LM calls so far", "events"], iterations)
    return markdown(title, header, candidates) + "\n\n" + steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="IFBench-style suite (JSONL)")
    parser.add_argument("--train", type=int, default=8)
    parser.add_argument("--val", type=int, default=8)
    parser.add_argument("--test", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lm", default="smollm2", help="generator, note-taker, updater and reflection LM (any --lm spec)")
    parser.add_argument("--iterations", type=int, default=3, help="max_iterations of the BinEval arms")
    parser.add_argument("--max-tokens", type=int, default=192, help="generator token limit per response")
    parser.add_argument("--start", default=START, help="the start instructions")
    parser.add_argument("--gepa-minibatch", type=int, default=3, help="GEPA reflection_minibatch_size")
    parser.add_argument("--gepa-calls", type=int, help="GEPA max_metric_calls (default: matched to arm 1's LM calls)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    args.data = args.data.resolve()

    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "out"}
    run = RUNS / hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
    lm = configure(args.lm, run / "cache")
    counter = CallCounter()
    dspy.configure(callbacks=[counter])
    started = time.perf_counter()

    guard_config = run_config(args, run / "bineval-guard", bloat_guard=True)
    student, _, (train, val, test) = build(guard_config)
    grader = TestGrader(student, test, counter)
    splits = {"train": [e.key for e in train], "val": [e.key for e in val], "test": [e.key for e in test]}
    print(f"run dir {run}; split keys {splits}", flush=True)

    arms = [bineval_arm("bineval+guard", guard_config, grader)]
    print(bineval_table(arms[0]), flush=True)
    arms.append(bineval_arm("bineval-noguard", run_config(args, run / "bineval-noguard", bloat_guard=False), grader))
    print(bineval_table(arms[1]), flush=True)
    # GEPA spends one LM call per metric call (the judge is code) plus about one reflection call per
    # 2 * minibatch rollouts; this budget makes its total about arm 1's.
    m = args.gepa_minibatch
    budget = args.gepa_calls or max(len(val) + 2 * m, round(arms[0]["lm_calls"] * 2 * m / (2 * m + 1)))
    arms.append(gepa_arm(run_config(args, run / "gepa", bloat_guard=True), grader, lm, counter, budget, m))
    print(gepa_table(arms[2]), flush=True)

    total = time.perf_counter() - started
    start_test = arms[0]["iterations"][0]["test"]
    report = {
        "settings": settings, "run_dir": str(run), "splits": splits,
        "start": {"instructions": args.start, "prompt_chars": len(args.start), "test": start_test},
        "arms": {arm["arm"]: arm for arm in arms},
        "lm_calls": {**{arm["arm"]: arm["lm_calls"] for arm in arms}, "test_grading": grader.lm_calls},
        "wall_s": round(total, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    print(f"wrote {args.out} ({total:.0f} s)")
    accuracy = "test strict prompt {strict_prompt:.3f}, instr. {strict_instruction:.3f}".format
    print(f"start: {accuracy(**start_test)}, {len(args.start)} chars")
    for arm in arms:
        final = arm["final"]
        print(f"{arm['arm']}: {accuracy(**final['test'])}, {final['prompt_chars']} chars, {arm['lm_calls']} LM calls")
    gepa = arms[2]
    print(f"LM calls: bineval+guard {arms[0]['lm_calls']} vs gepa {gepa['lm_calls']} "
          f"(max_metric_calls {gepa['max_metric_calls']})")


if __name__ == "__main__":
    main()
