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
    from bineval_dspy.analysis.judged import JudgedSet, Kind, References
    from bineval_dspy.analysis.phi import PhiReport
    from bineval_dspy.analysis.pruning import PruningReport
    from bineval_dspy.analysis.weights import WeightsReport


# -- bineval analyze -----------------------------------------------------------------------------------------------
def _scores_path(value: str) -> Path:
    """The judged rows: a file, or a meta-eval run directory (its ``scores.jsonl``)."""
    from bineval_dspy.meta.runner import SCORES_FILE

    path = Path(value)
    if path.is_dir():
        if not (path / SCORES_FILE).is_file():
            raise InputError(f"{path}: a folder without {SCORES_FILE} (a meta-eval run directory holds one)")
        return path / SCORES_FILE
    return path


def _method(args: argparse.Namespace, kind: Kind, scores: Path) -> str | None:
    """The meta-eval method to analyse: ``--method``, or the run's only one with scorecards."""
    from bineval_dspy.analysis.judged import scored_methods

    if kind == "judge":
        if args.method is not None:
            raise InputError(f"--method: {scores} is `bineval judge` output, not a meta-eval run")
        return None
    methods = scored_methods(scores)
    if args.method is None:
        if len(methods) != 1:
            raise InputError(f"--method: {scores} holds scorecards of {len(methods)} methods ({', '.join(methods) or 'none'}); choose one")
        return methods[0]
    if args.method not in methods:
        raise InputError(f"--method {args.method}: no scorecards of it in {scores} (methods with scorecards: {', '.join(methods) or 'none'})")
    return str(args.method)


def _references(values: list[str], kind: Kind, scores: Path) -> tuple[References | None, dict[str, Path]]:
    """Merged reference scores of every ``--reference``, and the checklist files a meta-eval config names.

    A ``.toml`` is a meta-eval config (its dataset's human scores); a path is JSON Lines of ``{"id", "scores"}``;
    anything else names the field of each `bineval judge` row that holds the scores.
    """
    from bineval_dspy.analysis.judged import field_references, file_references, merge_references, meta_references

    sources: list[tuple[str, References]] = []
    checklists: dict[str, Path] = {}
    for value in values:
        path = Path(value)
        if path.suffix == ".toml":
            meta = meta_references(path, scores if kind == "meta" else None)
            sources.append((value, meta.scores))
            checklists.update(meta.checklists)
        elif path.suffix in (".jsonl", ".json") or path.exists() or "/" in value:
            sources.append((value, file_references(path)))
        elif kind == "judge":
            sources.append((value, field_references(scores, value)))
        else:
            raise InputError(f"--reference {value}: no such file (a field name works on `bineval judge` output only)")
    return (merge_references(sources) if sources else None), checklists


def _checklist(args: argparse.Namespace, kind: Kind, scores: Path, method: str | None, named: dict[str, Path]) -> Checklist:
    """``--checklist``, else (meta-eval) the run's generated checklist or the one its config names; checked
    against the run's fingerprint."""
    from bineval_dspy.analysis.judged import check_judge_checklist, check_meta_checklist

    path: Path | None = Path(args.checklist) if args.checklist else None
    if path is None and method is not None:
        generated = scores.parent / f"checklist-{method}.json"
        path = generated if generated.is_file() else named.get(method)
    if path is None:
        wanted = "the checklist the rows were judged with" if kind == "judge" else f"the checklist of method {method!r}, or the run's config as --reference CONFIG.toml"
        raise InputError(f"--checklist: needed ({wanted})")
    checklist = load_model(path, Checklist)
    if method is None:
        check_judge_checklist(scores, checklist, path)
    else:
        check_meta_checklist(scores, method, path)
    return checklist


def load_judged(args: argparse.Namespace) -> tuple[JudgedSet, References | None]:
    """The judged set and the references of a parsed ``bineval analyze`` command line, every input checked."""
    from bineval_dspy.analysis.judged import detect_kind, load_judge_output, load_meta_scores

    scores = _scores_path(args.scorecards)
    kind = detect_kind(scores)
    method = _method(args, kind, scores)
    if kind == "meta" and args.group is not None:
        raise InputError("--group: a meta-eval run's outputs are grouped by their doc_id")
    references, named = _references(args.reference or [], kind, scores)
    checklist = _checklist(args, kind, scores, method, named)
    if method is None:
        return load_judge_output(scores, checklist, args.group or "input"), references
    return load_meta_scores(scores, method, checklist), references


ANALYSIS_OUTPUTS = ("phi.json", "phi.csv", "pruning.json", "checklist-pruned.json", "weights.json", "checklist-weighted.json")


