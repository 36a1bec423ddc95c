"""``load_run`` reads a file by its kind: a log's header, a results file's ``kind`` field, and for files written before
either, the kind their keys say (``runs.files.legacy_kind``, from the key sets each kind's entry registers). Every kind ``runs.kinds.RUN_KINDS`` registers has a
writer, a reader and both views, and every run file the repository keeps still loads."""

from __future__ import annotations

import fnmatch
import importlib
import json
import pkgutil
import shutil
from pathlib import Path

import pytest

import bineval_dspy
import bineval_dspy.report.text
from bineval_dspy import __version__, cli
from bineval_dspy.core.errors import InputError
from bineval_dspy.judges.rows import JUDGE_KEY
from bineval_dspy.lm.usage import Cost
from bineval_dspy.optimize.calibrate import BaselineFigures, CalibrationResults
from bineval_dspy.report import JudgedRows, MetaEvaluation, OptimizerRun, load_runs, render
from bineval_dspy.report.runs import CalibrationRun, FinetuneRun, load_run
from bineval_dspy.runs.files import legacy_kind, run_kind
from bineval_dspy.runs.header import RunHeader, header_path, write_header
from bineval_dspy.runs.kinds import RUN_KINDS
from bineval_dspy.stats.bootstrap import Interval
from tests.report import builders

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "experiments" / "results"

# One file of each format experiments/results holds: the kind it is read as, and the run show and report make of it.
KEPT = [
    ("analysis_summeval/phi.json", "phi", "phi"),
    ("analysis_summeval/pruning.json", "pruning", "pruning"),
    ("analysis_summeval/weights.json", "weights", "weights"),
    ("experiment_ifeval.json", "experiment", "experiment"),  # written before results carried their kind
    ("experiment_ifeval_enforce.json", "experiment", "experiment"),  # with its kind
    ("meta_qags_cnndm_30.json", "meta-eval", "meta-eval"),  # a meta-eval's results.json kept without its scores
    ("meta_summeval_probe_cv.json", "meta-eval", "meta-eval"),
    ("tune_qworld.json", "tune", "tune"),
    ("probe_summeval/results.json", "calibration", "calibration"),
]
ALWAYS_KINDED = {"calibration"}  # written with its kind field from the first: no older file to tell by its keys

# What experiments/results keeps beside runs, by name, and why it is no run: every other .json or .jsonl must load.
SCRIPTS = sorted(path.stem for path in (ROOT / "experiments").glob("*.py"))  # bench_judge.py writes bench_judge*.json
NOT_RUNS = {
    "checklist-*.json": "a checklist (an analysis's pruned or weighted one)",
    "program.json": "a program a run made (programs.state)",
    "splits.json": "a run's data splits",
    "probe.json": "a probe judge's head (judges.probe)",
    "*_probe_head.json": "a probe judge's head, kept apart from its run",
}


def no_run(path: Path) -> bool:
    by_script = any(path.stem == script or path.stem.startswith(script + "_") for script in SCRIPTS)
    return by_script or any(fnmatch.fnmatch(path.name, pattern) for pattern in NOT_RUNS)


def test_every_run_file_the_repository_keeps_loads():
    files = sorted(p for p in RESULTS.rglob("*") if p.suffix in (".json", ".jsonl"))
    runs = [p for p in files if not no_run(p)]
    assert len(runs) >= len(KEPT) and all(p.suffix == ".json" for p in files if no_run(p))
    for path in runs:
        assert load_run(path).kind, path


def test_every_run_kind_is_written_read_and_shown_by_the_entry_its_decorators_fill():
    for module in pkgutil.walk_packages(bineval_dspy.__path__, "bineval_dspy."):  # every writer registers on import
        if not module.name.endswith(("__main__", "pytest_plugin")):
            importlib.import_module(module.name)
    assert {"judge", "generate", "verify", "meta-eval", "finetune-samples", "experiment", "tune", "calibration"} <= set(RUN_KINDS)
    for name, kind in RUN_KINDS.items():
        assert kind.written_by and kind.read is not None and kind.title, name  # a kind without its writer or reader fails
        assert kind.show is not None and kind.page is not None and kind.macro, name
        assert kind.suffixes and set(kind.suffixes) <= {".json", ".jsonl", ".toml"}, name  # .toml: a run read from its config


