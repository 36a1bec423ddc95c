"""What an analysis reads and writes: its judged rows, method, checklist and references resolved from what the
user named, and the files of an analysis folder (which ``report`` reads back by the same names)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import load_model, write_json
from bineval_dspy.core.schema import Checklist

if TYPE_CHECKING:  # NumPy and SciPy load when an analysis runs, never for the CLI's parser
    from bineval_dspy.analysis.judged import JudgedSet, Kind, References
    from bineval_dspy.analysis.phi import PhiReport
    from bineval_dspy.analysis.pruning import PruningReport
    from bineval_dspy.analysis.weights import WeightsReport

PHI_FILE = "phi.json"
PHI_CSV_FILE = "phi.csv"
PRUNING_FILE = "pruning.json"
PRUNED_CHECKLIST_FILE = "checklist-pruned.json"
WEIGHTS_FILE = "weights.json"
WEIGHTED_CHECKLIST_FILE = "checklist-weighted.json"
REPORT_FILES = {"phi": PHI_FILE, "pruning": PRUNING_FILE, "weights": WEIGHTS_FILE}  # the typed reports, by kind
ANALYSIS_OUTPUTS = (PHI_FILE, PHI_CSV_FILE, PRUNING_FILE, PRUNED_CHECKLIST_FILE, WEIGHTS_FILE, WEIGHTED_CHECKLIST_FILE)


def analysed_method(kind: Kind, scores: Path, method: str | None) -> str | None:
    """The meta-eval method to analyse: ``method``, or the run's only one with scorecards; None for judge output."""
    from bineval_dspy.analysis.judged import scored_methods

    if kind == "judge":
        if method is not None:
            raise InputError(f"`method`: {scores} is `bineval judge` output, not a meta-eval run")
        return None
    methods = scored_methods(scores)
    if method is None:
        if len(methods) != 1:
            raise InputError(f"`method`: {scores} holds scorecards of {len(methods)} methods ({', '.join(methods) or 'none'}); choose one")
        return methods[0]
    if method not in methods:
        raise InputError(f"`method` {method}: no scorecards of it in {scores} (methods with scorecards: {', '.join(methods) or 'none'})")
    return method


def reference_scores(values: list[str], kind: Kind, scores: Path) -> tuple[References | None, dict[str, Path]]:
    """Merged reference scores of every ``--reference``, and the checklist files a meta-eval config names.

    A ``.toml`` is a meta-eval config (its dataset's human scores); a path is JSON Lines of ``{"id", "scores"}``;
    anything else names the field of each `bineval judge` row that holds the scores.
    """
    from bineval_dspy.analysis.judged import config_references, field_references, file_references, merge_references

    sources: list[tuple[str, References]] = []
    checklists: dict[str, Path] = {}
    for value in values:
        path = Path(value)
        if path.suffix == ".toml":
            config = config_references(path, kind, scores)
            sources.append((value, config.scores))
            checklists.update(config.checklists)
        elif path.suffix in (".jsonl", ".json") or path.exists() or "/" in value:
            sources.append((value, file_references(path)))
        elif kind == "judge":
            sources.append((value, field_references(scores, value)))
        else:
            raise InputError(f"`reference` {value}: no such file (a field name works on `bineval judge` output only)")
    return (merge_references(sources) if sources else None), checklists


def judged_checklist(given: Path | None, kind: Kind, scores: Path, method: str | None, named: dict[str, Path]) -> Checklist:
    """``given``, else (meta-eval) the run's generated checklist or the one its config names; checked against the
    run's fingerprint."""
    from bineval_dspy.analysis.judged import check_judge_checklist, check_meta_checklist

    path = given
    if path is None and method is not None:
        generated = scores.parent / f"checklist-{method}.json"
        path = generated if generated.is_file() else named.get(method)
    if path is None:
        wanted = "the checklist the rows were judged with" if kind == "judge" else f"the checklist of method {method!r}, or the run's config as `reference` CONFIG.toml"
        raise InputError(f"`checklist`: needed ({wanted})")
    checklist = load_model(path, Checklist)
    if method is None:
        check_judge_checklist(scores, checklist, path)
    else:
        check_meta_checklist(scores, method, path)
    return checklist


def load_judged(
    scorecards: Path, *, method: str | None = None, checklist: Path | None = None, group: str | None = None, references: Sequence[str] = ()
) -> tuple[JudgedSet, References | None]:
    """The judged set and the references of an analysis, every input checked before any number is computed.

    ``scorecards``: `bineval judge` output, or a meta-eval run directory or its scores file; ``group``: the judge
    output's field naming each output's source document (default ``input``; a meta-eval run groups by doc_id).
    """
    from bineval_dspy.analysis.judged import judged_kind, load_judge_output, load_meta_scores, scores_path

    scores = scores_path(scorecards)
    kind = judged_kind(scores)
    chosen = analysed_method(kind, scores, method)
    if chosen is not None and group is not None:  # a run of several methods: a meta-eval's
        raise InputError("`group`: a meta-eval run's outputs are grouped by their doc_id")
    merged, named = reference_scores(list(references), kind, scores)
    judged_with = judged_checklist(checklist, kind, scores, chosen, named)
    if chosen is None:
        return load_judge_output(scores, judged_with, group or "input"), merged
    return load_meta_scores(scores, chosen, judged_with), merged


def analysis_folder(folder: Path, overwrite: bool = False) -> Path:
    """The folder an analysis is written into (created); one already holding an analysis is refused without
    ``overwrite``."""
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: not a folder (-o names the folder the analysis is written into)")
    earlier = [name for name in ANALYSIS_OUTPUTS if (folder / name).exists()]
    if earlier and not overwrite:
        raise InputError(f"{folder}: holds an earlier analysis ({earlier[0]}); use `overwrite` to replace it, or a new folder")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_analysis(
    folder: Path, phi: PhiReport, pruning: PruningReport, pruned: Checklist, fitted: tuple[WeightsReport, Checklist] | None = None
) -> list[Path]:
    """Writes an analysis under its file names: phi (JSON, CSV, heatmaps), the pruning and the pruned checklist,
    and the fitted weights with the weighted checklist when there are any; the paths written, in that order."""
    from bineval_dspy.analysis.heatmap import write_heatmaps
    from bineval_dspy.analysis.phi import phi_csv
    from bineval_dspy.runs.header import headed

    write_json(folder / PHI_FILE, phi.model_dump(mode="json"))
    (folder / PHI_CSV_FILE).write_text(phi_csv(phi), encoding="utf-8")
    written = [folder / PHI_FILE, folder / PHI_CSV_FILE, *write_heatmaps(phi, folder)]
    with headed(folder / PRUNING_FILE, "pruning"):  # each report's header says its kind (phi's is the command's)
        write_json(folder / PRUNING_FILE, pruning.model_dump(mode="json"))
    write_json(folder / PRUNED_CHECKLIST_FILE, pruned.model_dump(mode="json"))
    written += [folder / PRUNING_FILE, folder / PRUNED_CHECKLIST_FILE]
    if fitted is not None:
        weights, weighted = fitted
        with headed(folder / WEIGHTS_FILE, "weights"):
            write_json(folder / WEIGHTS_FILE, weights.model_dump(mode="json"))
        write_json(folder / WEIGHTED_CHECKLIST_FILE, weighted.model_dump(mode="json"))
        written += [folder / WEIGHTS_FILE, folder / WEIGHTED_CHECKLIST_FILE]
    return written
