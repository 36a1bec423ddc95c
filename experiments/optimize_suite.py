"""Generator prompt optimization on an IFEval/IFBench suite with the embedded LM: BinEval with and without the
bloat guard, against GEPA.

All three arms start from one short generic instruction and optimize the generator's prompt on the same
seeded key split of one suite (IFEval's or IFBench's shared data), judged by code verifiers only (every
constraint is code-checkable, so the judge costs no LM call):

1. ``bineval+guard``: ``BinEvalOptimizer`` as ``bineval optimize`` builds it (``optimize_config.build``);
2. ``bineval-noguard``: the same with ``bloat_guard=False`` (the paper's loop: every edit is kept);
3. ``gepa``: ``dspy.GEPA`` on ``bineval_metric`` with the same LM reflecting, its ``max_metric_calls``
   set so it spends about as many LM calls as arm 1 did.

The start prompt and each arm's final prompt (with ``--test-every``, every candidate) are run on the test split
and graded by our verifiers: strict and loose prompt- and instruction-level accuracy, each with a 95% bootstrap
interval over test prompts, and each arm's paired difference from the start prompt on the same prompts. Test
generation is measurement and is not counted in an arm's LM calls. State lives in
``runs/optimize_suite/<config hash>/`` (DSPy disk cache, optimizer audits), so a rerun of the same configuration
is cheap and a different configuration starts clean. Results go to ``--out``; the last lines printed are a
compact summary; ``--save-instructions`` writes the guarded arm's final instructions as plain text.

Usage: python experiments/optimize_suite.py [--data FILE] [--train 8] [--val 8] [--test 16] [--iterations 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import dspy
import numpy as np

from bineval_dspy.core.console import progress_map
from bineval_dspy.lm.runtime import configure
from bineval_dspy.lm.usage import CallCounter
from bineval_dspy.optimize.audit import Audit, Demos
from bineval_dspy.optimize.config import DataConfig, ProgramConfig, RunConfig, build
from bineval_dspy.optimize.metric import bineval_metric
from bineval_dspy.optimize.optimizer import instructions_of, prompt_length, set_state
from bineval_dspy.optimize.settings import OptimizerSettings as OptimizerConfig
from bineval_dspy.suites import SuiteRow, grade

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("BINEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))
DEFAULT_DATA = SHARED_DATA / "ifbench" / "ifbench_test_shared.jsonl"
DEFAULT_OUT = REPO / "experiments" / "results" / "optimize_ifbench.json"
RUNS = REPO / "runs" / "optimize_suite"
MEASURES = ("strict_prompt", "strict_instruction", "loose_prompt", "loose_instruction")
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
    """Runs a prompt on the test split and grades the responses with our verifiers; memoized by prompt.

    Keeps per-prompt results, so accuracies get bootstrap intervals over test prompts and two prompts a paired
    difference (the same resampled prompts for both)."""

    def __init__(self, student: dspy.Module, test: list[dspy.Example], counter: CallCounter, threads: int, resamples: int, seed: int) -> None:
        self.student = student
        self.rows = [
            SuiteRow(key=ex.key, prompt=ex.prompt, instruction_id_list=ex.instruction_id_list, kwargs=ex.kwargs)
            for ex in test
        ]
        self.counter = counter
        self.threads = threads
        self.memo: dict[str, dict[str, np.ndarray]] = {}
        self.lm_calls = 0
        self.failed_generations = 0  # scored as empty responses (they follow nothing), and the run exits 1
        # one set of resampled test prompts for every interval and difference
        self.draws = np.random.default_rng(seed).integers(0, len(self.rows), size=(resamples, len(self.rows)))

    def _per_prompt(self, instructions: str, demos: Demos | None = None) -> dict[str, np.ndarray]:
        """Per test prompt and mode: all followed (0/1), instructions followed, instructions given."""
        key = json.dumps([instructions, demos or {}], sort_keys=True)
        if key not in self.memo:
            program = self.student.deepcopy()
            set_state(program, {TARGET: instructions}, demos or {}, {})  # as the optimizers set it: prompts match exactly
            before = self.counter.calls

            def one(row: SuiteRow) -> str | None:
                try:
                    return str(program(prompt=row.prompt).response)
                except Exception:  # counted; graded as an empty response, which follows nothing it should
                    return None

            generated = list(progress_map(one, self.rows, f"test ({len(self.rows)})", self.threads))
            self.failed_generations += sum(response is None for response in generated)
            responses = [response or "" for response in generated]
            self.lm_calls += self.counter.calls - before
            result: dict[str, np.ndarray] = {}
            for mode in ("strict", "loose"):
                graded = [grade(row, response, mode) for row, response in zip(self.rows, responses)]
                # an ungraded instruction (None) counts as not followed: the response earned nothing for it
                result[f"{mode}_all"] = np.array([g.follow_all_instructions is True for g in graded], dtype=float)
                result[f"{mode}_followed"] = np.array([sum(x is True for x in g.follow_instruction_list) for g in graded], dtype=float)
                result[f"{mode}_given"] = np.array([len(g.follow_instruction_list) for g in graded], dtype=float)
            self.memo[key] = result
        return self.memo[key]

    def _measures(self, per: dict[str, np.ndarray], index: np.ndarray | slice) -> dict[str, np.ndarray]:
        out = {}
        for mode in ("strict", "loose"):
            out[f"{mode}_prompt"] = per[f"{mode}_all"][index].mean(axis=-1)
            out[f"{mode}_instruction"] = per[f"{mode}_followed"][index].sum(axis=-1) / per[f"{mode}_given"][index].sum(axis=-1)
        return out

    def __call__(self, instructions: str, demos: Demos | None = None) -> dict[str, Any]:
        """Accuracies of a prompt, each with its 95% interval: {measure: value, measure + "_ci": [low, high]}."""
        per = self._per_prompt(instructions, demos)
        point, drawn = self._measures(per, slice(None)), self._measures(per, self.draws)
        result: dict[str, Any] = {}
        for name in MEASURES:
            result[name] = float(point[name])
            result[name + "_ci"] = [float(x) for x in np.percentile(drawn[name], [2.5, 97.5])]
        return result

    def difference(self, instructions: str, demos: Demos | None, baseline: str) -> dict[str, Any]:
        """A prompt minus ``baseline`` per measure, with a paired 95% interval over the same test prompts."""
        a, b = self._per_prompt(instructions, demos), self._per_prompt(baseline)
        pa, pb = self._measures(a, slice(None)), self._measures(b, slice(None))
        point = {k: pa[k] - pb[k] for k in MEASURES}
        da, db = self._measures(a, self.draws), self._measures(b, self.draws)
        result: dict[str, Any] = {}
        for name in MEASURES:
            result[name] = float(point[name])
            result[name + "_ci"] = [float(x) for x in np.percentile(da[name] - db[name], [2.5, 97.5])]
        return result


def run_config(args: argparse.Namespace, run_dir: Path, bloat_guard: bool) -> RunConfig:
    return RunConfig(
        mode="self",
        lm=args.lm,
        run_dir=run_dir,
        data=DataConfig(suite=args.data, train=args.train, val=args.val, test=args.test, seed=args.seed),
        program=ProgramConfig(instructions=args.start, max_tokens=args.max_tokens, llm_questions=(0, 0), threads=args.threads),
        optimizer=OptimizerConfig(
            max_iterations=args.iterations, bloat_guard=bloat_guard, demos=args.demos, max_chars=args.max_chars,
            min_allowance=args.min_allowance, patience=args.patience,
        ),
        source=str(args.data),
    )


def bineval_arm(name: str, config: RunConfig, grader: TestGrader, test_every: bool) -> dict[str, Any]:
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
            "kind": record.kind,
            "val": record.val.score if record.val else None,
            "test": grader(candidate[TARGET], record.candidate_demos or audit.best.demos) if candidate and test_every else None,
            "prompt_chars": record.prompt_chars,
            "lessons_discarded": len(record.lessons_discarded or []),
            "rule_lessons": record.rule_lessons,
            "accepted": record.decision.accepted if record.decision else None,
            "reason": record.decision.reason if record.decision else "in progress",
            "lm_calls": calls,
            "edits": [edit.model_dump() for edit in record.edits or []],
            "candidate": candidate[TARGET] if candidate else None,
        })
    final = instructions_of(program)[TARGET]
    demos = audit.best.demos.get(TARGET, [])
    return {
        "arm": name, "wall_s": round(seconds, 1), "lm_calls": calls, "stopped": audit.stopped,
        "kept_iteration": audit.best.iteration, "iterations": rows,
        "final": {
            "instructions": final, "demos": demos, "prompt_chars": prompt_length({TARGET: final}, audit.best.demos),
            "val": audit.best.val_score, "test": grader(final, audit.best.demos),
        },
        "lessons": program.lesson_bank.to_json(),
    }


def gepa_arm(
    config: RunConfig, grader: TestGrader, lm: dspy.LM, counter: CallCounter, max_metric_calls: int, minibatch: int,
    test_every: bool,
) -> dict[str, Any]:
    """Run GEPA with the same student, splits and judge; report its candidates and per-iteration log."""
    student, optimizer, (train, val, _) = build(config)
    feedback = optimizer.feedback
    metric = bineval_metric(feedback.judge, feedback.checklist_for)
    gepa = dspy.GEPA(
        metric, max_metric_calls=max_metric_calls, reflection_lm=lm, reflection_minibatch_size=minibatch,
        num_threads=config.program.threads, track_stats=True, seed=config.data.seed,
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
            "test": grader(text) if test_every else None, "instructions": text,
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


def with_ci(test: dict[str, Any] | None, name: str) -> str:
    if not test:
        return "—"
    low, high = test[name + "_ci"]
    return f"{test[name]:.3f} [{low:.3f}, {high:.3f}]"


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
        rows.append([row["iteration"], row.get("kind", "start"), pct(row["val"]), pct(test.get("strict_prompt")),
                     pct(test.get("strict_instruction")), chars, accepted, row["lm_calls"]])
    title = f"### {arm['arm']} (stopped: {arm['stopped']}; kept iteration {arm['kept_iteration']}; {arm['wall_s']} s)"
    return markdown(title, ["iter", "candidate", *TEST_COLUMNS, "accepted", "LM calls so far"], rows)


def summary_table(start: dict[str, Any], arms: list[dict[str, Any]]) -> str:
    """Test accuracy of the start prompt and each arm's final prompt, with intervals, and the paired differences."""
    rows = [["start", *(with_ci(start["test"], m) for m in MEASURES), start["prompt_chars"], 0, "—"]]
    for arm in arms:
        final = arm["final"]
        rows.append([arm["arm"], *(with_ci(final["test"], m) for m in MEASURES), final["prompt_chars"], arm["lm_calls"],
                     with_ci(final["vs_start"], "strict_prompt")])
    header = ["prompt", "strict prompt [95% CI]", "strict instr.", "loose prompt", "loose instr.", "chars", "LM calls",
              "strict prompt minus start [paired 95% CI]"]
    return markdown("### test split", header, rows)


