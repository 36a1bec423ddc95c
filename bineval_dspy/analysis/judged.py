"""Judged outputs to analyse: ``bineval judge`` output or a meta-eval run's scores, with the checklist behind them
and, for weight fitting, reference scores.

Everything is checked before any number is computed, so a bad file is one located line (``file:line: field``):
every scorecard must answer exactly the checklist's questions, and where the run recorded a fingerprint, the
checklist (and, for a meta-eval run, the dataset) must be the one the run was made with.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.fingerprint import digest, file_digest
from bineval_dspy.core.jsonio import read_jsonl
from bineval_dspy.core.schema import Checklist, Question, Scorecard, Verdict
from bineval_dspy.core.scoring import verdict_value
from bineval_dspy.judges.rows import JUDGE_KEY, judged_rows
from bineval_dspy.runs.files import run_kind
from bineval_dspy.runs.header import recorded_fingerprint

Values = Literal["answers", "p_yes"]
References = dict[str, dict[str, float]]  # output id -> dimension -> reference score
Kind = Literal["judge", "meta"]


@dataclass(frozen=True)
class JudgedOutput:
    """One judged output: its id, its source document (outputs of one document stay in one fold) and its card."""

    id: str
    group: str
    card: Scorecard


@dataclass(frozen=True)
class JudgedSet:
    """Scorecards of one checklist over many outputs; ``source`` names the file in messages and reports."""

    source: str
    checklist: Checklist
    outputs: list[JudgedOutput]

    def values(self, questions: Sequence[Question], values: Values = "answers", met: bool = False) -> np.ndarray:
        """Outputs x questions: 1/0 for yes/no (``p_yes``: P(yes) where the verdict has one), NaN when unanswered.

        ``met``: how far each criterion is met, as scores count it: a negative-weight question (a criterion to
        penalize) is met when answered "no", so its value is flipped.
        """
        table = np.full((len(self.outputs), len(questions)), np.nan)
        for i, output in enumerate(self.outputs):
            by_id = {v.question_id: v for v in output.card.verdicts}
            for j, question in enumerate(questions):
                value = verdict_value(by_id[question.id], use_probability=values == "p_yes")
                if value is not None:
                    table[i, j] = 1.0 - value if met and question.weight < 0 else value
        return table


# -- the two formats ---------------------------------------------------------------------------------------------
ANALYSED: dict[str, Kind] = {"judge": "judge", "meta-eval": "meta"}  # the run kinds (``runs.files.run_kind``) analysed


def scores_path(path: Path) -> Path:
    """The judged rows: a file, or a meta-eval run directory (its ``scores.jsonl``)."""
    from bineval_dspy.meta.runner import SCORES_FILE

    if path.is_dir():
        if not (path / SCORES_FILE).is_file():
            raise InputError(f"{path}: a folder without {SCORES_FILE} (a meta-eval run directory holds one)")
        return path / SCORES_FILE
    return path


def judged_kind(path: Path) -> Kind:
    """``judge`` for `bineval judge` output, ``meta`` for a meta-eval run's scores; any other run is refused."""
    import bineval_dspy.meta.runner
    import bineval_dspy.programs.judge_file  # noqa: F401

    kind = run_kind(path)
    if kind not in ANALYSED:
        raise InputError(f"{path}: a {kind!r} run, neither `bineval judge` output nor a meta-eval run's scores")
    return ANALYSED[kind]


def _check_verdicts(checklist: Checklist, verdicts: list[Verdict], where: str, field: str) -> None:
    """Every checklist question answered once, and nothing else: the analysis joins verdicts to questions by id."""
    asked = {q.id for q in checklist.questions}
    seen: set[str] = set()
    for k, verdict in enumerate(verdicts):
        if verdict.question_id not in asked:
            raise InputError(f"{where}: field '{field}.verdicts.{k}.question_id': {verdict.question_id!r} is not a question of the checklist")
        if verdict.question_id in seen:
            raise InputError(f"{where}: field '{field}.verdicts.{k}.question_id': {verdict.question_id!r} is answered twice")
        seen.add(verdict.question_id)
    missing = [q.id for q in checklist.questions if q.id not in seen]
    if missing:
        raise InputError(f"{where}: field '{field}.verdicts': no verdict for question {missing[0]!r} of the checklist")