def _output_dir(value: str, overwrite: bool = False) -> Path:
    """The folder to write into; one already holding an analysis is refused without ``--overwrite``."""
    folder = Path(value)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: not a folder (-o names the folder the analysis is written into)")
    earlier = [name for name in ANALYSIS_OUTPUTS if (folder / name).exists()]
    if earlier and not overwrite:
        raise InputError(f"{folder}: holds an earlier analysis ({earlier[0]}); use --overwrite to replace it, or a new folder")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def cmd_analyze(args: argparse.Namespace) -> int:
    """Phi per dimension (JSON, CSV, heatmaps), the pruned checklist, and with references the weighted one."""
    from bineval_dspy.analysis.heatmap import write_heatmaps
    from bineval_dspy.analysis.phi import phi_csv, phi_report
    from bineval_dspy.analysis.pruning import prune
    from bineval_dspy.analysis.weights import fit_weights

    if not 0.0 <= args.phi_threshold <= 1.0:
        raise InputError(f"--phi-threshold: must be in [0, 1], got {args.phi_threshold}")
    if args.alpha < 0:
        raise InputError(f"--alpha: must be non-negative, got {args.alpha}")
    judged, references = load_judged(args)
    out = _output_dir(args.output, args.overwrite)
    report = phi_report(judged, args.values)
    pruned, pruning = prune(judged.checklist, report, args.phi_threshold, args.min_pairs)
    written = [out / "phi.json", out / "phi.csv"]
    write_json(written[0], report.model_dump(mode="json"))
    written[1].write_text(phi_csv(report), encoding="utf-8")
    written += write_heatmaps(report, out)
    written += [out / "pruning.json", out / "checklist-pruned.json"]
    write_json(written[-2], pruning.model_dump(mode="json"))
    write_json(written[-1], pruned.model_dump(mode="json"))
    print_phi(report, pruning)
    if references is not None:
        weighted, weights = fit_weights(judged, references, values=args.values, alpha=args.alpha, folds=args.folds, seed=args.seed, resamples=args.resamples)
        written += [out / "weights.json", out / "checklist-weighted.json"]
        write_json(written[-2], weights.model_dump(mode="json"))
        write_json(written[-1], weighted.model_dump(mode="json"))
        print_weights(weights)
    else:
        console.print("no --reference: weights not fitted")
    shown.print(f"wrote {', '.join(p.name for p in written)} in {out}")
    return ExitCode.OK


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def print_phi(report: PhiReport, pruning: PruningReport | None) -> None:
    """Per dimension: questions, constant ones, mean |phi|, the most redundant pair and what pruning dropped."""
    from bineval_dspy.analysis.phi import LABELS

    table = Table(title=f"{LABELS[report.statistic]} between the questions of each dimension, over {report.outputs} outputs of {report.source}")
    for column in ("dimension", "questions", "constant", "mean |r|", "most redundant pair", "dropped"):
        table.add_column(column, justify="left" if column in ("dimension", "most redundant pair") else "right")
    for dim in report.dimensions:
        label = {q.id: f"Q{k + 1}" for k, q in enumerate(dim.questions)}
        top = dim.strongest()
        pair = "-" if top is None else f"{label[top.a]}~{label[top.b]} {_number(top.phi)} (n={top.pairs})"
        dropped = [label[c.id] for c in pruning.dropped if c.dimension == dim.dimension] if pruning else []
        constant = sum(q.constant for q in dim.questions)
        table.add_row(dim.dimension, str(len(dim.questions)), str(constant), _number(dim.mean_abs_phi), pair, " ".join(dropped) or "-")
    shown.print(table)
    if pruning is not None:
        print_pruning(pruning)


def print_pruning(pruning: PruningReport) -> None:
    """The pruning rule and what it saved, in one line."""
    shown.print(
        f"pruning at |{pruning.statistic}| > {pruning.threshold:g} (at least {pruning.min_pairs} outputs per pair): "
        f"{pruning.questions_before} -> {pruning.questions_after} questions, LM calls per output "
        f"{pruning.lm_calls_per_output_before} -> {pruning.lm_calls_per_output_after} ({pruning.lm_calls_saved_per_output} saved)"
    )


def print_weights(report: WeightsReport) -> None:
    """Held-out correlation of the weighted and unweighted scores with the reference, then the weights."""
    table = Table(title=f"held-out correlation with the reference ({report.folds}-fold by document)")
    for column in ("dimension", "n", "score", "Spearman\nsummary", "Spearman\ndataset", "Pearson\nsummary", "Pearson\ndataset"):
        table.add_column(column, justify="left" if column in ("dimension", "score") else "right")
    for dim in report.dimensions:
        cv = dim.cross_validation
        if cv is None:
            table.add_row(dim.dimension, str(dim.outputs), "-", *["n/a"] * 4)
            continue
        for name, cell in (("unweighted", cv.unweighted), ("weighted", cv.weighted)):
            values = [cell.summary.spearman, cell.dataset.spearman, cell.summary.pearson, cell.dataset.pearson]
            first = name == "unweighted"
            table.add_row(dim.dimension if first else "", str(dim.outputs) if first else "", name, *[_number(e.value) for e in values], end_section=not first)
    shown.print(table)
    shown.print("weights: " + "; ".join(f"{d.dimension} " + " ".join(f"{q.weight:.2f}" for q in d.questions) for d in report.dimensions))
    for name, why in report.skipped.items():
        console.print(f"{name}: not fitted ({why})", style="yellow")
    if report.unused_references:
        console.print(f"reference dimensions the checklist asks nothing about: {', '.join(report.unused_references)}")


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


def add_analyze_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
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