@pytest.mark.parametrize(("name", "kind", "shown"), KEPT)
def test_each_format_the_repository_keeps_is_read_as_its_kind(name, kind, shown):
    path = RESULTS / name
    assert run_kind(path) == kind
    if kind not in ALWAYS_KINDED:
        assert legacy_kind(path) == kind  # the keys tell it too, with a kind field or without
    assert load_run(path).kind == shown


def copy(source: Path, folder: Path) -> Path:
    """``source`` (a file or a folder) copied into ``folder``, without any header beside it: as written before headers."""
    folder.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, folder / source.name, ignore=shutil.ignore_patterns("*.run.json"))
    else:
        shutil.copy(source, folder / source.name)
    return folder / source.name


def rows(path: Path, *objects: dict) -> Path:
    path.write_text("".join(json.dumps(obj) + "\n" for obj in objects))
    return path


def test_logs_are_read_by_their_header_and_without_one_by_their_first_row(tmp_path, every_kind):
    judged = copy(every_kind.paths[0], tmp_path / "judge")
    assert legacy_kind(judged) == run_kind(judged) == "judge" and isinstance(load_run(judged), JudgedRows)
    write_header(judged, RunHeader(kind="judge", version=__version__))
    assert run_kind(judged) == "judge" and load_run(header_path(judged)).source == judged  # a header names its log
    assert [r.id for r in load_run(judged).rows] == ["r0", "r1", "r2"]  # type: ignore[union-attr]

    scores = copy(every_kind.paths[1].parent / "runs" / "meta", tmp_path / "meta") / "scores.jsonl"
    assert run_kind(scores) == "meta-eval"
    write_header(scores, RunHeader(kind="meta-eval", version=__version__))
    meta = load_run(scores)
    assert isinstance(meta, MetaEvaluation) and meta.methods == ["bineval", "g-eval", "rouge-l"] and meta.table

    suite = {"key": 1, "prompt": "List two fruits.", "response": "- apple\n- pear"}
    graded = rows(tmp_path / "graded.jsonl", {**suite, "instruction_id_list": ["a"], "follow_instruction_list": [True], "follow_all_instructions": True})
    generated = rows(tmp_path / "generated.jsonl", suite)
    assert (run_kind(graded), run_kind(generated)) == ("verify", "generate")
    assert load_run(graded).rows[0].card.overall == 1.0 and load_run(generated).rows[0].output == suite["response"]  # type: ignore[union-attr]
    write_header(graded, RunHeader(kind="generate", version=__version__))  # the header decides, whatever the rows hold
    assert run_kind(graded) == "generate" and "generate" in load_run(graded).task  # type: ignore[union-attr, operator]


def test_an_optimizer_and_a_meta_eval_from_before_results_carried_their_kind(tmp_path, every_kind):
    optimizer = copy(every_kind.paths[2], tmp_path / "old")  # without its headers, the one place new output says its kind
    assert not {"kind"} & (json.loads((optimizer / "audit.json").read_text()).keys() | json.loads((optimizer / "results.json").read_text()).keys())
    assert (run_kind(optimizer / "audit.json"), run_kind(optimizer / "results.json")) == ("optimizer-audit", "optimizer-test")
    for path in (optimizer, optimizer / "audit.json", optimizer / "results.json"):
        (run,) = load_runs(path)
        assert isinstance(run, OptimizerRun) and run.source == optimizer and run.results is not None

    meta = copy(every_kind.paths[1].parent / "runs" / "meta", tmp_path / "old")
    assert run_kind(meta / "results.json") == "meta-eval"
    (whole,) = load_runs(meta / "results.json")
    assert isinstance(whole, MetaEvaluation) and whole.scores and whole.table  # the run beside its results
    (meta / "scores.jsonl").unlink()
    alone = load_run(meta / "results.json")
    assert isinstance(alone, MetaEvaluation) and not alone.scores and alone.table == whole.table and alone.outputs == whole.outputs


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("program.json", '{"kind": "judge", "instructions": {}}', "a 'judge' run is a .jsonl file"),
        ("results.json", '{"kind": "a-later-kind", "probe": "x"}', "its kind is 'a-later-kind'"),
        ("samples.json", '{"kind": "finetune-samples"}', "a 'finetune-samples' run is a .jsonl file"),
        ("results.json", '{"kind": "optimizer-test", "splits": {}}', "without the run's audit.json beside them"),
        ("x.jsonl", '{"input": "a", "output": "b"}\n', "x.jsonl:1: not a run the library writes"),
        ("x.jsonl", "", "x.jsonl: no rows"),
    ],
)
def test_a_file_of_no_run_kind_is_one_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load_run(path)


