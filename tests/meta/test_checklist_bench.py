"""The checklist bench (experiments/meta/checklist_bench_*.toml): every writer x scoring mode x code routing, each
config as shipped run at a tiny size on the fixtures with a scripted LM; writer options checked before any LM call."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from dspy.lm15 import Request

from bineval_dspy import cli
from tests.conftest import prompt_fields, route_cli_lm, verdict_json
from tests.meta.fixtures import QUALITY, field_of, infobench_files, summeval_files, topical_chat_file

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments" / "meta"
BENCHES = ["checklist_bench_summeval.toml", "checklist_bench_topical_chat.toml", "checklist_bench_infobench.toml"]


def answer(output: str, question: str) -> str:
    """Yes for a good output, yes on 'named' questions for a fair one (or any output without a quality word)."""
    quality = next((q for q in QUALITY if q in output.lower()), "fair")
    return "yes" if quality == "good" or (quality == "fair" and "named" in question) else "no"


def bench_script(request: Request) -> str:
    """A sensible LM for every writer (BinEval's steps, TICK, the templates) and both scoring modes."""
    text, system, fields = request.messages[-1].text, request.system or "", prompt_fields(request)
    if "question" in fields:
        return verdict_json(answer(field_of(request, "output"), field_of(request, "question")))
    if "questions" in fields and "output" in fields:
        asked = re.findall(r"^(q\d+): (.+)$", field_of(request, "questions"), re.M)
        return json.dumps({"verdicts": {key: {"answer": answer(field_of(request, "output"), q)} for key, q in asked}})
    questions = ["Does the output say what was named in the task?", "Is the output free of any invented claim?"]
    if "request" in fields:
        if "Give the numbers" in text:
            return json.dumps({"questions": {"items": [1, 2]}})
        if "importance weight" in text:
            return json.dumps({"questions": {"items": [{"question": q, "weight": 50} for q in questions]}})
        return json.dumps({"questions": {"items": questions}})
    if "Write an evaluation checklist" in system:
        return json.dumps({"questions": {"items": questions}})
    if "requirement" in fields:
        return json.dumps({"questions": {"items": [{"question": q, "no_example": "It does not, at all."} for q in questions]}})
    dims = [d.strip() for d in field_of(request, "dimensions").split(",")]
    return json.dumps({"requirements": {"items": [{"requirement": f"The output is good on {d}.", "dimension": d} for d in dims]}})


def tiny(config: str, tmp_path: Path) -> Path:
    """The config as shipped, its data swapped for the fixtures and its run directory under ``tmp_path``."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    summaries, articles = summeval_files(data)
    instructions, outputs = infobench_files(data)
    paths = {"run_dir": tmp_path / "run", "summaries": summaries, "articles": articles, "path": topical_chat_file(data),
             "instructions": instructions, "outputs": outputs}
    text = (EXPERIMENTS / config).read_text()
    for key, value in paths.items():
        text = re.sub(rf'^{key} = ".*"$', f'{key} = "{value}"', text, flags=re.M)
    text = re.sub(r"^resamples = \d+$", "resamples = 20", text, flags=re.M)
    text = re.sub(r'^dimensions = \[.*\]$', "", text, flags=re.M) if "topical_chat" in config else text
    assert tomllib.loads(text)["run_dir"] == str(tmp_path / "run")
    path = tmp_path / config
    path.write_text(text)
    return path


@pytest.mark.parametrize("config", BENCHES)
def test_every_bench_config_runs_at_a_tiny_size(config, tmp_path, monkeypatch):
    route_cli_lm(monkeypatch, bench_script)
    shipped = tomllib.loads((EXPERIMENTS / config).read_text())
    assert cli.main(["meta-eval", str(tiny(config, tmp_path))]) == 0
    results = (tmp_path / "run" / "results.md").read_text()
    names = [m["name"] for m in shipped["methods"]]
    assert all(f"| {name} |" in results for name in names) and "LM calls / output" in results
    scores: dict[tuple[str, str], dict] = {}
    for line in (tmp_path / "run" / "scores.jsonl").read_text().splitlines():
        record = json.loads(line)
        scores[record["method"], record["id"]] = record["scores"]
    for name in names:  # batch and per-question scoring agree on scripted replies, with and without code routing
        if "-batch" in name:
            twin = name.replace("-batch", "-pq")
            assert all(scores[name, i] == scores[twin, i] for (m, i) in scores if m == twin)
    kinds = {(m.get("writer", "bineval"), m.get("scoring", "per_question"), m.get("code_routing", True)) for m in shipped["methods"]}
    assert {(s, r) for _, s, r in kinds} == {("per_question", True), ("per_question", False), ("batch", True), ("batch", False)}
    # the comparison script of experiments/README.md on the same run: every pair agrees, batch is one call an output
    script = EXPERIMENTS.parent / "scoring_agreement.py"
    shown = subprocess.run([sys.executable, str(script), str(tmp_path / "run")], capture_output=True, text=True, check=True).stdout
    pairs = [line.split(" | ") for line in shown.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(pairs) == sum("-pq" in name for name in names)
    assert all(row[3] == "1" and float(row[8]) < float(row[7]) for row in pairs)  # agreement 1; batch: fewer calls


@pytest.mark.parametrize(
    "method, message",
    [
        ('writer = "gepa"', "field 'methods.0.writer': unknown checklist method 'gepa'"),
        ('writer = "rocketeval"', "field 'methods.0.writer': rocketeval needs reference per input: use checklist = \"per_input\""),
        ('writer = "feedback"\nchecklist = "per_input"', "feedback needs observations"),
        ('writer = "tick"\nchecklist = "dataset"', "a writer writes a \"generate\" or \"per_input\" checklist only"),
        ('scoring = "batch"\nchain_of_thought = true', "field 'methods.0.scoring': batch scoring answers without chain of thought"),
    ],
)
def test_bad_writer_options_are_one_located_line(tmp_path, monkeypatch, capsys, method, message):
    lm = route_cli_lm(monkeypatch, bench_script)
    summaries, articles = summeval_files(tmp_path)
    config = tmp_path / "c.toml"
    config.write_text(
        f'run_dir = "run"\n[dataset]\nkind = "summeval"\nsummaries = "{summaries}"\narticles = "{articles}"\n'
        f'[[methods]]\nname = "m"\nkind = "bineval"\n{method}\n'
    )
    assert cli.main(["meta-eval", str(config)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not lm.engine.requests


def test_an_unchanged_bineval_method_keeps_its_fingerprint():
    from bineval_dspy.meta.methods import BinEvalMethod

    options = BinEvalMethod(name="m", kind="bineval").fingerprint_options()
    assert not {"writer", "scoring", "code_routing"} & set(options)  # earlier runs still resume
    assert BinEvalMethod(name="m", kind="bineval", scoring="batch").fingerprint_options()["scoring"] == "batch"
