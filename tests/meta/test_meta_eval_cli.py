"""`bineval meta-eval CONFIG.toml` end to end on tiny datasets with a scripted LM: tables, resume, refusals."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from dspy.lm15 import Request

from bineval_dspy import cli
from bineval_dspy.meta.config import load_config
from bineval_dspy.meta.runner import SCORES_FILE, run_meta_eval
from tests.conftest import prompt_fields, route_cli_lm, scripted_lm, verdict_json
from tests.meta.fixtures import CHECKLIST, infobench_files, judge_script, summeval_files, topical_chat_file

METHODS = """
[[methods]]
name = "bineval"
kind = "bineval"
checklist = "checklist.json"

[[methods]]
name = "bineval-p"
kind = "bineval"
checklist = "checklist.json"
probability = true

[[methods]]
name = "g-eval"
kind = "holistic"

[[methods]]
name = "unieval"
kind = "unieval"

[[methods]]
name = "rouge-l"
kind = "rouge_l"
"""


class Recorder:
    """The scripted judge, counting the calls that reach it; ``broken`` makes every call fail."""

    def __init__(self, script=judge_script) -> None:
        self.script, self.broken = script, False
        self.requests: list[Request] = []

    def __call__(self, request: Request) -> str:
        self.requests.append(request)
        if self.broken:
            raise AssertionError("no LM call expected")
        return self.script(request)


@pytest.fixture
def summeval(tmp_path: Path) -> Path:
    """A run config over three SummEval-format articles with all four kinds of method."""
    data = tmp_path / "data"
    data.mkdir()
    summeval_files(data)
    (tmp_path / "checklist.json").write_text(json.dumps(CHECKLIST))
    return write_config(tmp_path)


def write_config(tmp_path: Path, methods: str = METHODS, head: str = "", dataset: str | None = None) -> Path:
    dataset = dataset or 'kind = "summeval"\nsummaries = "data/summaries.jsonl"\narticles = "data/articles.jsonl"'
    path = tmp_path / "meta.toml"
    path.write_text(f'run_dir = "runs/meta"\n{head}\n[bootstrap]\nresamples = 200\n\n[dataset]\n{dataset}\n{methods}')
    return path


def run(config: Path, *extra: str) -> int:
    return cli.main(["meta-eval", str(config), *extra])


def csv_rows(run_dir: Path) -> dict[tuple[str, str], dict[str, str]]:
    with (run_dir / "results.csv").open() as handle:
        return {(r["method"], r["dimension"]): r for r in csv.DictReader(handle)}


def test_a_run_writes_scores_and_tables_then_resumes_without_the_lm(summeval, monkeypatch, capsys):
    recorder = Recorder()
    route_cli_lm(monkeypatch, recorder)
    assert run(summeval) == 0
    run_dir = summeval.parent / "runs" / "meta"
    lines = [json.loads(line) for line in (run_dir / SCORES_FILE).read_text().splitlines()]
    assert len(lines) == 5 * 9 and {line["method"] for line in lines} == {"bineval", "bineval-p", "g-eval", "unieval", "rouge-l"}
    first = next(line for line in lines if line["method"] == "bineval")
    assert first["scorecard"]["judge"]["explanations"] == "none" and first["usage"]["lm_calls"] == 5 and first["seconds"] >= 0
    assert next(line for line in lines if line["method"] == "g-eval")["ratings"]["coherence"]["parsed"] == 5

    table = csv_rows(run_dir)
    # BinEval: good 1, fair 0.5 (consistency only), bad 0; the holistic judge says 5 / 3 / 2: both order each
    # article's summaries as the experts do, so Kendall is 1 wherever the method's scores are not tied
    assert float(table["g-eval", "coherence"]["summary_kendall"]) == pytest.approx(1.0)
    assert float(table["bineval", "consistency"]["summary_spearman"]) == pytest.approx(1.0)
    assert float(table["bineval", "coherence"]["summary_kendall"]) == pytest.approx(2 / 6**0.5)  # fair and bad tied
    assert float(table["rouge-l", "relevance"]["dataset_spearman"]) > 0.8
    assert table["bineval", "coherence"]["pairs"] == "9" and table["bineval", "coherence"]["systems"] == "3"
    # three articles: each summary-level cell rests on too few documents, so it has no interval and no average
    assert table["g-eval", "coherence"]["summary_spearman"] and not table["g-eval", "coherence"]["summary_spearman_low"]
    assert not table["g-eval", "average"]["summary_spearman"] and table["g-eval", "average"]["system_spearman"]
    assert table["bineval", "coherence"]["lm_calls_per_output"] == "5.0" and table["rouge-l", "fluency"]["lm_calls_per_output"] == "0.0"
    low, high = float(table["g-eval", "fluency"]["dataset_pearson_low"]), float(table["g-eval", "fluency"]["dataset_pearson_high"])
    assert low <= float(table["g-eval", "fluency"]["dataset_pearson"]) <= high
    markdown = (run_dir / "results.md").read_text()
    assert "| method | dimension | pairs | missing | skipped docs | systems | summary Spearman |" in markdown
    assert "| g-eval | coherence | 9 | 0 | 0 | 3 | 1.000 (3 docs < 5) |" in markdown
    printed = capsys.readouterr()
    assert printed.out == markdown and "wrote scores.jsonl, results.md, results.csv and results.json" in printed.err  # the table on stdout, where the files are on stderr

    before = (run_dir / "results.md").read_text()
    calls = len(recorder.requests)
    recorder.broken = True
    assert run(summeval) == 0
    assert len(recorder.requests) == calls  # nothing was scored again
    assert len((run_dir / SCORES_FILE).read_text().splitlines()) == 45
    assert (run_dir / "results.md").read_text() == before


def test_unieval_asks_for_logprobs_and_bineval_with_probability_too(summeval, monkeypatch):
    recorder = Recorder()
    route_cli_lm(monkeypatch, recorder)
    assert run(summeval) == 0
    unieval = [r for r in recorder.requests if "Is this a coherent summary of the article?" in r.messages[-1].text]
    assert unieval and all(r.config.logprobs for r in unieval)


@pytest.mark.parametrize(
    "before, after, difference",
    [
        ('name = "bineval-p"\nkind = "bineval"\nchecklist = "checklist.json"\nprobability = true', 'name = "bineval-p"\nkind = "bineval"\nchecklist = "checklist.json"', "method.bineval-p"),
        ('name = "g-eval"\nkind = "holistic"', 'name = "g-eval"\nkind = "holistic"\nprobability = false', "method.g-eval"),
        ('run_dir = "runs/meta"', 'run_dir = "runs/meta"\nlimit = 2', "sample"),
        ('run_dir = "runs/meta"', 'run_dir = "runs/meta"\ndimensions = ["fluency"]', "dimensions"),
    ],
)
def test_a_resume_under_a_changed_config_is_refused(summeval, monkeypatch, capsys, before, after, difference):
    route_cli_lm(monkeypatch, judge_script)
    assert run(summeval) == 0
    summeval.write_text(summeval.read_text().replace(before, after))
    capsys.readouterr()
    assert run(summeval) == 2
    err = capsys.readouterr().err
    assert f"scores.jsonl: made with other settings ({difference}" in err and len(err.strip().splitlines()) == 1
    assert run(summeval, "--overwrite") == 0


def test_a_resume_under_changed_verifier_code_is_refused_where_code_answers(summeval, monkeypatch, capsys):
    """Code verdicts made by other verifier code are not resumed into; a checklist code answers nothing of is."""
    route_cli_lm(monkeypatch, judge_script)
    coded = {**CHECKLIST, "questions": [*CHECKLIST["questions"], {"text": "Does every sentence start with a capital?", "dimension": "fluency", "verifier": "text:sentence_capitals"}]}
    (summeval.parent / "coded.json").write_text(json.dumps(coded))
    methods = 'name = "coded"\nkind = "bineval"\nchecklist = "coded.json"\n\n[[methods]]\nname = "bineval-p"'
    summeval.write_text(summeval.read_text().replace('name = "bineval-p"', methods))
    assert run(summeval) == 0
    monkeypatch.setattr("bineval_dspy.meta.runner.code_digest", lambda: "0" * 16)  # the verifiers' code changed
    capsys.readouterr()
    assert run(summeval) == 2
    assert "(method.coded.verifiers:" in capsys.readouterr().err
    summeval.write_text(summeval.read_text().replace(methods, 'name = "bineval-p"'))
    assert run(summeval, "--overwrite") == 0
    monkeypatch.setattr("bineval_dspy.meta.runner.code_digest", lambda: "1" * 16)
    assert run(summeval) == 0  # no method's questions go to code


def test_a_changed_checklist_file_or_data_file_is_a_difference(summeval, monkeypatch, capsys):
    route_cli_lm(monkeypatch, judge_script)
    assert run(summeval) == 0
    changed = {**CHECKLIST, "questions": CHECKLIST["questions"][:-1] + [{"text": "Is it on topic?", "dimension": "relevance"}]}
    (summeval.parent / "checklist.json").write_text(json.dumps(changed))
    assert run(summeval) == 2
    assert "(method.bineval.checklist:" in capsys.readouterr().err  # the field inside the method that changed
    (summeval.parent / "checklist.json").write_text(json.dumps(CHECKLIST))
    summaries = summeval.parent / "data" / "summaries.jsonl"
    summaries.write_text(summaries.read_text().replace('"coherence": 5.0', '"coherence": 4.0', 1))
    assert run(summeval) == 2
    assert "(dataset.summaries:" in capsys.readouterr().err  # the data file that changed


def test_missing_scores_exit_1_are_counted_and_retried_on_rerun(summeval, monkeypatch, capsys):
    def flaky(request: Request) -> str:
        text = request.messages[-1].text
        if "dimension" in prompt_fields(request) and "doc-b reopened after" in text and "fluency:" in text:
            return "I think it is fine"  # unparseable: the good doc-b summary gets no holistic fluency score
        return judge_script(request)

    recorder = Recorder(flaky)
    route_cli_lm(monkeypatch, recorder)
    assert run(summeval) == 1
    run_dir = summeval.parent / "runs" / "meta"
    table = csv_rows(run_dir)
    assert table["g-eval", "fluency"]["missing"] == "1" and table["g-eval", "fluency"]["pairs"] == "8"
    assert table["g-eval", "coherence"]["missing"] == "0" and table["g-eval", "average"]["missing"] == "1"
    assert "| g-eval | fluency | 8 | 1 |" in (run_dir / "results.md").read_text()
    assert "1 score(s) missing" in capsys.readouterr().err

    recorder.script = judge_script
    calls = len(recorder.requests)
    assert run(summeval) == 0
    assert len(recorder.requests) - calls == 4  # only that output, by that method, again: one call per dimension
    assert csv_rows(run_dir)["g-eval", "fluency"]["pairs"] == "9"


def test_a_generated_checklist_is_saved_and_reused(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    summeval_files(data)
    config = write_config(tmp_path, '[[methods]]\nname = "bineval-gen"\nkind = "bineval"\nchecklist = "generate"\n')
    recorder = Recorder()
    route_cli_lm(monkeypatch, recorder)
    assert run(config) == 0
    saved = json.loads((tmp_path / "runs" / "meta" / "checklist-bineval-gen.json").read_text())
    assert saved["task"] == "Summarize the news article in a few sentences." and len(saved["questions"]) == 4
    calls = len(recorder.requests)
    recorder.broken = True
    assert run(config) == 0 and len(recorder.requests) == calls


def test_limit_on_the_command_line_scores_whole_documents(summeval, monkeypatch, capsys):
    route_cli_lm(monkeypatch, judge_script)
    assert run(summeval, "--limit", "2") == 0
    lines = [json.loads(line) for line in (summeval.parent / "runs" / "meta" / SCORES_FILE).read_text().splitlines()]
    assert len({line["doc_id"] for line in lines}) == 2 and len(lines) == 5 * 6
    assert "--limit 2 replaces limit = None" in capsys.readouterr().err


@pytest.mark.parametrize(
    "head, dataset, methods, message",
    [
        ('dimensions = ["wit"]', None, METHODS, "meta.toml: field 'dimensions': 'wit' is not rated in this dataset (rated: coherence,"),
        ("", 'kind = "topical_chat"\npath = "data/tc.jsonl"', '[[methods]]\nname = "r"\nkind = "rouge_l"\n', "field 'methods.0.kind': ROUGE needs references"),
        ("", 'kind = "topical_chat"\npath = "data/tc.jsonl"', '[[methods]]\nname = "b"\nkind = "bineval"\nchecklist = "dataset"\n', "field 'methods.0.checklist': \"dataset\" needs"),
        ('dimensions = ["understandability"]', 'kind = "topical_chat"\npath = "data/tc.jsonl"', '[[methods]]\nname = "h"\nkind = "holistic"\n[[methods]]\nname = "u"\nkind = "unieval"\nquestions = {}\n', None),
        ("", None, METHODS + '[[methods]]\nname = "g-eval"\nkind = "unieval"\n', "two methods are named 'g-eval'"),
        ("", None, '[[methods]]\nname = "x"\nkind = "magic"\n', "field 'methods.0'"),
        ("", None, '[[methods]]\nname = "x y"\nkind = "rouge_l"\n', "field 'methods.0.rouge_l.name'"),
        ('dimensions = ["fluency", "fluency"]', None, METHODS, "'fluency' is listed twice"),
        ("", None, '[[methods]]\nname = "b"\nkind = "bineval"\nchecklist = "nowhere.json"\n', "nowhere.json: cannot read"),
        ("", 'kind = "infobench"\ninstructions = "data/infobench.jsonl"\noutputs = "data/infobench_outputs.jsonl"',
         '[[methods]]\nname = "b"\nkind = "bineval"\n', "field 'methods.0.checklist': a generated checklist needs the task"),
        ('dimensions = ["Format"]', 'kind = "infobench"\ninstructions = "data/infobench.jsonl"\noutputs = "data/infobench_outputs.jsonl"',
         '[[methods]]\nname = "h"\nkind = "holistic"\ndefinitions = { Format = " " }\n', "field 'methods.0.holistic.definitions.Format': String should have at least 1 character"),
    ],
)
def test_bad_configs_are_one_located_line_before_any_lm_call(summeval, monkeypatch, capsys, head, dataset, methods, message):
    recorder = Recorder()
    route_cli_lm(monkeypatch, recorder)
    topical_chat_file(summeval.parent / "data").rename(summeval.parent / "data" / "tc.jsonl")
    infobench_files(summeval.parent / "data")
    config = write_config(summeval.parent, methods, head, dataset)
    code = run(config)
    err = capsys.readouterr().err
    if message is None:  # dialogue defaults cover every USR dimension: this one runs
        assert code == 0
        return
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert recorder.requests == []


def test_a_bad_data_row_is_located(summeval, monkeypatch, capsys):
    route_cli_lm(monkeypatch, Recorder())
    summaries = summeval.parent / "data" / "summaries.jsonl"
    lines = summaries.read_text().splitlines()
    lines[3] = lines[3].replace('"fluency": 5.0', '"fluency": "five"')
    summaries.write_text("\n".join(lines) + "\n")
    assert run(summeval) == 2
    assert "summaries.jsonl:4: field 'scores.fluency': Input should be a valid number" in capsys.readouterr().err


def test_infobench_agreement_and_kappa_through_the_library(tmp_path):
    """BinEval with each instruction's own questions, against the GPT-4 labels: agreement and kappa by hand."""
    data = tmp_path / "data"
    data.mkdir()
    infobench_files(data)
    config = write_config(
        tmp_path,
        '[[methods]]\nname = "drfr"\nkind = "bineval"\nchecklist = "dataset"\n',
        'dimensions = ["overall", "Format"]',
        'kind = "infobench"\ninstructions = "data/infobench.jsonl"\noutputs = "data/infobench_outputs.jsonl"',
    )
    answers = {"Is it a title?": "yes", "Is it short?": "yes", "Is it a poem?": "no", "Does it rhyme?": "yes"}

    def judge(request: Request) -> str:
        question = prompt_fields(request)["question"]
        return verdict_json(answers[question])

    results = run_meta_eval(load_config(config), lm=scripted_lm(judge))  # the given LM, none configured
    (method,) = results.methods
    # answers  yes yes | no yes no  vs labels yes no | yes yes no: 3 of 5 agree;
    # p_e = P(yes)_target * P(yes)_ref + P(no)_target * P(no)_ref = 3/5 * 3/5 + 2/5 * 2/5 = 13/25
    assert method.agreement is not None and method.agreement.questions == 5
    assert method.agreement.agreement == pytest.approx(3 / 5)
    assert method.agreement.kappa == pytest.approx((3 / 5 - 13 / 25) / (1 - 13 / 25))
    assert method.outputs == 2 and method.missing == {"overall": 0, "Format": 0}
    assert method.correlations["overall"].pairs == 2