def test_an_older_file_is_only_ever_read_as_a_registered_kind():
    assert RUN_KINDS["judge"].legacy == (frozenset({JUDGE_KEY}),)  # the key old judge rows put their result under
    assert RUN_KINDS["judge"].legacy_first  # judge rows keep the fields of any rows they judged
    assert all(kind.read is not None for kind in RUN_KINDS.values() if kind.legacy)  # every kind told by its keys is read


def test_a_judged_generate_row_is_a_judge_row_and_a_graded_one_a_verify_row(tmp_path):
    suite = {"key": 1, "prompt": "p", "response": "r"}
    judged = rows(tmp_path / "judged.jsonl", {**suite, JUDGE_KEY: {}})
    graded = rows(tmp_path / "graded.jsonl", {**suite, "instruction_id_list": [], "follow_instruction_list": []})
    assert (legacy_kind(judged), legacy_kind(graded), legacy_kind(rows(tmp_path / "g.jsonl", suite))) == ("judge", "verify", "generate")


def test_keys_two_kinds_register_alike_are_refused_not_guessed(tmp_path):
    both = tmp_path / "both.json"
    both.write_text(json.dumps({"arms": [], "baseline": "b", "study": "s", "trials": []}))
    with pytest.raises(InputError, match="both a"):
        legacy_kind(both)


def test_fine_tuning_samples_are_shown_and_reported(tmp_path, capsys):
    path = builders.finetune_samples(tmp_path)
    assert run_kind(path) == "finetune-samples"  # its keys tell it, before headers
    write_header(path, RunHeader(kind="finetune-samples", version=__version__, usage=Cost(lm_calls=7)))
    (run,) = load_runs(path.parent)
    assert isinstance(run, FinetuneRun) and [p.key for p in run.prompts] == ["p1", "p2"] and run.spend.lm_calls == 7
    assert run.failed_questions() == [("Is it a list?", 2), ("Is it short?", 1)]
    capsys.readouterr()
    assert cli.main(["show", str(header_path(path))]) == 0  # its header, like the log, shows the run
    out = capsys.readouterr().out
    assert "== fine-tuning samples:" in out and "2 train prompt(s), 3 sample(s), 1 passing" in out and "Is it short?" in out
    html = render([run], charts_on=False)
    assert "fine-tuning samples" in html and "Is it a list?" in html


def test_a_calibration_shows_its_figures_out_of_fold_and_on_test(tmp_path, capsys):
    kept = json.loads((RESULTS / "probe_summeval" / "results.json").read_text())
    test = {"kappa": Interval(estimate=0.31, low=0.2, high=0.4), "auroc": Interval(estimate=0.7, low=0.6, high=0.8)}
    baseline = BaselineFigures(
        probe="b63fd268e3e5da85", head="layer 21", model=kept["record"]["model"], test={"kappa": Interval(estimate=0.08, low=-0.05, high=0.2)},
        difference={"kappa": Interval(estimate=0.23, low=0.05, high=0.41)}, yes_rate=0.79,
    )
    results = CalibrationResults(probe=kept["probe"], record=kept["record"], test_rows=40, test=test, baselines={"old-head": baseline})
    path = tmp_path / "results.json"
    path.write_text(results.model_dump_json())
    write_header(path, RunHeader(kind="calibration", version=__version__, status="finished"))  # its kind, said only there
    (run,) = load_runs(tmp_path)
    assert isinstance(run, CalibrationRun) and run.record.folds == 5
    assert [name for name, _, _ in run.figures][:3] == ["kappa", "balanced_accuracy", "auroc"]
    capsys.readouterr()
    assert cli.main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "== calibration:" in out and "trained on 5120 row(s) of 80 task(s)" in out and "test (40 rows)" in out and "0.310 [0.200, 0.400]" in out
    assert "baseline old-head (layer 21, yes rate 0.790): kappa 0.080 [-0.050, 0.200]" in out and "kappa +0.230 [0.050, 0.410]" in out
    html = render([run], charts_on=False)
    assert "test (40 rows) [95% CI]" in html and "0.310 [0.200, 0.400]" in html and "+0.230 [0.050, 0.410]" in html


def test_show_kinds_lists_the_registry_and_show_needs_a_run_or_it(capsys):
    assert cli.main(["show", "--kinds"]) == 0
    listed = [line.split(":")[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [name for name, kind in RUN_KINDS.items() if kind.read is not None] and "meta-eval" in listed
    assert cli.main(["show"]) == 2
    assert "name a run" in capsys.readouterr().err
