"""Finding and reading every kind of run for ``report`` and ``show``; a path that is no run is one error line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import InputError
from bineval_dspy.lm.usage import Cost
from bineval_dspy.report import AnalysisRun, JudgedRows, MetaEvaluation, OptimizerRun, TuneRun, load_runs, render
from bineval_dspy.report.meta_runs import spreads
from bineval_dspy.report.runs import load_run
from bineval_dspy.report.spend import spend_entries, spend_of
from bineval_dspy.report.stats import HUMAN, trajectory
from bineval_dspy.runs.files import run_kind
from tests.conftest import route_cli_lm, verdict_json
from tests.report import builders


def test_each_kind_is_found_from_its_folder_or_its_file(tmp_path, monkeypatch):
    judged = builders.judge_run(tmp_path, monkeypatch)
    (run,) = load_runs(judged)
    assert isinstance(run, JudgedRows) and [r.id for r in run.rows] == ["r0", "r1", "r2"]
    assert run.rows[0].card.verdicts[0].question == "Is it short?" and run.spend.lm_calls == 9

    config = builders.meta_run(tmp_path, monkeypatch)
    folder = config.parent / "runs" / "meta"
    for path in (folder, folder / "scores.jsonl"):
        (meta,) = load_runs(path)
        assert isinstance(meta, MetaEvaluation) and meta.human is None and meta.methods == ["bineval", "g-eval", "rouge-l"]
        assert meta.kinds == {"bineval": "bineval", "g-eval": "holistic", "rouge-l": "rouge_l"}
        assert {r.dimension for r in meta.table} == {"coherence", "consistency", "fluency", "relevance", "average"}
    (meta,) = load_runs(config)  # with the config: the human scores of the same outputs
    assert isinstance(meta, MetaEvaluation) and meta.human is not None and len(meta.human) == 9
    assert meta.human_range["coherence"] == (1.0, 5.0)
    human = spreads(meta, "coherence")[0]
    assert human.source == HUMAN and sorted(human.values) == [1.0] * 3 + [3.0] * 3 + [5.0] * 3 and human.top == pytest.approx(1 / 3)

    optimized = builders.optimizer_run(tmp_path, monkeypatch)
    for path in (optimized, optimized / "audit.json"):
        (opt,) = load_runs(path)
        assert isinstance(opt, OptimizerRun) and opt.source == optimized
    steps = trajectory(opt.audit)
    assert [s.outcome for s in steps][:2] == ["start", "accepted"] and steps[1].best == steps[1].val

    analysis = builders.analysis_run(tmp_path)
    (found,) = load_runs(analysis)
    assert isinstance(found, AnalysisRun) and found.phi and found.pruning and found.weights
    (only,) = load_runs(analysis / "pruning.json")
    assert isinstance(only, AnalysisRun) and only.phi is None and only.pruning is not None

    (tune,) = load_runs(builders.tune_run(tmp_path))
    assert isinstance(tune, TuneRun) and [t.number for t in tune.results.best] == [0, 1, 3]


def test_demo_output_and_a_single_objective_study(tmp_path, monkeypatch):
    route_cli_lm(monkeypatch, lambda request: verdict_json("yes"))
    demo = tmp_path / "demo.json"
    assert cli.main(["demo", "-o", str(demo)]) == 0
    (run,) = load_runs(demo)
    assert isinstance(run, JudgedRows) and [r.id for r in run.rows] == ["good", "mediocre", "bad"] and run.task
    header = demo.with_name("demo.json.run.json")
    assert json.loads(header.read_text())["kind"] == "demo" and run.kind == "demo"  # its header says its kind
    assert "kind" not in json.loads(demo.read_text())  # the header is the one place it says so
    header.unlink()  # as written before headers: its keys tell it
    assert run_kind(demo) == "demo" and [r.id for r in load_run(demo).rows] == ["good", "mediocre", "bad"]  # type: ignore[union-attr]
    (tune,) = load_runs(builders.tune_run(tmp_path, single=True))
    assert isinstance(tune, TuneRun)
    html = render([run, tune])
    assert "best so far" in html and [row["id"] for row in builders.inlined_rows(html)["run-1"]] == ["good", "mediocre", "bad"]


def test_a_usage_block_is_read_as_a_typed_cost_and_a_malformed_one_is_located():
    cost = spend_of({"usage": {"lm_calls": 3, "tokens": 10, "usd": None}}, "out.jsonl:4")
    assert (cost.lm_calls, cost.tokens, cost.usd, cost.unpriced_calls) == (3, 10, None, 3)  # no price: unknown, not $0
    assert spend_of({"scores": {}}, "x") == Cost() and spend_of([1], "x") == Cost()
    with pytest.raises(InputError, match=r"out.jsonl:4: in 'usage': .*lm_calls"):
        spend_of({"usage": {"lm_calls": "many"}}, "out.jsonl:4")
    entries = spend_entries(cost)
    assert entries["lm_calls"] == 3 and "usd" not in entries and "cached_prompt_tokens" not in entries  # unknowns left out
    assert spend_entries(Cost()) == {}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "name, text, message",
    [
        (None, None, "no such file or folder"),
        ("empty", None, "not a run directory (no audit.json, scores.jsonl, phi.json, results.json or samples.jsonl)"),
        ("x.json", '{"a": 1}', "not a run the library writes"),
        ("x.json", "[1, 2]", "expected a JSON object, got list"),
        ("x.json", "{", "x.json:1: malformed JSON"),
        ("x.jsonl", '{"a": 1}\n', "x.jsonl:1: not a run the library writes"),
        ("x.jsonl", '{"bineval": {"line": 1, "complete": true, "scorecard": {"overall": "high"}}}\n', "x.jsonl:1: field 'bineval.scorecard."),
        ("x.jsonl", '{"bineval": {"scorecard": {}}}\n', "x.jsonl:1: field 'bineval.line': Field required"),
        ("x.jsonl", '{"bineval": 3}\n', "missing field 'bineval.scorecard'"),
        ("x.jsonl", '{"key": 1, "prompt": "p", "response": 3}\n', "x.jsonl:1: field 'response': Input should be a valid string"),
        (
            "x.jsonl", '{"key": 1, "prompt": "p", "response": "r", "instruction_id_list": ["a", "b"], "follow_instruction_list": [true], "follow_all_instructions": false}\n',
            "x.jsonl:1: fields 'instruction_id_list' and 'follow_instruction_list' must be lists of one length",
        ),
        ("x.jsonl", '{"key": 1, "prompt": "p", "response": "r", "instruction_id_list": ["a"], "follow_instruction_list": ["maybe"], "follow_all_instructions": null}\n', "x.jsonl:1: field 'follow_instruction_list.0'"),
        ("x.jsonl", '{"key": "k", "prompt": "p", "samples": [{"rollout": null, "score": 1}]}\n', "x.jsonl:1: field 'samples.0.response': Field required"),
        ("results.json", '{"kind": "calibration", "probe": "x", "record": {"rows": 1}}', "results.json: in 'record': required fields missing: 'model'"),
        ("run.toml", 'mode = "self"\n', "not a meta-eval config"),
        ("audit.json", '{"mode": "self", "start": {}, "best": {}}', "audit.json: field"),
        ("x.txt", "hello", "not a run the library writes"),
    ],
)
def test_a_path_that_is_no_run_is_one_line_and_nothing_is_written(tmp_path, capsys, name, text, message):
    path = tmp_path / "missing" if name is None else tmp_path / name
    if name == "empty":
        path.mkdir()
    elif text is not None:
        write(path, text)
    out = tmp_path / "report.html"
    for command in (["report", str(path), "-o", str(out)], ["show", str(path)]):
        assert cli.main(command) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, err
    assert not out.exists()


def test_results_of_another_shape_are_located(tmp_path, monkeypatch, capsys):
    config = builders.meta_run(tmp_path, monkeypatch)
    folder = config.parent / "runs" / "meta"
    results = json.loads((folder / "results.json").read_text())
    del results["methods"][0]["correlations"]
    write(folder / "results.json", json.dumps(results))
    capsys.readouterr()
    assert cli.main(["report", str(folder), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.endswith("results.json: field 'methods.0.correlations': Field required")
    lines = (folder / "scores.jsonl").read_text().splitlines()
    write(folder / "scores.jsonl", lines[0] + "\n" + json.dumps({"method": "m", "scores": {}}) + "\n")
    (folder / "results.json").unlink()
    assert cli.main(["show", str(config)]) == 2
    assert "scores.jsonl:2: required fields missing: 'id'," in capsys.readouterr().err


def test_a_config_whose_dataset_is_not_the_runs_is_refused(tmp_path, monkeypatch, capsys):
    config = builders.meta_run(tmp_path, monkeypatch)
    summaries = config.parent / "data" / "summaries.jsonl"
    summaries.write_text(summaries.read_text().replace('"coherence": 5.0', '"coherence": 4.0'))
    assert cli.main(["report", str(config), "-o", str(tmp_path / "r.html")]) == 2
    assert "its dataset is not the one" in capsys.readouterr().err