def _judge_row_id(row: dict[str, Any], line: int, where: str) -> str:
    """A judged row's id: its ``id`` field, else ``line``: the line of the data file it was judged from."""
    key = row.get("id", line)
    if isinstance(key, bool) or not isinstance(key, str | int):
        raise InputError(f"{where}: field 'id': expected a string or an integer")
    return str(key)


def load_judge_output(path: Path, checklist: Checklist, group: str = "input") -> JudgedSet:
    """Rows written by ``bineval judge``; an output's document is the value of its ``group`` field (the input text
    by default: the outputs of one input are one document)."""
    outputs: list[JudgedOutput] = []
    lines: dict[str, int] = {}
    for number, judged in judged_rows(path).read():
        where, row, card = f"{path}:{number}", judged.row, judged.result.scorecard
        _check_verdicts(checklist, card.verdicts, where, f"{JUDGE_KEY}.scorecard")
        if group not in row:
            raise InputError(f"{where}: missing field '{group}' (the `group` field: the source document of the output)")
        oid = _judge_row_id(row, judged.result.line, where)
        if oid in lines:
            raise InputError(f"{where}: field 'id': {oid!r} repeats line {lines[oid]}")
        lines[oid] = number
        document = row[group] if isinstance(row[group], str) else json.dumps(row[group], sort_keys=True)
        outputs.append(JudgedOutput(id=oid, group=document, card=card))
    if not outputs:
        raise InputError(f"{path}: no judged rows")
    return JudgedSet(source=str(path), checklist=checklist, outputs=outputs)


def scored_methods(path: Path) -> list[str]:
    """The methods of a meta-eval run's scores that kept scorecards (the BinEval ones), in file order."""
    from bineval_dspy.meta.runner import scores_log  # only meta-eval runs need the meta package

    return list(dict.fromkeys(record.method for _, record in scores_log(path, hint="").read() if record.scorecard is not None))


def load_meta_scores(path: Path, method: str, checklist: Checklist) -> JudgedSet:
    """One BinEval method's scorecards from a meta-eval run's ``scores.jsonl``; documents are the rows' ``doc_id``."""
    from bineval_dspy.meta.runner import scores_log  # only meta-eval runs need the meta package

    outputs: list[JudgedOutput] = []
    lines: dict[str, int] = {}
    for number, record in scores_log(path, hint="").read():
        if record.method != method:
            continue
        where = f"{path}:{number}"
        if record.scorecard is None:
            raise InputError(f"{where}: field 'scorecard': method {method!r} kept no scorecards (only bineval methods do)")
        _check_verdicts(checklist, record.scorecard.verdicts, where, "scorecard")
        if record.id in lines:
            raise InputError(f"{where}: field 'id': {record.id!r} repeats line {lines[record.id]}")
        lines[record.id] = number
        outputs.append(JudgedOutput(id=record.id, group=record.doc_id, card=record.scorecard))
    if not outputs:
        raise InputError(f"{path}: no scores of method {method!r} (methods with scorecards: {', '.join(scored_methods(path)) or 'none'})")
    return JudgedSet(source=f"{path} (method {method})", checklist=checklist, outputs=outputs)


# -- what the run recorded ----------------------------------------------------------------------------------------
def check_judge_checklist(scores: Path, checklist: Checklist, checklist_path: Path) -> None:
    """Refuse a checklist other than the one `bineval judge` recorded for ``scores`` (when it recorded one)."""
    recorded = recorded_fingerprint(scores)
    if recorded is not None and "checklist" in recorded and recorded["checklist"] != digest(checklist.model_dump_json()):
        raise InputError(f"{checklist_path}: not the checklist {scores.name} was judged with (the run's header records another)")