def test_a_scores_file_that_is_not_ours_is_refused(summeval, monkeypatch, capsys):
    route_cli_lm(monkeypatch, judge_script)
    assert run(summeval) == 0
    scores = summeval.parent / "runs" / "meta" / SCORES_FILE
    scores.write_text(scores.read_text() + '{"method": "bineval"}\n')
    assert run(summeval) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{SCORES_FILE}:46: required fields missing: 'scores'," in err and "; use --overwrite" in err



def test_a_method_can_name_its_own_lm(summeval, monkeypatch, capsys):
    run_lm = Recorder()
    route_cli_lm(monkeypatch, run_lm)
    other = scripted_lm(judge_script)
    monkeypatch.setattr("bineval_dspy.meta.runner.make_lm", lambda spec, source="": other)
    methods = '[[methods]]\nname = "g-eval"\nkind = "holistic"\n\n[[methods]]\nname = "g-eval-other"\nkind = "holistic"\nlm = "other-lm"\n'
    config = write_config(summeval.parent, methods)
    assert run(config) == 0
    assert len(run_lm.requests) == len(other.engine.requests) > 0  # each holistic method asked its own LM alike


def test_a_bad_method_lm_is_a_located_error(summeval, monkeypatch, capsys):
    route_cli_lm(monkeypatch, Recorder())
    config = write_config(summeval.parent, '[[methods]]\nname = "g-eval"\nkind = "holistic"\nlm = "gpt4"\n')
    assert run(config) == 2
    assert "field 'methods.0.lm' = 'gpt4'" in capsys.readouterr().err
