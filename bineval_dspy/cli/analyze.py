"""``bineval analyze`` (phi, redundancy pruning and fitted weights over judged outputs) and ``bineval coverage``
(Coverage and Uniqueness of generated checklists against a gold one)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from bineval_dspy.cli.defaults import ALPHA, COVERAGE_THRESHOLD, DEFAULT_THREADS, FOLDS, MIN_PAIRS, PHI_THRESHOLD
from bineval_dspy.cli.options import add_overwrite_option, count, lm_options, refuse_replacing
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode, InputError
from bineval_dspy.core.jsonio import check_output_path, load_model, write_json
from bineval_dspy.core.schema import Checklist

if TYPE_CHECKING:  # NumPy, SciPy and DSPy load when a command runs, never for the parser
    from bineval_dspy.analysis.coverage import Matcher


# -- bineval analyze -----------------------------------------------------------------------------------------------
def cmd_analyze(args: argparse.Namespace) -> int:
    """Phi per dimension (JSON, CSV, heatmaps), the pruned checklist, and with references the weighted one."""
    from bineval_dspy.analysis.files import PHI_FILE, analysis_folder, load_judged, write_analysis
    from bineval_dspy.analysis.phi import phi_report
    from bineval_dspy.analysis.pruning import prune
    from bineval_dspy.analysis.weights import fit_weights
    from bineval_dspy.report.text import print_phi, print_weights
    from bineval_dspy.runs.header import headed

    if not 0.0 <= args.phi_threshold <= 1.0:
        raise InputError(f"--phi-threshold: must be in [0, 1], got {args.phi_threshold}")
    if args.alpha < 0:
        raise InputError(f"--alpha: must be non-negative, got {args.alpha}")
    judged, references = load_judged(
        Path(args.scorecards), method=args.method, checklist=Path(args.checklist) if args.checklist else None, group=args.group, references=args.reference or []
    )
    out = analysis_folder(Path(args.output), args.overwrite)
    with headed(out / PHI_FILE, "phi"):  # the analysis's header, beside its first file
        report = phi_report(judged, args.values)
        pruned, pruning = prune(judged.checklist, report, args.phi_threshold, args.min_pairs)
        print_phi(report, pruning)
        fitted = None
        if references is not None:
            weighted, weights = fit_weights(judged, references, values=args.values, alpha=args.alpha, folds=args.folds, seed=args.seed, resamples=args.resamples)
            fitted = (weights, weighted)
        written = write_analysis(out, report, pruning, pruned, fitted)
    if fitted is not None:
        print_weights(fitted[0])
    else:
        console.print("no --reference: weights not fitted")
    shown.print(f"wrote {', '.join(p.name for p in written)} in {out}")
    return ExitCode.OK


# -- bineval coverage ----------------------------------------------------------------------------------------------
def cmd_coverage(args: argparse.Namespace) -> int:
    """Coverage and Uniqueness of each generated checklist against the gold one; exit 1 if an LM pair went unanswered."""
    from bineval_dspy.analysis.coverage import CoverageReport, LLMMatcher, coverage, embedding_matcher
    from bineval_dspy.lm import runtime
    from bineval_dspy.lm.runtime import effective_threads

    gold = load_model(Path(args.gold), Checklist)
    generated = [(name, load_model(Path(name), Checklist)) for name in args.checklists]
    if args.output:
        check_output_path(Path(args.output), Path(args.gold), *(Path(name) for name in args.checklists))
        refuse_replacing(Path(args.output), args.overwrite)
    matcher: Matcher
    if args.match == "llm":
        if args.threshold is not None:
            raise InputError("--threshold: only for --match embedding (the LM decides each pair)")
        lm = runtime.configure(lm_options(args), args.cache_dir)
        matcher = LLMMatcher(threads=effective_threads(lm, args.threads or DEFAULT_THREADS, args.threads is not None))
        threshold = None
    else:
        threshold = COVERAGE_THRESHOLD if args.threshold is None else args.threshold
        if not -1.0 <= threshold <= 1.0:
            raise InputError(f"--threshold: a cosine lies in [-1, 1], got {threshold}")
        matcher = embedding_matcher(threshold=threshold)
    results = [coverage(checklist, gold, matcher, name=name) for name, checklist in generated]
    how = "an LM judging each pair" if threshold is None else f"embedding cosine >= {threshold:g}"
    table = Table(title=f"against {args.gold} ({len(gold.questions)} questions), matched by {how}")
    for column in ("checklist", "questions", "coverage", "uniqueness", "unanswered pairs"):
        table.add_column(column, justify="left" if column == "checklist" else "right")
    for result in results:
        table.add_row(result.name, str(result.questions), f"{result.coverage:.2f}", f"{result.uniqueness:.2f}", str(result.unanswered))
    shown.print(table)
    report = CoverageReport(gold=args.gold, mode=args.match, threshold=threshold, checklists=results)
    if args.output:
        write_json(Path(args.output), report.model_dump(mode="json"))
        shown.print(f"wrote {args.output}")
    console.print(f"cost: {report.usage.summary()}")
    unanswered = sum(r.unanswered for r in results)
    if unanswered:
        console.print(f"{unanswered} pair(s) without a usable LM answer, counted as no match: rerun to retry them", style="yellow")
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def add_analyze_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``bineval analyze`` and ``bineval coverage``."""
    analyze = sub.add_parser("analyze", help="phi between questions, redundancy pruning and fitted weights over judged outputs")
    analyze.add_argument("scorecards", metavar="SCORECARDS", help="`bineval judge` output (JSONL), or a meta-eval run directory or its scores.jsonl")
    analyze.add_argument(
        "--reference",
        nargs="+",
        action="extend",
        metavar="FIELD_OR_FILE",
        help="reference scores per output and dimension: a field of the judged rows, JSON Lines of {id, scores}, or a meta-eval config (.toml: its dataset's human scores)",
    )
    analyze.add_argument("--method", help="the meta-eval method to analyse (default: the run's only one with scorecards)")
    analyze.add_argument("--checklist", help="the checklist the outputs were judged with (a meta-eval run's is found from the run or its config)")
    analyze.add_argument("--group", help="`bineval judge` output: the field naming each output's source document (default: input)")
    analyze.add_argument("--values", choices=("answers", "p_yes"), default="answers", help="yes/no answers (phi), or P(yes) of a probability-mode judge (Pearson r)")
    analyze.add_argument("--phi-threshold", type=float, default=PHI_THRESHOLD, help="drop a question whose |phi| with a kept one is above this")
    analyze.add_argument("--min-pairs", type=count(2), default=MIN_PAIRS, help="outputs answering both questions before a phi may prune")
    analyze.add_argument("--folds", type=count(2), default=FOLDS, help="cross-validation folds, by source document")
    analyze.add_argument("--alpha", type=float, default=ALPHA, help="ridge penalty of the non-negative weight fit")
    analyze.add_argument("--resamples", type=count(0), default=1000, help="bootstrap resamples over documents for the intervals")
    analyze.add_argument("--seed", type=int, default=0, help="seed of the folds and the bootstrap")
    analyze.add_argument("-o", "--output", default="analysis", help="the folder to write into (created)")
    add_overwrite_option(analyze, "an earlier analysis in the folder")
    analyze.set_defaults(func=cmd_analyze)

    cover = sub.add_parser("coverage", parents=[common], help="Coverage and Uniqueness of generated checklists against a gold one")
    cover.add_argument("--checklists", nargs="+", required=True, metavar="GEN.json", help="the generated checklists")
    cover.add_argument("--gold", required=True, metavar="GOLD.json", help="the reference (expert) checklist")
    cover.add_argument("--match", choices=("embedding", "llm"), default="embedding", help="by MiniLM embedding cosine, or by asking the LM per pair")
    cover.add_argument("--threshold", type=float, help=f"embedding: the cosine at which two questions match (default {COVERAGE_THRESHOLD})")
    cover.add_argument("-o", "--output", help="write the results (with every match) as JSON (default: the table only)")
    add_overwrite_option(cover)
    cover.set_defaults(func=cmd_coverage)
