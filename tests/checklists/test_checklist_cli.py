"""``bineval checklist --method bineval|tick|qworld`` and per-perspective scores in ``bineval judge``, with a
scripted LM; one end-to-end run of the Qworld tree on the embedded SmolLM2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dspy.lm15 import Request

from bineval_dspy import cli
from bineval_dspy.checklists.writers import ChecklistUsage
from bineval_dspy.core.embeddings import use_embedder
from bineval_dspy.core.schema import Checklist, Question
from tests.checklists.qworld_script import OPS, always_new, fake_embed
from tests.conftest import prompt_fields, question_of, route_cli_lm, verdict_json

pytestmark = pytest.mark.usefixtures("every_question_related")  # the relevance screen: tests/checklists/test_relevance.py

TASK = "Explain how to take ibuprofen safely."
STEP1 = {"requirements": {"items": [{"requirement": "Gives the usual adult dose.", "dimension": "accuracy"}, {"requirement": "Warns about the maximum dose.", "dimension": "safety"}]}}


def step2(request: Request) -> str:
    requirement = prompt_fields(request)["requirement"]
    return json.dumps({"questions": {"items": [{"question": f"Does the response meet this: {requirement}?", "no_example": "It does not, at all."}]}})

TICK = {"questions": {"items": ["Does the response give the adult dose?", "Does the response warn about stomach upset?"]}}


def script_for_every_method():
    tree = always_new()

    def script(request: Request) -> str:
        system = request.system or ""
        if "question" in prompt_fields(request):
            return verdict_json("no" if "k5" in question_of(request) else "yes")
        if any(marker in system for marker in OPS):
            return tree(request)
        if "Write an evaluation checklist" in system:
            return json.dumps(TICK)
        return step2(request) if "requirement" in prompt_fields(request) else json.dumps(STEP1)

    return script


@pytest.fixture
def lm(monkeypatch):
    with use_embedder(fake_embed):  # no MiniLM load in unit tests
        yield route_cli_lm(monkeypatch, script_for_every_method())


def run(args: list[str], capsys) -> tuple[int, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.err + captured.out  # notes on stderr, results on stdout


@pytest.mark.parametrize("method, questions, calls", [("bineval", 2, 1 + 2), ("tick", 2, 1)])
def test_checklist_bineval_and_tick(tmp_path, lm, capsys, method, questions, calls):
    out = tmp_path / "c.json"
    code, err = run(["checklist", "--task", TASK, "--method", method, "-o", str(out)], capsys)
    assert code == 0, err
    checklist = Checklist.model_validate_json(out.read_text())
    assert len(checklist.questions) == questions
    assert f"cost: {calls} LM call(s), {2 * calls} tokens" in err and len(lm.engine.requests) == calls
    sidecar = ChecklistUsage.model_validate_json((tmp_path / "c.json.usage.json").read_text())  # the cost beside the checklist
    assert (sidecar.checklist, sidecar.method, sidecar.lm, sidecar.usage.lm_calls, sidecar.usage.usd) == ("c.json", method, "custom/scripted", calls, None)


def test_checklist_qworld_writes_weights_and_lineage(tmp_path, lm, capsys):
    out = tmp_path / "c.json"
    code, err = run(["checklist", "--task", TASK, "--method", "qworld", "--w1", "1", "--w2", "1", "-o", str(out)], capsys)
    assert code == 0, err
    checklist = Checklist.model_validate_json(out.read_text())
    # always_new: 2 children per decomposition, 1 per expansion round: S = 2 + 1 = 3, P = 3 * (2 + 1) = 9, C = 9 * 2
    assert len(checklist.questions) == 18
    assert all(q.weight == 5 and {"scenario", "perspective"} <= set(q.lineage) for q in checklist.questions)
    calls = 1 + 1 + 3 * (1 + 1) + 9
    assert f"cost: {calls} LM call(s)," in err and len(lm.engine.requests) == calls
    assert "qworld tree: 3 scenarios, 9 perspectives, 18 criteria" in err
    assert "(weight +5)" in err


def test_checklist_qworld_max_questions_caps_criteria_and_w3_expands(tmp_path, lm, capsys):
    out = tmp_path / "c.json"
    code, err = run(["checklist", "--task", TASK, "--method", "qworld", "--w1", "0", "--w2", "0", "--w3", "2", "--max-questions", "10", "-o", str(out)], capsys)
    assert code == 0, err
    checklist = Checklist.model_validate_json(out.read_text())
    # 2 scenarios x 2 perspectives x 2 criteria = 8 from decomposition, then the first criteria round fills the cap
    # (expansions write weight -5 in always_new) and no second round is asked
    assert [q.weight for q in checklist.questions] == [5] * 8 + [-5] * 2
    assert f"cost: {1 + 2 + 4 + 2} LM call(s)," in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--method", "tick", "--w1", "2"], "error: --w1: only with --method qworld"),
        (["--w3", "1"], "error: --w3: only with --method qworld"),
    ],
)
def test_checklist_bad_flags_are_one_line(tmp_path, lm, capsys, args, message):
    code, err = run(["checklist", "--task", TASK, *args, "-o", str(tmp_path / "c.json")], capsys)
    assert code == 2 and err.startswith(message)
    assert err.count("\n") == 1 and len(lm.engine.requests) == 0
    code, err = run(["checklist", "--task", TASK, "--method", "gepa", "-o", str(tmp_path / "c.json")], capsys)
    assert code == 2 and err.startswith("error: method: unknown checklist method 'gepa' (choose from bineval, tick, qworld, checkeval")


def test_judge_reports_scores_per_perspective_and_scenario(tmp_path, lm, capsys):
    def q(text: str, weight: float, scenario: str, perspective: str) -> Question:
        lineage = {"scenario": scenario, "scenario_text": f"when {scenario}", "perspective": perspective, "perspective_text": f"axis {perspective}"}
        return Question(text=text, dimension="quality", weight=weight, lineage=lineage)

    checklist = Checklist(
        task=TASK,
        dimensions=["quality"],
        questions=[
            q("Does the response give the adult dose?", 3, "s1", "p1"),
            q("Does the response cover point k5?", 1, "s1", "p1"),  # the script says no to k5
            q("Does the response recommend too much?", -2, "s2", "p2"),  # yes: the flaw is present
        ],
    )
    path = tmp_path / "c.json"
    path.write_text(checklist.model_dump_json())
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"input": "i", "output": "o"}) + "\n")
    out = tmp_path / "out.jsonl"
    code, err = run(["judge", "--checklist", str(path), "--data", str(data), "-o", str(out)], capsys)
    assert code == 0, err
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    ours = row["bineval"]
    assert ours["scorecard"]["overall"] == pytest.approx(3 / 6)
    assert ours["lineage_scores"] == {"perspective": {"p1": 0.75, "p2": 0.0}, "scenario": {"s1": 0.75, "s2": 0.0}}
    assert "mean scores per perspective" in err and "axis p1" in err and "mean scores per scenario" in err


def test_judge_without_qworld_lineage_keeps_its_output(tmp_path, lm, capsys):
    checklist = Checklist(task=TASK, dimensions=["d"], questions=[Question(text="Is it short?", dimension="d", lineage={"requirement": "short"})])
    path = tmp_path / "c.json"
    path.write_text(checklist.model_dump_json())
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"input": "i", "output": "o"}) + "\n")
    out = tmp_path / "out.jsonl"
    assert run(["judge", "--checklist", str(path), "--data", str(data), "-o", str(out)], capsys)[0] == 0
    assert set(json.loads(out.read_text())["bineval"]) == {"line", "complete", "scorecard", "usage"}


@pytest.mark.embedded
def test_qworld_checklist_on_the_embedded_model(tmp_path):
    """The real tree on SmolLM2-135M (with MiniLM dedup): poor text is expected, a crash or an invalid file is not.
    Small: one expansion round per level and one criterion, about five LM calls a tree (a second tree only where the
    screen drops that criterion)."""
    out = tmp_path / "checklist.json"
    env = {**os.environ, "BINEVAL_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "bineval_dspy.cli", "checklist", "--task", "Summarize the article in two sentences."]
    done = subprocess.run(
        [*command, "--method", "qworld", "--w1", "1", "--w2", "1", "--max-questions", "1", "-o", str(out)],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    checklist = Checklist.model_validate_json(Path(out).read_text())
    assert 1 <= len(checklist.questions) <= 3  # one criterion a tree, at most three trees (the screen's retries)
    assert all(q.weight != 0 and {"scenario", "perspective"} <= set(q.lineage) for q in checklist.questions)
    assert "cost: " in done.stderr and " LM call(s), " in done.stderr and "qworld tree: " in done.stderr