def check_meta_checklist(scores: Path, method: str, checklist_path: Path) -> None:
    """Refuse a checklist file other than the one the meta-eval run recorded for ``method`` (when it recorded one)."""
    recorded = recorded_fingerprint(scores)
    options = (recorded or {}).get(f"method.{method}")
    if options is None:
        return
    wanted = json.loads(options).get("checklist")
    if wanted != "generate" and wanted != file_digest(checklist_path):
        raise InputError(f"{checklist_path}: not the checklist method {method!r} was run with (the run's header records another)")


# -- reference scores ---------------------------------------------------------------------------------------------
def _scores(raw: Any, where: str, field: str) -> dict[str, float]:
    """An object of dimension -> number (null: not rated) as floats."""
    if not isinstance(raw, dict):
        raise InputError(f"{where}: field '{field}': expected an object of dimension -> number")
    out = {}
    for dim, value in raw.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise InputError(f"{where}: field '{field}.{dim}': expected a number, got {json.dumps(value)}")
        out[str(dim)] = float(value)
    return out


def field_references(path: Path, field: str) -> References:
    """Reference scores kept in a field of each `bineval judge` row (an object of dimension -> number)."""
    out: References = {}
    for number, judged in judged_rows(path).read():
        where = f"{path}:{number}"
        if field not in judged.row:
            raise InputError(f"{where}: missing field '{field}' (named by `reference`)")
        out[_judge_row_id(judged.row, judged.result.line, where)] = _scores(judged.row[field], where, field)
    return out


def file_references(path: Path) -> References:
    """Reference scores from JSON Lines of ``{"id": ..., "scores": {dimension: number}}``."""
    out: References = {}
    lines: dict[str, int] = {}
    for number, row in read_jsonl(path, required=("id", "scores")):
        where = f"{path}:{number}"
        key = row["id"]
        if isinstance(key, bool) or not isinstance(key, str | int):
            raise InputError(f"{where}: field 'id': expected a string or an integer")
        if str(key) in lines:
            raise InputError(f"{where}: field 'id': {str(key)!r} repeats line {lines[str(key)]}")
        lines[str(key)] = number
        out[str(key)] = _scores(row["scores"], where, "scores")
    return out


@dataclass(frozen=True)
class MetaReference:
    """The human scores of a meta-eval config's dataset, and the checklist file of each of its BinEval methods."""

    scores: References
    checklists: dict[str, Path]


def config_references(config_path: Path, kind: Kind, scores: Path) -> MetaReference:
    """The references a ``--reference`` config (``.toml``, a meta-eval's) gives the judged rows of ``kind``: checked
    against the run's own dataset when the rows are that run's scores."""
    return meta_references(config_path, scores if kind == "meta" else None)


def meta_references(config_path: Path, scores: Path | None = None) -> MetaReference:
    """The human scores of a meta-eval config's dataset, by output id. With ``scores`` (the run's ``scores.jsonl``),
    the dataset must be the one the run recorded in its fingerprint."""
    from bineval_dspy.meta.config import load_config
    from bineval_dspy.meta.methods import BinEvalMethod
    from bineval_dspy.meta.runner import dataset_fingerprint

    config = load_config(config_path)
    recorded = recorded_fingerprint(scores) if scores is not None else None
    if recorded is not None and recorded.get("dataset") != dataset_fingerprint(config):
        raise InputError(f"{config_path}: its dataset is not the one {scores} was scored on (the recorded data digests differ)")
    checklists = {m.name: m.checklist for m in config.methods if isinstance(m, BinEvalMethod) and isinstance(m.checklist, Path)}
    return MetaReference(scores={row.id: dict(row.scores) for row in config.dataset.load()}, checklists=checklists)


def merge_references(sources: Sequence[tuple[str, References]]) -> References:
    """The scores of several sources, one per (output, dimension): two sources scoring the same one are refused."""
    merged: References = {}
    given: dict[tuple[str, str], str] = {}
    for name, references in sources:
        for oid, scores in references.items():
            for dim, value in scores.items():
                if (oid, dim) in given:
                    raise InputError(f"`reference` {name}: output {oid!r} already has a {dim!r} score from {given[oid, dim]}")
                given[oid, dim] = name
                merged.setdefault(oid, {})[dim] = value
    return merged
