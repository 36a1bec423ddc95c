"""Every kind of run the library writes, found from a path and read into typed objects, for ``report`` and ``show``.

A path is a run directory (an optimizer's ``audit.json``, a meta-evaluation's ``scores.jsonl``, an analysis's
``phi.json``/``pruning.json``/``weights.json``, a tune study's ``results.json``), one of those files, `bineval judge`
output (JSON Lines whose rows carry ``bineval``), `bineval demo` output, or a meta-eval config (``.toml``: its run
directory, with the dataset's human scores to compare against). Anything else is one InputError line, before any
number is computed.
"""

from __future__ import annotations

import csv
import io
import json
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from bineval_dspy.analysis.judged import JUDGE_KEY, meta_references, recorded_fingerprint
from bineval_dspy.analysis.phi import PhiReport
from bineval_dspy.analysis.pruning import PruningReport
from bineval_dspy.analysis.weights import WeightsReport
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import describe_validation_error, load_model, read_json_object, read_jsonl, read_text
from bineval_dspy.core.schema import Scorecard, Verdict
from bineval_dspy.experiment.runner import ExperimentResults
from bineval_dspy.meta.correlation import LEVELS, MIN_SUMMARY_DOCUMENTS, STATISTICS, Estimate, LevelCorrelation
from bineval_dspy.meta.report import SystemRanking, system_rankings
from bineval_dspy.meta.runner import SCORES_FILE, MetaEvalResults, OutputScore
from bineval_dspy.optimize.audit import AUDIT_FILE, Audit
from bineval_dspy.optimize.results import RESULTS_FILE as OPTIMIZE_RESULTS_FILE
from bineval_dspy.optimize.results import RunResults
from bineval_dspy.tune.report import RESULTS_FILE, TuneResults

Kind = Literal["judge", "meta", "optimizer", "analysis", "tune", "experiment"]
ANALYSIS_FILES = {"phi": "phi.json", "pruning": "pruning.json", "weights": "weights.json"}
META_RESULTS = "results.csv"
META_RESULTS_JSON = "results.json"  # the same results with each system's means, for the rankings

# A cost block flattened to its numeric leaves ("lm_calls", "tokens", "usd", "by_model.gpt.usd", ...): the report
# shows whatever the block holds, so it needs no schema, and blocks of many rows add up key by key.
Spend = dict[str, float]


def spend_of(raw: Any) -> Spend:
    """The ``cost`` block of a JSON object (else its ``usage`` block) as numeric leaves; empty when it has none."""
    if not isinstance(raw, dict):
        return {}
    block = raw.get("cost") if isinstance(raw.get("cost"), dict) else raw.get("usage")
    return _leaves(block, "") if isinstance(block, dict) else {}


def _leaves(block: dict[str, Any], prefix: str) -> Spend:
    out: Spend = {}
    for key, value in block.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_leaves(value, f"{name}."))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[name] = float(value)
    return out


def total_spend(blocks: Iterable[Spend]) -> Spend:
    """Cost blocks added key by key (counts and money add up; a key some blocks lack counts 0 there)."""
    total: Spend = {}
    for block in blocks:
        for key, value in block.items():
            total[key] = total.get(key, 0.0) + value
    return total