def gepa_table(arm: dict[str, Any]) -> str:
    title = (
        f"### gepa (max_metric_calls {arm['max_metric_calls']}, used {arm['total_metric_calls']}; "
        f"LM calls {arm['lm_calls']}; best candidate {arm['best_idx']}; {arm['wall_s']} s)"
    )
    candidates = [
        [c["index"], c["parents"], pct(c["val"]), pct((c["test"] or {}).get("strict_prompt")), pct((c["test"] or {}).get("strict_instruction")),
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
    parser.add_argument("--demos", type=int, default=0, help="demonstrations the BinEval arms may add")
    parser.add_argument("--max-chars", type=int, default=4000, help="absolute prompt length budget (demos count)")
    parser.add_argument("--min-allowance", type=int, default=400, help="growth the relative budget always allows")
    parser.add_argument("--patience", type=int, default=2, help="rolled-back candidates in a row that stop an arm")
    parser.add_argument("--threads", type=int, default=1, help="responses generated at once (the embedded LM batches them)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples over test prompts")
    parser.add_argument("--test-every", action="store_true", help="grade every candidate on the test split, not just finals")
    parser.add_argument("--save-instructions", type=Path, help="write the guarded arm's final instructions here")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    args.data = args.data.resolve()

    measurement = ("out", "save_instructions", "resamples", "test_every", "threads")  # change no optimization result
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k not in measurement}
    run = RUNS / hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
    lm = configure(args.lm, run / "cache")
    counter = CallCounter()
    dspy.configure(callbacks=[counter])
    started = time.perf_counter()

    guard_config = run_config(args, run / "bineval-guard", bloat_guard=True)
    student, _, (train, val, test) = build(guard_config)
    grader = TestGrader(student, test, counter, args.threads, args.resamples, args.seed)
    splits = {"train": [e.key for e in train], "val": [e.key for e in val], "test": [e.key for e in test]}
    print(f"run dir {run}; split keys {splits}", flush=True)

    arms = [bineval_arm("bineval+guard", guard_config, grader, args.test_every)]
    print(bineval_table(arms[0]), flush=True)
    arms.append(bineval_arm("bineval-noguard", run_config(args, run / "bineval-noguard", bloat_guard=False), grader, args.test_every))
    print(bineval_table(arms[1]), flush=True)
    # GEPA spends one LM call per metric call (the judge is code) plus about one reflection call per
    # 2 * minibatch rollouts; this budget makes its total about arm 1's.
    m = args.gepa_minibatch
    budget = args.gepa_calls or max(len(val) + 2 * m, round(arms[0]["lm_calls"] * 2 * m / (2 * m + 1)))
    arms.append(gepa_arm(run_config(args, run / "gepa", bloat_guard=True), grader, lm, counter, budget, m, args.test_every))
    print(gepa_table(arms[2]), flush=True)
    for arm in arms:
        final = arm["final"]
        final["vs_start"] = grader.difference(final["instructions"], final.get("demos") and {TARGET: final["demos"]}, args.start)

    total = time.perf_counter() - started
    start_test = arms[0]["iterations"][0]["test"]
    start = {"instructions": args.start, "prompt_chars": len(args.start), "test": start_test}
    print(summary_table(start, arms), flush=True)
    if args.save_instructions:
        args.save_instructions.parent.mkdir(parents=True, exist_ok=True)
        args.save_instructions.write_text(arms[0]["final"]["instructions"] + "\n", encoding="utf-8")
    report = {
        "settings": settings, "run_dir": str(run), "splits": {k: len(v) for k, v in splits.items()}, "split_keys": splits,
        "start": start,
        "arms": {arm["arm"]: arm for arm in arms},
        "lm_calls": {**{arm["arm"]: arm["lm_calls"] for arm in arms}, "test_grading": grader.lm_calls},
        "failed_test_generations": grader.failed_generations,
        "wall_s": round(total, 1), "threads": args.threads,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    print(f"wrote {args.out} ({total:.0f} s)")
    def accuracy(test: dict[str, Any]) -> str:
        return f"test strict prompt {test['strict_prompt']:.3f}, instr. {test['strict_instruction']:.3f}"

    print(f"start: {accuracy(start_test)}, {len(args.start)} chars")
    for arm in arms:
        final = arm["final"]
        print(f"{arm['arm']}: {accuracy(final['test'])}, {final['prompt_chars']} chars, {arm['lm_calls']} LM calls")
    gepa = arms[2]
    print(f"LM calls: bineval+guard {arms[0]['lm_calls']} vs gepa {gepa['lm_calls']} "
          f"(max_metric_calls {gepa['max_metric_calls']})")
    if grader.failed_generations:
        sys.exit(f"{grader.failed_generations} test generation(s) failed and were graded as empty responses")


if __name__ == "__main__":
    main()
