"""`bineval experiment`: every experiment config in experiments/ runs at its tiny size, and the table is honest."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.experiment.runner import ExperimentResults
from bineval_dspy.testing.scripted import Reply
from tests.conftest import SHARED_DATA, prompt_fields, route_cli_lm, verdict_json
from tests.optimize.test_optimizer import World

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
CONFIGS = sorted(path for path in EXPERIMENTS.glob("*.toml") if "[[arms]]" in path.read_text())
SUITE_ROW = {"instruction_id_list": ["detectable_format:number_bullet_lists"], "kwargs": [{"num_bullets": 2}]}


class JudgingWorld(World):
    """The optimizer's scripted world, which also answers judge questions (yes, unless the question says "no")."""

    def __call__(self, request):
        if "question" in prompt_fields(request) and "lesson" not in prompt_fields(request) and "explanation" not in prompt_fields(request):
            answer = "no" if " not " in prompt_fields(request)["question"] else "yes"
            return Reply(verdict_json(answer), p_yes=0.8 if answer == "yes" else 0.3)
        return super().__call__(request)


@pytest.fixture
def scripted(monkeypatch, words_embedder):
    return route_cli_lm(monkeypatch, JudgingWorld())


def test_every_experiment_config_is_an_experiment():
    assert {path.name for path in CONFIGS} >= {"ifeval.toml", "ifbench.toml", "infobench.toml", "ifeval_finetune.toml", "infobench_distill.toml", "ifbench_transfer.toml"}


@pytest.mark.parametrize("config", CONFIGS, ids=lambda path: path.name)
def test_each_config_runs_at_its_tiny_size(config, tmp_path, request, capsys, monkeypatch):
    from bineval_dspy.experiment.config import load_experiment

    monkeypatch.setenv("BINEVAL_CACHE_DIR", str(tmp_path / "cache"))  # an embedded model assembled there (Gemma's), not under $HOME

    loaded = load_experiment(config)
    real = any(arm.kind == "probe" or _enforces(arm) for arm in loaded.arms)  # a probe reads a real model's states, and
    if not real:  # enforcement steers a real decoder: such a config runs on the embedded model
        request.getfixturevalue("scripted")
    arm_data = [arm.train_data for arm in loaded.arms if getattr(arm, "train_data", None) is not None]
    inputs = [*loaded.data.split_files.values(), *arm_data]
    made = _prepare_infobench(inputs) if config.name.startswith("infobench") else []
    needed = [p for p in (loaded.data.suite, loaded.data.examples, *inputs) if p is not None]
    if not all(path.exists() for path in needed):
        pytest.skip(f"{config.name}: its data is not here ({', '.join(str(p) for p in needed if not p.exists())})")
    run_dir = loaded.run_dir.with_name(loaded.run_dir.name + "-tiny")
    argv = ["experiment", str(config), "--tiny", "--cache-dir", str(tmp_path / "cache")]
    try:
        code = cli.main(argv)
        results = json.loads((run_dir / "results.json").read_text())
        splits = json.loads((run_dir / "splits.json").read_text())
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
        for path in made:
            path.unlink()
    assert code in (0, 1)  # 1: an arm left verdicts unanswered on the scripted LM's replies, said, not hidden
    assert [arm["name"] for arm in results["arms"]] == [arm.name for arm in loaded.arms]
    assert 0 < len(splits["test"]) <= 3 and len(splits["train"]) <= 2  # groups: prompts, or instructions
    out = capsys.readouterr().out
    assert "| arm |" in out and all(arm.name in out for arm in loaded.arms)


def _enforces(arm: object) -> bool:
    """Whether an arm decodes under constraints (its own ``enforce``, its program's, or its fine-tuning sampler's)."""
    tables = [getattr(arm, "program", None), getattr(arm, "finetune", None)]
    return bool(getattr(arm, "enforce", None)) or any(isinstance(t, dict) and t.get("enforce") for t in tables)


def _prepare_infobench(files: list[Path]) -> list[Path]:
    """The InFoBench files the config reads, written by its script at tiny size when they are missing (and the shared
    data is here); returns what it wrote, for the test to remove."""
    missing = [path for path in files if not path.exists()]
    if not missing or not (SHARED_DATA / "infobench" / "infobench.jsonl").is_file():
        return []
    out = missing[0].parent
    before = set(out.glob("*")) if out.is_dir() else set()
    script = [sys.executable, str(EXPERIMENTS / "infobench_examples.py"), "--data", str(SHARED_DATA / "infobench"), "--out", str(out)]
    subprocess.run([*script, "--train", "2", "--val", "2", "--test", "3"], check=True, capture_output=True)
    return sorted(set(out.glob("*")) - before)  # every file the script wrote, the ones this config does not read too


