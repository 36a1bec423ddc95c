"""Runs of every kind, made by the real commands on scripted LMs, for the report and ``show`` tests; each builder
works in its own folder under the given one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dspy.lm15 import Request

from bineval_dspy import cli
from bineval_dspy.core.embeddings import use_embedder
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.tune.report import RESULTS_FILE, TrialRecord, TuneResults
from tests.analysis.test_analyze_cli import judge_rows
from tests.conftest import question_of, route_cli_lm, verdict_json
from tests.meta.fixtures import CHECKLIST, judge_script, summeval_files
from tests.optimize.test_optimizer import World, bag_of_words

# What an attacker would put into an output, a question or an explanation: a script, an event handler and a
# breakout from the page's inline JSON. Each sets a global flag if it ever runs.
PAYLOADS = {
    "script": "<script>window.__pwned = 'script'</script>",
    "img": "<img src=x onerror=\"window.__pwned = 'img'\">",
    "breakout": "</script><script>window.__pwned = 'breakout'</script><!--",
}
HOSTILE = " ".join(PAYLOADS.values())


def _folder(parent: Path, name: str) -> Path:
    folder = parent / name
    folder.mkdir(exist_ok=True)
    return folder


def judge_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hostile: bool = False, third: str = "Is it warm?") -> Path:
    """`bineval judge` output: three outputs, two dimensions, three questions (the ``third`` one's text given); with
    ``hostile``, the payloads in an output, in the third question and in every explanation of a "no"."""
    tmp_path = _folder(tmp_path, "judge")
    questions = [
        Question(text="Is it short?", dimension="brevity"),
        Question(text="Is it polite?", dimension="tone"),
        Question(text=f"Is it free of {HOSTILE}?" if hostile else third, dimension="tone"),
    ]
    checklist = tmp_path / "checklist.json"
    checklist.write_text(Checklist(task="Reply to the customer.", dimensions=["brevity", "tone"], questions=questions).model_dump_json())
    outputs = ["Thanks, fixed.", "No.", HOSTILE if hostile else "Whatever you say, I guess."]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"id": f"r{k}", "input": f"Complaint {k}", "output": o}) + "\n" for k, o in enumerate(outputs)))

    def script(request: Request) -> str:
        text, question = request.messages[-1].text, question_of(request)
        polite = "Thanks" in text
        answer = "yes" if polite or ("short" in question and "No." in text) else "no"
        return verdict_json(answer, HOSTILE if hostile and answer == "no" else f"it is {'so' if answer == 'yes' else 'not so'}")

    route_cli_lm(monkeypatch, script)
    out = tmp_path / "scorecards.jsonl"
    assert cli.main(["judge", "--checklist", str(checklist), "--data", str(data), "-o", str(out)]) == 0
    return out


METHODS = """
[[methods]]
name = "bineval"
kind = "bineval"
checklist = "checklist.json"

[[methods]]
name = "g-eval"
kind = "holistic"

[[methods]]
name = "rouge-l"
kind = "rouge_l"
"""


def meta_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`bineval meta-eval` on three SummEval-format articles; returns its config (the run is ``runs/meta`` beside it)."""
    tmp_path = _folder(tmp_path, "meta")
    data = _folder(tmp_path, "data")
    summeval_files(data)
    (tmp_path / "checklist.json").write_text(json.dumps(CHECKLIST))
    config = tmp_path / "meta.toml"
    config.write_text(f'run_dir = "runs/meta"\n[bootstrap]\nresamples = 50\n[dataset]\nkind = "summeval"\nsummaries = "data/summaries.jsonl"\narticles = "data/articles.jsonl"\n{METHODS}')
    route_cli_lm(monkeypatch, judge_script)
    assert cli.main(["meta-eval", str(config)]) == 0
    return config


def optimizer_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`bineval optimize`, self-update over a bullet-list suite: iteration 1 adds "Use bullet points." and is kept."""
    tmp_path = _folder(tmp_path, "optimize")
    suite = tmp_path / "suite.jsonl"
    row = {"instruction_id_list": ["detectable_format:number_bullet_lists"], "kwargs": [{"num_bullets": 2}]}
    suite.write_text("".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", **row}) + "\n" for i in range(6)))
    config = tmp_path / "run.toml"
    config.write_text(
        'mode = "self"\nrun_dir = "runs/opt"\n[data]\nsuite = "suite.jsonl"\ntrain = 3\nval = 2\ntest = 1\n'
        '[program]\ninstructions = "Answer the request."\n[optimizer]\nmax_iterations = 2\n'
    )
    route_cli_lm(monkeypatch, World())
    with use_embedder(bag_of_words):
        assert cli.main(["optimize", str(config)]) == 0
    return tmp_path / "runs" / "opt"


def analysis_run(tmp_path: Path) -> Path:
    """`bineval analyze` with a reference: phi, pruning and weights."""
    tmp_path = _folder(tmp_path, "analyze")
    rows, checklist, _ = judge_rows(tmp_path)
    out = tmp_path / "analysis"
    args = [str(rows), "--checklist", str(checklist), "--reference", "human", "-o", str(out), "--folds", "2", "--resamples", "20"]
    assert cli.main(["analyze", *args]) == 0
    return out


def tune_run(tmp_path: Path, single: bool = False) -> Path:
    """A two-objective study's ``results.json`` (``single``: val_score only): five trials, one pruned; the Pareto front
    is trials 0, 1 and 3 (the best trial alone: 1)."""
    values = [(0.61, 120.0), (0.72, 300.0), (0.55, 310.0), (0.70, 150.0)]
    trials = [
        TrialRecord(number=k, state="COMPLETE", params={"max_chars": 800 + 400 * k, "min_delta": 0.01 * k}, values={"val_score": v, "lm_calls": c}, run_dir=f"trials/t{k}")
        for k, (v, c) in enumerate(values)
    ]
    trials.append(TrialRecord(number=4, state="PRUNED", params={"max_chars": 2400, "min_delta": 0.04}, steps={1: 0.4}))
    if single:
        trials = [t.model_copy(update={"values": {"val_score": t.values["val_score"]} if t.values else None}) for t in trials]
    results = TuneResults(
        study="budget",
        storage="sqlite:///study.db",
        objectives={"val_score": "maximize"} if single else {"val_score": "maximize", "lm_calls": "minimize"},
        trials_wanted=5,
        states={"COMPLETE": 4, "PRUNED": 1},
        best=[trials[1]] if single else [trials[0], trials[1], trials[3]],
        trials=trials,
    )
    folder = _folder(tmp_path, "tune-single" if single else "tune")
    (folder / RESULTS_FILE).write_text(results.model_dump_json(indent=2))
    return folder


def finetune_samples(tmp_path: Path, failed: str = "Is it a list?") -> Path:
    """Fine-tuning's samples.jsonl of two prompts, as written before headers (the run itself needs a model to train)."""
    from bineval_dspy.finetune.data import SAMPLES_FILE, PromptSamples, Sample

    prompts = [
        PromptSamples(key="p1", prompt="List two fruits.", samples=[
            Sample(rollout=None, response="- apple\n- pear", score=1.0, passed=True, failed=[]),
            Sample(rollout=0, response="apple", score=0.5, passed=False, failed=[failed]),
        ]),
        PromptSamples(key="p2", prompt="Name a colour.", samples=[Sample(rollout=0, response="", score=0.0, passed=False, failed=[failed, "Is it short?"])]),
    ]  # fmt: skip
    path = _folder(tmp_path, "finetune") / SAMPLES_FILE
    path.write_text("".join(p.model_dump_json() + "\n" for p in prompts))
    return path


def every_kind(folder: Path) -> list[Path]:
    """A run of every kind in ``folder``: judge output, a meta-eval's config, an optimizer run, an analysis, a study."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        return [
            judge_run(folder, monkeypatch),
            meta_run(folder, monkeypatch),
            optimizer_run(folder, monkeypatch),
            analysis_run(folder),
            tune_run(folder),
        ]


def inlined_rows(html: str) -> dict[str, list[dict]]:
    """The row lists a report file inlines (its data element's ``rows``: section id -> rows), which the page draws."""
    start = html.index('<script type="application/json" id="report-data">') + len('<script type="application/json" id="report-data">')
    return json.loads(html[start : html.index("</script>", start)])["rows"]


def large_judge_run(folder: Path, rows: int) -> Path:
    """`bineval judge` output of ``rows`` rows in its real format (``testing.runs``): row ``o{k}`` is impolite when
    ``k % 7 == 3``; no other "no"."""
    from bineval_dspy.testing.runs import synthetic_judge_run

    return synthetic_judge_run(folder / "large.jsonl", rows)
