"""`bineval analyze` on `bineval judge` output and on a meta-eval run, and `bineval coverage`; bad input is one line."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest

from bineval_dspy import cli
from bineval_dspy.analysis.coverage import embedding_matcher
from bineval_dspy.analysis.phi import PhiReport
from bineval_dspy.analysis.pruning import PruningReport
from bineval_dspy.analysis.weights import WeightsReport
from bineval_dspy.core.fingerprint import digest, sidecar
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.meta.config import load_config
from bineval_dspy.meta.runner import run_meta_eval
from bineval_dspy.runs.header import RunHeader
from tests.analysis.builders import make_card, make_checklist
from tests.conftest import route_cli_lm, scripted_lm
from tests.meta.fixtures import CHECKLIST, judge_script, summeval_files, write_jsonl

PNG = b"\x89PNG\r\n\x1a\n"


def _output(capsys) -> str:
    """What a command printed: notes on stderr, then its results (tables, written paths) on stdout."""
    captured = capsys.readouterr()
    return captured.err + captured.out


def judge_rows(tmp_path: Path, docs: int = 4, per_doc: int = 5) -> tuple[Path, Path, list[dict]]:
    """`bineval judge` output and its checklist: coherence-1 and -2 always agree; relevance-1 carries the reference."""
    checklist = make_checklist({"coherence": 3, "relevance": 3})
    rng = np.random.default_rng(0)
    rows = []
    for i in range(docs * per_doc):
        answers = {q.id: int(rng.random() < 0.5) for q in checklist.questions}
        answers["coherence-2"] = answers["coherence-1"]
        card = make_card(checklist, answers)
        human = {"coherence": 1.0 + 2 * answers["coherence-3"], "relevance": 1.0 + 3 * answers["relevance-1"] + rng.normal(0, 0.2)}
        result = {"line": i + 1, "complete": True, "scorecard": card.model_dump(mode="json"), "usage": {}}
        rows.append({"id": f"r{i}", "input": f"article {i // per_doc}", "output": f"summary {i}", "human": human, "bineval": result})
    path = write_jsonl(tmp_path / "judged.jsonl", rows)
    checklist_path = tmp_path / "checklist.json"
    checklist_path.write_text(checklist.model_dump_json(), encoding="utf-8")
    sidecar(path).write_text(json.dumps({"checklist": digest(checklist.model_dump_json()), "data": "x", "judge": "y"}), encoding="utf-8")
    return path, checklist_path, rows


def analyze(*args: str | Path) -> int:
    return cli.main(["analyze", *map(str, args)])


def one_error_line(capsys) -> str:
    err = _output(capsys).strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_analyze_judge_output_writes_phi_pruning_and_weights(tmp_path, capsys):
    rows, checklist, _ = judge_rows(tmp_path)
    out = tmp_path / "analysis"
    assert analyze(rows, "--checklist", checklist, "--reference", "human", "-o", out, "--folds", "2", "--resamples", "0") == 0
    names = {p.name for p in out.iterdir()}
    assert names == {
        "phi.json", "phi.csv", "phi-coherence.png", "phi-relevance.png", "pruning.json", "checklist-pruned.json", "weights.json", "checklist-weighted.json",
        "phi.json.run.json", "pruning.json.run.json", "weights.json.run.json",  # each report's header: the one place it says its kind
    }
    header = RunHeader.model_validate_json((out / "phi.json.run.json").read_text())
    assert (header.kind, header.status, header.error) == ("phi", "finished", None)
    phi = PhiReport.model_validate_json((out / "phi.json").read_text())
    assert phi.outputs == 20 and phi.dimensions[0].matrix[0][1] == pytest.approx(1.0)
    assert len((out / "phi.csv").read_text().splitlines()) == 1 + 3 + 3
    assert (out / "phi-coherence.png").read_bytes()[:8] == PNG
    pruning = PruningReport.model_validate_json((out / "pruning.json").read_text())
    assert [c.id for c in pruning.dropped] == ["coherence-2"] and pruning.lm_calls_saved_per_output == 1
    pruned = Checklist.model_validate_json((out / "checklist-pruned.json").read_text())
    assert [q.id for q in pruned.questions] == ["coherence-1", "coherence-3", "relevance-1", "relevance-2", "relevance-3"]
    weights = WeightsReport.model_validate_json((out / "weights.json").read_text())
    relevance = next(d for d in weights.dimensions if d.dimension == "relevance")
    assert relevance.documents == 4 and relevance.cross_validation is not None and relevance.cross_validation.folds == 2
    assert max(relevance.questions, key=lambda q: q.weight).id == "relevance-1"
    weighted = Checklist.model_validate_json((out / "checklist-weighted.json").read_text())
    assert all(q.weight > 0 for q in weighted.questions)
    err = _output(capsys)
    assert "12 -> 11" not in err and "6 -> 5 questions" in err and "held-out correlation" in err


def test_a_reference_file_and_a_group_field(tmp_path):
    rows, checklist, data = judge_rows(tmp_path)
    references = write_jsonl(tmp_path / "ref.jsonl", [{"id": row["id"], "scores": {"relevance": row["human"]["relevance"]}} for row in data])
    out = tmp_path / "a"
    assert analyze(rows, "--checklist", checklist, "--reference", references, "--group", "output", "-o", out, "--resamples", "0") == 0
    weights = WeightsReport.model_validate_json((out / "weights.json").read_text())
    assert [d.dimension for d in weights.dimensions] == ["relevance"] and weights.dimensions[0].documents == 20  # one document per output
    assert set(weights.skipped) == {"coherence"}


def test_without_a_reference_no_weights_are_fitted(tmp_path, capsys):
    rows, checklist, _ = judge_rows(tmp_path)
    assert analyze(rows, "--checklist", checklist, "-o", tmp_path / "b") == 0
    assert not (tmp_path / "b" / "weights.json").exists()
    assert "weights not fitted" in _output(capsys)


def test_an_earlier_analysis_is_replaced_only_with_overwrite(tmp_path, capsys):
    rows, checklist, _ = judge_rows(tmp_path)
    assert analyze(rows, "--checklist", checklist, "-o", tmp_path / "b") == 0
    before = (tmp_path / "b" / "phi.json").read_text()
    capsys.readouterr()
    assert analyze(rows, "--checklist", checklist, "-o", tmp_path / "b") == 2
    assert "holds an earlier analysis (phi.json); use --overwrite" in _output(capsys)
    assert (tmp_path / "b" / "phi.json").read_text() == before
    assert analyze(rows, "--checklist", checklist, "-o", tmp_path / "b", "--overwrite") == 0


@pytest.fixture
def meta_run(tmp_path: Path) -> Path:
    """A real meta-eval run over three SummEval-format articles, judged by the scripted judge."""
    data = tmp_path / "data"
    data.mkdir()
    summeval_files(data)
    (tmp_path / "checklist.json").write_text(json.dumps(CHECKLIST))
    config = tmp_path / "meta.toml"
    methods = "".join(
        f'[[methods]]\nname = "{name}"\nkind = "{kind}"\n{extra}\n'
        for name, kind, extra in [("bineval", "bineval", 'checklist = "checklist.json"'), ("bineval-p", "bineval", 'checklist = "checklist.json"\nprobability = true'), ("g-eval", "holistic", "")]
    )
    config.write_text(f'run_dir = "runs/meta"\n[bootstrap]\nresamples = 0\n[dataset]\nkind = "summeval"\nsummaries = "data/summaries.jsonl"\narticles = "data/articles.jsonl"\n{methods}')
    run_meta_eval(load_config(config), lm=scripted_lm(judge_script))
    return config


def test_analyze_a_meta_eval_run_with_the_human_scores_of_its_config(meta_run, tmp_path, capsys):
    out = tmp_path / "meta-analysis"
    assert analyze(tmp_path / "runs" / "meta", "--method", "bineval", "--reference", meta_run, "-o", out, "--min-pairs", "2", "--folds", "3") == 0
    phi = PhiReport.model_validate_json((out / "phi.json").read_text())
    consistency = next(d for d in phi.dimensions if d.dimension == "consistency")
    # good: yes, yes; fair: no, yes (the harbour question); bad: no, no over three documents: phi = 9 / sqrt(3*6*6*3)
    assert phi.outputs == 9 and consistency.matrix[0][1] == pytest.approx(0.5)
    weights = WeightsReport.model_validate_json((out / "weights.json").read_text())
    assert [d.dimension for d in weights.dimensions] == ["coherence", "consistency", "fluency", "relevance"]
    assert all(d.outputs == 9 and d.documents == 3 and d.cross_validation is not None for d in weights.dimensions)
    consistency_fit = weights.dimensions[1].cross_validation
    assert consistency_fit is not None  # 1, 0.5 and 0 for good, fair and bad summaries: their human order exactly
    assert consistency_fit.weighted.summary.spearman.value == pytest.approx(1.0) == consistency_fit.unweighted.summary.spearman.value
    assert "method bineval" in _output(capsys)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ((), "--method: runs/meta/scores.jsonl holds scorecards of 2 methods (bineval, bineval-p); choose one"),
        (("--method", "g-eval"), "--method g-eval: no scorecards of it in"),
        (("--method", "bineval"), "--checklist: needed (the checklist of method 'bineval', or the run's config as --reference CONFIG.toml)"),
        (("--method", "bineval", "--reference", "human"), "--reference human: no such file (a field name works on `bineval judge` output only)"),
        (("--method", "bineval", "--group", "doc"), "--group: a meta-eval run's outputs are grouped by their doc_id"),
    ],
)
def test_meta_eval_run_refusals(meta_run, tmp_path, monkeypatch, capsys, extra, message):
    monkeypatch.chdir(tmp_path)
    assert analyze("runs/meta", *extra, "-o", "x") == 2
    assert message in one_error_line(capsys)


def test_a_meta_config_whose_data_changed_since_the_run_is_refused(meta_run, tmp_path, capsys):
    summaries = tmp_path / "data" / "summaries.jsonl"
    summaries.write_text(summaries.read_text().replace('"coherence": 5.0', '"coherence": 4.0', 1))
    assert analyze(tmp_path / "runs" / "meta", "--method", "bineval", "--reference", meta_run, "-o", tmp_path / "x") == 2
    assert "its dataset is not the one" in one_error_line(capsys)


def test_a_checklist_other_than_the_recorded_one_is_refused(meta_run, tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**CHECKLIST, "task": "Something else."}))
    assert analyze(tmp_path / "runs" / "meta", "--method", "bineval", "--checklist", other, "-o", tmp_path / "x") == 2
    assert "other.json: not the checklist method 'bineval' was run with" in one_error_line(capsys)


def rewrite(path: Path, line: int, change) -> None:
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    change(rows[line - 1])
    write_jsonl(path, rows)


def bad_answer(row):
    row["bineval"]["scorecard"]["verdicts"][0]["answer"] = "maybe"


def unknown_question(row):
    row["bineval"]["scorecard"]["verdicts"][0]["question_id"] = "nope"


def missing_verdict(row):
    row["bineval"]["scorecard"]["verdicts"].pop()


def bad_reference(row):
    row["human"]["relevance"] = "high"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (bad_answer, "judged.jsonl:2: field 'bineval.scorecard.verdicts.0.answer': Input should be 'yes', 'no' or 'unanswered'"),
        (unknown_question, "judged.jsonl:2: field 'bineval.scorecard.verdicts.0.question_id': 'nope' is not a question of the checklist"),
        (missing_verdict, "judged.jsonl:2: field 'bineval.scorecard.verdicts': no verdict for question 'relevance-3' of the checklist"),
        (bad_reference, "judged.jsonl:2: field 'human.relevance': expected a number, got \"high\""),
        (lambda row: row.pop("human"), "judged.jsonl:2: missing field 'human' (named by --reference)"),
        (lambda row: row.pop("input"), "judged.jsonl:2: missing field 'input' (the --group field"),
        (lambda row: row.update(id="r0"), "judged.jsonl:2: field 'id': 'r0' repeats line 1"),
        (lambda row: row.update(bineval=[]), "judged.jsonl:2: missing field 'bineval.scorecard'"),
    ],
)
def test_bad_judged_rows_are_one_located_line(tmp_path, capsys, change, message):
    rows, checklist, _ = judge_rows(tmp_path)
    rewrite(rows, 2, change)
    assert analyze(rows, "--checklist", checklist, "--reference", "human", "-o", tmp_path / "x") == 2
    assert message in one_error_line(capsys)


def test_bad_files_and_arguments_are_one_line(tmp_path, capsys):
    rows, checklist, _ = judge_rows(tmp_path)
    cases = [
        ((rows, "-o", tmp_path / "x"), "--checklist: needed (the checklist the rows were judged with)"),
        ((rows, "--checklist", checklist, "--method", "m"), "--method: "),
        ((rows, "--checklist", checklist, "--phi-threshold", "2"), "--phi-threshold: must be in [0, 1], got 2.0"),
        ((rows, "--checklist", checklist, "-o", rows), "judged.jsonl: not a folder"),
        ((rows, "--checklist", checklist, "--reference", tmp_path / "none.jsonl"), "none.jsonl: cannot read"),
        ((tmp_path, "--checklist", checklist), "a folder without scores.jsonl"),
    ]
    for args, message in cases:
        assert analyze(*args) == 2
        assert message in one_error_line(capsys), message
    with rows.open("a") as handle:
        handle.write("{not json\n")
    assert analyze(rows, "--checklist", checklist) == 2
    assert "judged.jsonl:21: malformed JSON" in one_error_line(capsys)
    other = write_jsonl(tmp_path / "other.jsonl", [{"input": "a", "output": "b"}])
    assert analyze(other, "--checklist", checklist) == 2
    assert "other.jsonl:1: not a run the library writes" in one_error_line(capsys)
    generated = write_jsonl(tmp_path / "generated.jsonl", [{"key": "k", "prompt": "p", "response": "r"}])
    assert analyze(generated, "--checklist", checklist) == 2
    assert "generated.jsonl: a 'generate' run, neither `bineval judge` output nor a meta-eval run's scores" in one_error_line(capsys)


def test_a_checklist_that_is_not_the_judged_one_is_refused(tmp_path, capsys):
    rows, _, _ = judge_rows(tmp_path)
    changed = make_checklist({"coherence": 3, "relevance": 3})
    changed.questions[0].weight = 2.0
    path = tmp_path / "changed.json"
    path.write_text(changed.model_dump_json())
    assert analyze(rows, "--checklist", path) == 2
    assert "changed.json: not the checklist judged.jsonl was judged with" in one_error_line(capsys)


def test_duplicate_ids_in_a_reference_file_and_two_sources_for_one_score(tmp_path, capsys):
    rows, checklist, data = judge_rows(tmp_path)
    twice = write_jsonl(tmp_path / "twice.jsonl", [{"id": "r0", "scores": {}}, {"id": "r0", "scores": {}}])
    assert analyze(rows, "--checklist", checklist, "--reference", twice) == 2
    assert "twice.jsonl:2: field 'id': 'r0' repeats line 1" in one_error_line(capsys)
    again = write_jsonl(tmp_path / "again.jsonl", [{"id": "r0", "scores": {"relevance": 2}}])
    assert analyze(rows, "--checklist", checklist, "--reference", "human", again) == 2
    assert "output 'r0' already has a 'relevance' score from human" in one_error_line(capsys)


# -- bineval coverage --------------------------------------------------------------------------------------------------
def write_checklist(path: Path, *texts: str) -> Path:
    questions = [Question(text=t, dimension="d") for t in texts]
    path.write_text(Checklist(task="t", dimensions=["d"], questions=questions).model_dump_json(), encoding="utf-8")
    return path


def words_embed(texts: list[str]) -> np.ndarray:
    """Bag of words over a small vocabulary: shared words make similar questions."""
    vocabulary = ["facts", "numbers", "names", "fluent", "short", "order"]
    return np.array([[float(w in t.lower()) for w in vocabulary] for t in texts])


def test_coverage_command_by_embedding(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(importlib.import_module("bineval_dspy.analysis.coverage"), "embedding_matcher", lambda threshold: embedding_matcher(words_embed, threshold))
    gold = write_checklist(tmp_path / "gold.json", "Are the facts right?", "Are the numbers right?", "Is it fluent?")
    gen = write_checklist(tmp_path / "gen.json", "Are all facts supported?", "Is it short?")
    out = tmp_path / "coverage.json"
    assert cli.main(["coverage", "--checklists", str(gen), str(gold), "--gold", str(gold), "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["mode"] == "embedding" and report["threshold"] == 0.7
    first, itself = report["checklists"]
    assert (first["coverage"], first["uniqueness"]) == (pytest.approx(1 / 3), 0.5)
    assert (itself["coverage"], itself["uniqueness"]) == (1.0, 0.0)
    assert report["usage"]["lm_calls"] == 0 and report["usage"]["usd"] == 0  # embeddings ask no LM
    assert "coverage" in _output(capsys)


def test_coverage_command_by_llm_exits_1_on_unanswered_pairs(tmp_path, monkeypatch, capsys):
    replies = iter(['{"same": true}', '{"same": false}', "garbage", '{"same": false}'])
    lm = route_cli_lm(monkeypatch, lambda request: next(replies))
    gold = write_checklist(tmp_path / "gold.json", "Are the facts right?", "Is it fluent?")
    gen = write_checklist(tmp_path / "gen.json", "Are all facts supported?", "Is it short?")
    out = tmp_path / "c.json"
    assert cli.main(["coverage", "--checklists", str(gen), "--gold", str(gold), "--match", "llm", "-o", str(out)]) == 1
    report = json.loads(out.read_text())
    result = report["checklists"][0]
    assert (result["coverage"], result["uniqueness"], result["unanswered"]) == (0.5, 0.5, 1)
    assert report["usage"]["lm_calls"] == result["usage"]["lm_calls"] == len(lm.engine.requests) and report["usage"]["usd"] is None
    err = _output(capsys)
    assert "1 pair(s) without a usable LM answer" in err and "price unknown" in err
    assert cli.main(["coverage", "--checklists", str(gen), "--gold", str(gold), "--match", "llm", "--threshold", "0.5"]) == 2
    assert "--threshold: only for --match embedding" in one_error_line(capsys)


def test_coverage_command_bad_checklist_is_one_line(tmp_path, capsys):
    gold = tmp_path / "gold.json"
    gold.write_text('{"task": "t", "dimensions": [], "questions": []}')
    assert cli.main(["coverage", "--checklists", str(gold), "--gold", str(gold)]) == 2
    assert "gold.json: field '(root)': Value error, questions: a checklist needs at least one question" in one_error_line(capsys)