def fruit_suite(tmp_path: Path, rows: int) -> Path:
    """A suite of ``rows`` prompts each checked for bullet points (what the scripted generator gives on request)."""
    suite = tmp_path / "suite.jsonl"
    suite.write_text("\n".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", **SUITE_ROW}) for i in range(rows)) + "\n")
    return suite


def test_arms_side_by_side_with_paired_intervals_against_the_start(tmp_path, scripted, capsys):
    suite = fruit_suite(tmp_path, 10)
    config = tmp_path / "exp.toml"
    config.write_text(f"""
name = "fruits"
mode = "self"
run_dir = "runs/exp"
test_every = true
[data]
suite = "{suite.name}"
train = 3
val = 2
test = 5
[program]
instructions = "Answer the request."
[optimizer]
max_iterations = 2
[[arms]]
name = "start"
kind = "start"
[[arms]]
name = "guard"
kind = "bineval"
[[arms]]
name = "significant"
kind = "bineval"
optimizer = {{ accept = "significant" }}
[[arms]]
name = "best-of-2"
kind = "best_of"
n = 2
[[arms]]
name = "selection-demos"
kind = "selection_demos"
n = 2
""")
    assert cli.main(["experiment", str(config)]) == 0
    results = json.loads((tmp_path / "runs" / "exp" / "results.json").read_text())
    assert ExperimentResults.model_validate(results).model_dump(mode="json") == results  # typed, and back again
    arms = {arm["name"]: arm for arm in results["arms"]}
    assert arms["start"]["test"]["accuracy"]["strict_prompt"]["estimate"] == 0.0 and arms["start"]["vs_baseline"] is None
    guard = arms["guard"]
    assert guard["test"]["accuracy"]["strict_prompt"]["estimate"] == 1.0
    assert guard["vs_baseline"]["accuracy"]["strict_prompt"] == {"estimate": 1.0, "low": 1.0, "high": 1.0}
    assert guard["optimization"]["lm_calls"] > 0 and guard["program"]["instructions"]["generate"].endswith("Use bullet points.")
    assert [(step["iteration"], step["difference"]["estimate"]) for step in guard["steps"]] == [(1, 1.0)]  # the accepted step
    # the significant guard keeps the same edit here: both validation prompts go from 0 to 1, in every draw
    assert arms["significant"]["program"] == guard["program"]
    # Best-of-2 samples the start prompt: the scripted generator never writes bullets for it, so nothing to select
    assert arms["best-of-2"]["test"]["accuracy"]["strict_prompt"]["estimate"] == 0.0
    assert arms["best-of-2"]["test_usage"]["lm_calls"] == 2 * 5
    selection = arms["best-of-2"]["selection"]  # no sample passes: pass@k 0, both drawn, no efficiency to speak of
    assert selection["pass_at"] == [0.0, 0.0] and selection["mean_samples"] == 2 and selection["efficiency"] is None
    assert arms["start"]["selection"] is None
    # nothing passes among the start prompt's samples: no demonstration to offer, the start program stands
    selection = arms["selection-demos"]
    assert selection["program"]["demos"] == {} and selection["optimization"]["lm_calls"] >= 2 * 3
    audit = json.loads((tmp_path / "runs" / "exp" / "arms" / "selection-demos" / "audit.json").read_text())
    assert audit["iterations"][0]["kind"] == "demo" and audit["stopped"] == "no new demonstration to try"
    table = (tmp_path / "runs" / "exp" / "results.md").read_text()
    assert "strict_prompt minus start [paired 95% CI]" in table and "+1.000 [1.000, 1.000]" in table
    assert "- guard: iteration 1: +1.000 [1.000, 1.000]" in table
    # an optimizer arm's program.json, with its splits.json beside it, reproduces the arm's test figure
    responses, graded = tmp_path / "responses.jsonl", tmp_path / "graded.jsonl"
    program = tmp_path / "runs" / "exp" / "arms" / "guard" / "program.json"
    assert cli.main(["generate", "--suite", str(suite), "--program", str(program), "--split", "test", "-o", str(responses)]) == 0
    assert cli.main(["verify", "--suite", str(suite), "--responses", str(responses), "-o", str(graded), "--program", str(program), "--split", "test"]) == 0
    rows = [json.loads(line) for line in graded.read_text().splitlines()]
    assert len(rows) == 5 and sum(r["follow_all_instructions"] is True for r in rows) / 5 == guard["test"]["accuracy"]["strict_prompt"]["estimate"]
    # a rerun resumes every arm: no optimization repeated
    capsys.readouterr()
    assert cli.main(["experiment", str(config)]) == 0
    again = json.loads((tmp_path / "runs" / "exp" / "results.json").read_text())
    assert [a["test"] for a in again["arms"]] == [a["test"] for a in results["arms"]]


@pytest.mark.parametrize(
    "mode, arm, message",
    [
        ("cross", 'name = "b"\nkind = "best_of"', "needs a generator"),
        ("self", 'name = "g"\nkind = "bineval"\noptimizer = { max_iteration = 2 }', "arm 'g': optimizer field 'max_iteration'"),
        ("self", 'name = "g"\nkind = "gepa"\ncalls_like = "nobody"', "calls_like 'nobody' is not an earlier arm"),
        ("self", 'name = ".."\nkind = "start"', "field 'arms.0.start.name'"),  # issue 46: arms/.. is the run directory
        ("self", 'name = "."\nkind = "start"', "field 'arms.0.start.name'"),
        ("self", 'name = "a/b"\nkind = "start"', "field 'arms.0.start.name'"),
    ],
)
def test_a_bad_experiment_config_is_one_located_line(tmp_path, capsys, mode, arm, message):
    config = tmp_path / "exp.toml"
    data = 'examples = "e.jsonl"' if mode == "cross" else 'suite = "s.jsonl"'
    config.write_text(f'mode = "{mode}"\nrun_dir = "r"\n[data]\n{data}\ntest = 2\n[[arms]]\n{arm}\n')
    assert cli.main(["experiment", str(config)]) == 2
    err = capsys.readouterr().err
    assert message in err and "exp.toml" in err and len(err.strip().splitlines()) == 1


def test_show_and_report_read_an_experiment(tmp_path, scripted, capsys):
    suite = fruit_suite(tmp_path, 6)
    config = tmp_path / "exp.toml"
    body = f'mode = "self"\nrun_dir = "runs/e"\n[data]\nsuite = "{suite.name}"\ntrain = 2\nval = 2\ntest = 2\n[program]\ninstructions = "Answer."\n'
    best = '[[arms]]\nname = "best"\nkind = "best_of"\nn = 2\nstop_at_pass = true\n'
    config.write_text(body + '[[arms]]\nname = "start"\nkind = "start"\n[[arms]]\nname = "guard"\nkind = "bineval"\n' + best)
    assert cli.main(["experiment", str(config)]) == 0
    run = tmp_path / "runs" / "e"
    assert "- best: 2.00 of 2 samples per prompt, stopping at the first pass" in (run / "results.md").read_text()
    capsys.readouterr()
    assert cli.main(["show", str(run)]) == 0
    err = "".join(capsys.readouterr())  # a table: on stdout or stderr, as the console conventions have it
    assert "== experiment:" in err and "guard" in err and "+1.00 [1.00, 1.00]" in err and "best: 2.00 of 2 samples" in err
    assert cli.main(["report", str(run), "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "3 arms on 2 test items" in html and "+1.000 [1.000, 1.000]" in html
    assert "best (Best-of-2): 2.00 of 2 samples per prompt, stopping at the first pass" in html
    grid = [json.loads(line) for line in (run / "grid.jsonl").read_text().splitlines()]  # issue 33, item 9
    assert len(grid) == 2 and all(set(row["cells"]) == {"start", "guard", "best"} and row["input"] for row in grid)
    assert all(row["cells"]["guard"]["checks"] and row["cells"]["guard"]["output"] is not None for row in grid)
    assert 'class="grid"' in html and "columns disagree on 2 of 2 rows" in err
    plan = json.loads((run / "plan.json").read_text())
    spent = json.loads((run / "results.json").read_text())
    calls = sum(arm["optimization"]["lm_calls"] + arm["test_usage"]["lm_calls"] for arm in spent["arms"])
    assert 0 < calls <= plan["calls"] and f"planned at most {plan['calls']} LM call(s)" in " ".join(err.split())


def _program_arm_config(tmp_path, path: str) -> Path:
    suite = fruit_suite(tmp_path, 8)
    config = tmp_path / "exp.toml"
    config.write_text(f"""
mode = "self"
run_dir = "runs/exp"
[data]
suite = "{suite.name}"
train = 2
val = 2
test = 4
[program]
instructions = "Answer the request."
[[arms]]
name = "start"
kind = "start"
[[arms]]
name = "saved"
kind = "program"
path = "{path}"
""")
    return config


def test_a_program_arm_scores_a_saved_program_as_generate_would_run_it(tmp_path, scripted, capsys):
    from bineval_dspy.programs.state import ProgramFile

    ProgramFile(kind="generator", instructions={"generate": "Answer the request. Use bullet points."}).save(tmp_path / "kept" / "program.json")
    assert cli.main(["experiment", str(_program_arm_config(tmp_path, "kept"))]) == 0  # a run folder stands for its file
    arms = {arm["name"]: arm for arm in json.loads((tmp_path / "runs" / "exp" / "results.json").read_text())["arms"]}
    assert arms["start"]["test"]["accuracy"]["strict_prompt"]["estimate"] == 0.0
    assert arms["saved"]["test"]["accuracy"]["strict_prompt"]["estimate"] == 1.0
    assert arms["saved"]["program"]["instructions"]["generate"].endswith("Use bullet points.")


def test_a_program_arm_that_cannot_be_read_is_one_line_before_any_arm_runs(tmp_path, scripted, capsys):
    from bineval_dspy.programs.state import ProgramFile

    config = _program_arm_config(tmp_path, "missing/program.json")
    assert cli.main(["experiment", str(config)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "missing/program.json" in err and not (tmp_path / "runs" / "exp" / "arms").exists()
    ProgramFile(kind="judge", instructions={}).save(tmp_path / "judge.json")
    assert cli.main(["experiment", str(_program_arm_config(tmp_path, "judge.json"))]) == 2
    assert "field 'kind': a judge program" in capsys.readouterr().err


def test_an_experiment_with_no_group_left_for_test_is_one_line(tmp_path, scripted, capsys):
    """Probe 130: with `test` left at "rest" and every group in train or val, no arm runs."""
    suite = fruit_suite(tmp_path, 4)
    config = tmp_path / "exp.toml"
    config.write_text(f'mode = "self"\nrun_dir = "runs/e"\n[data]\nsuite = "{suite.name}"\ntrain = 2\nval = 2\n[[arms]]\nname = "start"\nkind = "start"\n')
    assert cli.main(["experiment", str(config)]) == 2
    err = capsys.readouterr().err
    assert "field 'data.test': no group is left for the test split after train (2) and val (2)" in err and err.count("\n") == 1
    assert not (tmp_path / "runs" / "e" / "results.json").exists()


def _steering_config(tmp_path: Path, suite: Path) -> Path:
    config = tmp_path / "exp.toml"
    body = f'mode = "self"\nrun_dir = "runs/s"\n[data]\nsuite = "{suite.name}"\ntrain = 2\nval = 2\ntest = 4\n[program]\ninstructions = "Answer."\n'
    config.write_text(body + '[[arms]]\nname = "start"\nkind = "start"\n[[arms]]\nname = "steered"\nkind = "start"\nenforce = "extracted"\n')
    return config


def test_an_enforce_arm_carries_generates_enforcement_summary_and_says_when_it_enforced_nothing(tmp_path, scripted, capsys):
    """Issue 57 item 2: an enforce arm that enforced nothing read as a fair comparison (+0.000, no cue). Each enforce
    arm now carries generate's summary into results.json, results.md and the report, and one that enforced nothing
    says so on stderr and in the table. Issue 54 item 6: the quality table has the prompt-reply cosine, paired."""
    scripted.engine.supports_steering = True  # the scripted replies ignore the constraints; the summary checks them
    suite = tmp_path / "suite.jsonl"
    suite.write_text("\n".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}), all in lowercase letters.", **SUITE_ROW}) for i in range(8)) + "\n")
    assert cli.main(["experiment", str(_steering_config(tmp_path, suite))]) == 0
    run = tmp_path / "runs" / "s"
    arms = {arm["name"]: arm for arm in json.loads((run / "results.json").read_text())["arms"]}
    assert arms["start"]["enforcement"] is None
    assert arms["steered"]["enforcement"] == {"rows": 4, "steered": 4, "no_constraint": 0, "enforced": 4, "held": 4, "conflicts": 0, "unenforceable": 0, "invalid": 0, "nothing": False}
    table = (run / "results.md").read_text()
    assert "- steered: 4 of 4 row(s) steered, 0 with no constraint found (decoded plainly); 4 constraint(s) enforced, 4 held" in table
    assert "| prompt-reply cosine | minus baseline |" in table
    relevance = arms["steered"]["test"]["quality"]["relevance"]
    assert 0.0 < relevance["estimate"] < 1.0  # "one and two" shares a word with its prompt
    assert arms["steered"]["vs_baseline"]["quality"]["relevance"] == {"estimate": 0.0, "low": 0.0, "high": 0.0}  # the same replies
    capsys.readouterr()
    assert cli.main(["show", str(run)]) == 0
    assert "steered: 4 of 4 row(s) steered" in " ".join("".join(capsys.readouterr()).split())

    shutil.rmtree(run)
    assert cli.main(["experiment", str(_steering_config(tmp_path, fruit_suite(tmp_path, 8)))]) == 0  # no prompt states a constraint
    captured = capsys.readouterr()
    said = "arm steered: enforced nothing on its 4 test output(s) (4 with no constraint found, 0 not enforceable): its figures are those of plain decoding"
    assert said in " ".join(captured.err.split())
    table = (run / "results.md").read_text()
    assert "| steered | start (enforced nothing) |" in table and f"- {said}" in table
    assert cli.main(["report", str(run), "-o", str(tmp_path / "r.html")]) == 0
    assert "<strong>enforced nothing</strong>" in (tmp_path / "r.html").read_text(encoding="utf-8")