def shown_path(path: Path) -> str:
    """A run's path as a reader knows it: relative to the working folder when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# -- the kinds ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JudgedRow:
    """One judged output: its id (the row's ``id``, else its data line), what it was judged on, and its card."""

    id: str
    input: str
    output: str
    card: Scorecard
    spend: Spend


@dataclass(frozen=True)
class JudgeRun:
    """`bineval judge` (or `bineval demo`) output: every row's scorecard with all its verdicts."""

    source: Path
    rows: list[JudgedRow]
    task: str | None = None
    kind: Kind = "judge"

    @property
    def spend(self) -> Spend:
        return total_spend(row.spend for row in self.rows)


class CorrelationRow(BaseModel):
    """One line of a meta-eval's ``results.csv``: a method's correlations with the humans on one dimension."""

    method: str
    kind: str
    dimension: str  # or "average" over the dimensions
    pairs: int | None
    documents: int | None
    skipped_documents: int | None
    missing: int | None
    levels: dict[str, LevelCorrelation]  # "summary", "system" (undefined in an older results.csv) and "dataset"
    lm_calls_per_output: float | None
    seconds_per_output: float | None

    @property
    def too_few_documents(self) -> bool:
        """Whether the summary level rests on fewer documents than an interval needs (``results.md`` marks it)."""
        if self.documents is None or self.skipped_documents is None:
            return False
        return self.documents - self.skipped_documents < MIN_SUMMARY_DOCUMENTS


@dataclass(frozen=True)
class MetaRun:
    """A meta-evaluation run directory: every method's scores, the correlation table, and (given the run's config)
    the human scores of the same outputs."""

    source: Path
    scores: list[OutputScore]
    spends: dict[str, Spend]  # per method
    kinds: dict[str, str]  # method -> kind (bineval, holistic, unieval, rouge_l)
    dimensions: list[str]
    table: list[CorrelationRow]  # empty while the run has not written results.csv
    human: dict[str, dict[str, float]] | None  # output id -> dimension -> human score, for the run's outputs
    human_range: dict[str, tuple[float, float]]  # dimension -> lowest and highest human score in the whole dataset
    dataset: str | None = None
    lm: str | None = None
    rankings: list[SystemRanking] = field(default_factory=list)  # from results.json; empty before it is written
    kind: Kind = "meta"

    @property
    def methods(self) -> list[str]:
        return list(self.kinds)

    @property
    def spend(self) -> Spend:
        return total_spend(self.spends.values())


@dataclass(frozen=True)
class OptimizerRun:
    """An optimizer run directory's audit: every iteration, lesson and edit, and the start and best prompts."""

    source: Path
    audit: Audit
    spend: Spend = field(default_factory=dict)
    results: RunResults | None = None  # the test split's results, once the run scored it
    kind: Kind = "optimizer"


@dataclass(frozen=True)
class AnalysisRun:
    """`bineval analyze` output: phi per dimension, the pruning, the fitted weights (those that exist)."""

    source: Path
    phi: PhiReport | None
    pruning: PruningReport | None
    weights: WeightsReport | None
    spend: Spend = field(default_factory=dict)
    kind: Kind = "analysis"


@dataclass(frozen=True)
class TuneRun:
    """A tune study's ``results.json``: every trial and the best one or the Pareto front."""

    source: Path
    results: TuneResults
    spend: Spend = field(default_factory=dict)
    kind: Kind = "tune"


@dataclass(frozen=True)
class ExperimentRun:
    """A ``bineval experiment`` run's ``results.json``: every arm on the test split against the baseline."""

    source: Path
    results: ExperimentResults
    spend: Spend = field(default_factory=dict)
    kind: Kind = "experiment"


Run = JudgeRun | MetaRun | OptimizerRun | AnalysisRun | TuneRun | ExperimentRun


# -- finding and reading -----------------------------------------------------------------------------------------
def load_runs(path: Path) -> list[Run]:
    """The runs at ``path`` (a folder may hold several kinds, e.g. an analysis written into a run directory)."""
    if path.is_dir():
        return _folder_runs(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.suffix == ".toml":
        return [_meta_from_config(path)]
    if path.suffix == ".jsonl":
        return [_jsonl_run(path)]
    if path.suffix == ".json":
        return [_json_run(path, read_json_object(path))]
    raise InputError(f"{path}: {NOT_A_RUN}; files are read by their suffix: .json, .jsonl or a meta-eval config .toml")


def _folder_runs(folder: Path) -> list[Run]:
    runs: list[Run] = []
    if (folder / AUDIT_FILE).is_file():
        runs.append(_optimizer(folder / AUDIT_FILE))
    if (folder / SCORES_FILE).is_file():
        runs.append(load_meta(folder))
    if any((folder / name).is_file() for name in ANALYSIS_FILES.values()):
        runs.append(_analysis(folder, {kind: folder / name for kind, name in ANALYSIS_FILES.items() if (folder / name).is_file()}))
    own = (folder / SCORES_FILE).is_file() or (folder / AUDIT_FILE).is_file()  # a meta-eval and an optimizer write one too
    if (folder / RESULTS_FILE).is_file() and not own:
        runs.append(_json_run(folder / RESULTS_FILE, read_json_object(folder / RESULTS_FILE)))
    if not runs:
        raise InputError(f"{folder}: not a run directory (no {AUDIT_FILE}, {SCORES_FILE}, {ANALYSIS_FILES['phi']} or {RESULTS_FILE})")
    return runs


def _validated(model: type[Any], raw: Any, where: str) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise InputError(f"{where}: {describe_validation_error(exc)}") from None


NOT_A_RUN = "not a run the library writes (an optimizer's audit.json, a meta-eval's scores.jsonl, analyze's phi.json, pruning.json or weights.json, tune's or experiment's results.json, judge, demo, verify or generate output)"


def _json_run(path: Path, raw: dict[str, Any]) -> Run:
    """A JSON file, by the fields that tell the kinds apart."""
    if {"mode", "start", "best"} <= raw.keys():
        return _optimizer(path, raw)
    if {"study", "trials"} <= raw.keys():
        return _tune(path, raw)
    if {"arms", "baseline"} <= raw.keys():
        results = _validated(ExperimentResults, raw, str(path))
        return ExperimentRun(source=path.parent, results=results, spend=spend_of({"usage": results.usage.model_dump(mode="json")}))
    for kind, keys in (("phi", {"statistic", "dimensions"}), ("pruning", {"dropped", "questions_before"}), ("weights", {"alpha", "folds"})):
        if keys <= raw.keys():
            return _analysis(path.parent, {kind: path})
    if {"results", "article"} <= raw.keys():
        return _demo(path, raw)
    if {"dataset", "methods", "run_dir"} <= raw.keys() and (path.parent / SCORES_FILE).is_file():
        return load_meta(path.parent)  # a meta-eval's results.json: the run beside it
    raise InputError(f"{path}: {NOT_A_RUN}")


def _jsonl_run(path: Path) -> Run:
    """`bineval judge` output, or a meta-eval run's scores file (then the run is its folder)."""
    for number, row in read_jsonl(path):
        if JUDGE_KEY in row:
            return _judge(path)
        if "method" in row and "scores" in row:
            return load_meta(path.parent, scores_file=path)
        if "follow_instruction_list" in row and "instruction_id_list" in row:
            return _suite_output(path, _verified_card, "`bineval verify` output: each instruction a code-checked verdict")
        if "key" in row and "response" in row:
            return _suite_output(path, _generated_card, "`bineval generate` output: each STICK check a verdict (none without STICK)")
        raise InputError(f"{path}:{number}: {NOT_A_RUN}")
    raise InputError(f"{path}: no rows")


SUITE_DIMENSION = "instructions"  # the one dimension a suite output's verdicts are shown in


def _suite_card(verdicts: list[Verdict]) -> Scorecard:
    """A card for a suite row's verdicts: the followed fraction, no score while any is unanswered (ungraded)."""
    answered = [v for v in verdicts if v.answer != "unanswered"]
    unanswered = len(verdicts) - len(answered)
    score = None if unanswered or not verdicts else sum(v.answer == "yes" for v in verdicts) / len(verdicts)
    dims = {SUITE_DIMENSION: score} if verdicts else {}
    return Scorecard(dimension_scores=dims, overall=score, unanswered=unanswered, verdicts=verdicts,
                     unanswered_by_dimension={SUITE_DIMENSION: unanswered} if unanswered else {})


def _verified_card(row: dict[str, Any], where: str) -> Scorecard:
    """`verify`'s row: one verdict per instruction, unanswered where its kwargs left it ungraded."""
    ids, follows = row.get("instruction_id_list"), row.get("follow_instruction_list")
    if not isinstance(ids, list) or not isinstance(follows, list) or len(ids) != len(follows):
        raise InputError(f"{where}: fields 'instruction_id_list' and 'follow_instruction_list' must be lists of one length")
    answers = {True: "yes", False: "no", None: "unanswered"}
    if any(f not in answers for f in follows):
        raise InputError(f"{where}: field 'follow_instruction_list': expected true, false or null")
    return _suite_card([
        Verdict(question_id=f"i{k}", question=str(i), dimension=SUITE_DIMENSION, answer=answers[f], judge=f"code:{i}")  # type: ignore[arg-type]
        for k, (i, f) in enumerate(zip(ids, follows))
    ])


def _generated_card(row: dict[str, Any], where: str) -> Scorecard:
    """`generate`'s row: its STICK checks as verdicts (a plain generation has none)."""
    checks = row.get("checks", [])
    if not isinstance(checks, list) or not all(isinstance(c, dict) for c in checks):
        raise InputError(f"{where}: field 'checks': expected a list of objects")
    verdicts = []
    for k, check in enumerate(checks):
        verdicts.append(_validated(Verdict, {
            "question_id": f"q{k}", "question": check.get("question"), "dimension": SUITE_DIMENSION, "answer": check.get("answer"),
            "explanation": check.get("explanation") or "", "judge": check.get("judge") or "",
        }, f"{where}: in 'checks.{k}'"))
    return _suite_card(verdicts)


def _suite_output(path: Path, card_of: Any, task: str) -> JudgeRun:
    """`verify` or `generate` output shown as judged rows: the prompt as input, the response as output."""
    rows = []
    for number, row in read_jsonl(path, required=("key", "response")):
        where = f"{path}:{number}"
        rows.append(JudgedRow(id=str(row["key"]), input=_text(row.get("prompt")), output=_text(row["response"]), card=card_of(row, where), spend=spend_of(row)))
    return JudgeRun(source=path, rows=rows, task=task)


def _judge(path: Path) -> JudgeRun:
    rows = []
    for number, row in read_jsonl(path, required=(JUDGE_KEY,)):
        where = f"{path}:{number}"
        ours = row[JUDGE_KEY]
        if not isinstance(ours, dict) or "scorecard" not in ours:
            raise InputError(f"{where}: missing field '{JUDGE_KEY}.scorecard': not a `bineval judge` row")
        card = _validated(Scorecard, ours["scorecard"], f"{where}: in '{JUDGE_KEY}.scorecard'")
        key = row.get("id", ours.get("line", number))
        rows.append(JudgedRow(id=str(key), input=_text(row.get("input")), output=_text(row.get("output")), card=card, spend=spend_of(ours)))
    return JudgeRun(source=path, rows=rows)


def _demo(path: Path, raw: dict[str, Any]) -> JudgeRun:
    """`bineval demo` output: the bundled article and each summary's scorecard."""
    if not isinstance(raw["results"], list):
        raise InputError(f"{path}: field 'results': expected a list")
    rows = []
    for k, result in enumerate(raw["results"]):
        if not isinstance(result, dict) or "scorecard" not in result:
            raise InputError(f"{path}: field 'results.{k}.scorecard' is missing")
        card = _validated(Scorecard, result["scorecard"], f"{path}: in 'results.{k}.scorecard'")
        rows.append(JudgedRow(id=_text(result.get("label", k)), input=_text(raw["article"]), output=_text(result.get("summary")), card=card, spend=spend_of(result)))
    return JudgeRun(source=path, rows=rows, task=_text(raw.get("task")) or None)


def _text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _optimizer(path: Path, raw: dict[str, Any] | None = None) -> OptimizerRun:
    raw = read_json_object(path) if raw is None else raw
    results_path = path.parent / OPTIMIZE_RESULTS_FILE
    results = load_model(results_path, RunResults) if results_path.is_file() else None
    return OptimizerRun(source=path.parent, audit=_validated(Audit, raw, str(path)), spend=spend_of(raw), results=results)


def _analysis(folder: Path, files: dict[str, Path]) -> AnalysisRun:
    raws = {kind: read_json_object(path) for kind, path in files.items()}
    models = {"phi": PhiReport, "pruning": PruningReport, "weights": WeightsReport}
    loaded = {kind: _validated(models[kind], raw, str(files[kind])) for kind, raw in raws.items()}
    return AnalysisRun(
        source=folder,
        phi=loaded.get("phi"),
        pruning=loaded.get("pruning"),
        weights=loaded.get("weights"),
        spend=total_spend(spend_of(raw) for raw in raws.values()),
    )


def _tune(path: Path, raw: dict[str, Any]) -> TuneRun:
    return TuneRun(source=path.parent, results=_validated(TuneResults, raw, str(path)), spend=spend_of(raw))


# -- meta-evaluation runs ----------------------------------------------------------------------------------------
def load_meta(folder: Path, scores_file: Path | None = None, config: Path | None = None) -> MetaRun:
    """A meta-eval run directory; with ``config`` (the run's TOML), the human scores of its outputs too."""
    path = scores_file or folder / SCORES_FILE
    scores: list[OutputScore] = []
    spends: dict[str, Spend] = {}
    for number, row in read_jsonl(path, required=("method",)):
        record: OutputScore = _validated(OutputScore, row, f"{path}:{number}")
        scores.append(record)
        spends[record.method] = total_spend([spends.get(record.method, {}), spend_of(row)])
    if not scores:
        raise InputError(f"{path}: no scores")
    recorded = recorded_fingerprint(path) or {}
    table = _correlations(folder / META_RESULTS) if (folder / META_RESULTS).is_file() else []
    kinds = _method_kinds(recorded, table, scores)
    dimensions = _recorded_list(recorded, "dimensions") or list(dict.fromkeys(d for s in scores for d in s.scores))
    human, span = None, {}
    if config is not None:
        reference = meta_references(config, path)  # refuses a config whose dataset is not the run's
        span = _ranges(reference.scores.values())
        ids = {s.id for s in scores}
        human = {oid: values for oid, values in reference.scores.items() if oid in ids}
    dataset = _recorded_object(recorded, "dataset").get("kind")
    full = folder / META_RESULTS_JSON
    rankings = system_rankings(load_model(full, MetaEvalResults)) if full.is_file() else []
    return MetaRun(
        source=folder,
        scores=scores,
        spends=spends,
        kinds=kinds,
        dimensions=dimensions,
        table=table,
        human=human,
        human_range=span,
        dataset=str(dataset) if dataset is not None else None,
        lm=recorded.get("lm"),
        rankings=rankings,
    )


def _meta_from_config(path: Path) -> MetaRun:
    """A meta-eval config: its run directory, read with the human scores of its dataset."""
    from bineval_dspy.meta.config import load_config

    try:
        raw = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: malformed TOML ({exc})") from None
    if not {"dataset", "methods"} <= raw.keys():
        raise InputError(f"{path}: not a meta-eval config (a .toml is read only as one: its run directory with the human scores)")
    run_dir = load_config(path).run_dir
    if not (run_dir / SCORES_FILE).is_file():
        raise InputError(f"{path}: its run directory {run_dir} holds no {SCORES_FILE} yet (run `bineval meta-eval {path}` first)")
    return load_meta(run_dir, config=path)


def _method_kinds(recorded: dict[str, str], table: list[CorrelationRow], scores: list[OutputScore]) -> dict[str, str]:
    """Each method's kind, in the run's order: from its fingerprint, else results.csv, else what its scores hold."""
    kinds: dict[str, str] = {}
    for key in recorded:
        if key.startswith("method."):
            kinds[key.removeprefix("method.")] = str(_recorded_object(recorded, key).get("kind", "?"))
    for row in table:
        kinds.setdefault(row.method, row.kind)
    for s in scores:
        kinds.setdefault(s.method, "bineval" if s.scorecard is not None else "holistic" if s.ratings is not None else "?")
    present = {s.method for s in scores}
    return {name: kind for name, kind in kinds.items() if name in present}


def _recorded_object(recorded: dict[str, str], key: str) -> dict[str, Any]:
    try:
        value = json.loads(recorded.get(key, "{}"))
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _recorded_list(recorded: dict[str, str], key: str) -> list[str]:
    try:
        value = json.loads(recorded.get(key, "[]"))
    except json.JSONDecodeError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _ranges(rows: Iterable[dict[str, float]]) -> dict[str, tuple[float, float]]:
    span: dict[str, tuple[float, float]] = {}
    for scores in rows:
        for dim, value in scores.items():
            low, high = span.get(dim, (value, value))
            span[dim] = (min(low, value), max(high, value))
    return span


def _correlations(path: Path) -> list[CorrelationRow]:
    """``results.csv`` as written by ``meta.report.csv_text``; a file of another shape is one located line."""
    reader = csv.DictReader(io.StringIO(read_text(path)))
    required = [level for level in LEVELS if level != "system"]  # a results.csv from before the system level lacks it
    wanted = ["method", "kind", "dimension", *(f"{level}_{stat}" for level in required for stat in STATISTICS)]
    missing = [name for name in wanted if name not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"{path}:1: missing column '{missing[0]}' (not a meta-eval results.csv)")
    rows = []
    for number, line in enumerate(reader, start=2):
        try:
            levels = {
                level: LevelCorrelation(**{stat: Estimate(value=_float(line, f"{level}_{stat}"), low=_float(line, f"{level}_{stat}_low"), high=_float(line, f"{level}_{stat}_high")) for stat in STATISTICS})
                for level in LEVELS
            }
            rows.append(
                CorrelationRow(
                    method=line["method"],
                    kind=line["kind"],
                    dimension=line["dimension"],
                    pairs=_int(line, "pairs"),
                    documents=_int(line, "documents"),
                    skipped_documents=_int(line, "skipped_documents"),
                    missing=_int(line, "missing"),
                    levels=levels,
                    lm_calls_per_output=_float(line, "lm_calls_per_output"),
                    seconds_per_output=_float(line, "seconds_per_output"),
                )
            )
        except ValueError as exc:
            raise InputError(f"{path}:{number}: {exc}") from None
    return rows


def _float(line: dict[str, str], column: str) -> float | None:
    text = (line.get(column) or "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"column '{column}': expected a number, got {text!r}") from None


def _int(line: dict[str, str], column: str) -> int | None:
    value = _float(line, column)
    return None if value is None else int(value)
