"""ROUGE's options against rouge-score itself, the system level against scipy on the systems' means, thin summary
cells, and every full-size config of experiments/meta run at a tiny size."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from dspy.lm15 import Request
from rouge_score import rouge_scorer
from scipy import stats

from bineval_dspy import cli
from bineval_dspy.meta.config import MetaEvalConfig
from bineval_dspy.meta.correlation import average, correlate, draws, resample_counts, summarize
from bineval_dspy.meta.datasets import MetaRow
from bineval_dspy.meta.methods import RougeMethod, build_scorer, sentence_lines
from bineval_dspy.testing import verdict_json
from tests.conftest import prompt_fields, route_cli_lm
from tests.meta.fixtures import QUALITY, field_of, judge_script, qags_files, summeval_files

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments" / "meta"
ROW = MetaRow(
    id="d/s",
    doc_id="d",
    system_id="s",
    input="the article",
    output="The cats sat on the mat . They were happy !",
    references=["A cat sat on a mat . It was happy .", "Dogs ran in the park . The cats slept ."],
    scores={"relevance": 3.0},
)


def rouge(**options: object) -> float | None:
    method = RougeMethod(name="r", kind="rouge", **options)  # type: ignore[arg-type]
    return build_scorer(method, ["relevance"], "summary")(ROW).scores["relevance"]


@pytest.mark.parametrize("variant", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
@pytest.mark.parametrize("stem", [True, False])
def test_rouge_options_score_as_rouge_score_does(variant, stem):
    scorer = rouge_scorer.RougeScorer([variant], use_stemmer=stem)
    split = sentence_lines if variant == "rougeLsum" else str
    f1s = [scorer.score(split(ref), split(ROW.output))[variant].fmeasure for ref in ROW.references]
    assert rouge(rouge=variant, stemmer=stem) == pytest.approx(max(f1s))
    assert rouge(rouge=variant, stemmer=stem, aggregate="mean") == pytest.approx(np.mean(f1s))
    assert rouge(rouge=variant, stemmer=stem, references="first") == pytest.approx(f1s[0])


def test_summary_level_lcs_reads_sentences_and_differs_from_the_whole_text_lcs():
    assert sentence_lines("One . Two ! Three? four") == "One .\nTwo !\nThree?\nfour"
    swapped = ROW.model_copy(update={"output": "dogs run there . cats sit here .", "references": ["cats sit here . dogs run there ."]})

    def score(variant: str) -> float | None:
        return build_scorer(RougeMethod(name="r", kind="rouge", rouge=variant), ["relevance"], "summary")(swapped).scores["relevance"]

    assert score("rougeL") == pytest.approx(0.5) and score("rougeLsum") == pytest.approx(1.0)  # order across sentences


def test_the_rouge_l_kind_is_rouge_l_only_and_keeps_its_fingerprint():
    old = RougeMethod(name="r", kind="rouge_l")
    assert old.fingerprint_options() == {"name": "r", "lm": None, "kind": "rouge_l", "references": "all", "stemmer": True}
    assert RougeMethod(name="r", kind="rouge", aggregate="mean").fingerprint_options()["aggregate"] == "mean"
    with pytest.raises(ValueError, match='kind "rouge_l" is ROUGE-L; for rouge2 use kind = "rouge"'):
        RougeMethod(name="r", kind="rouge_l", rouge="rouge2").check(["relevance"], "summary", [ROW])


@pytest.mark.parametrize(
    "options, message",
    [
        ('kind = "rouge_l"\nrouge = "rouge2"', "field 'methods.0.rouge': kind \"rouge_l\" is ROUGE-L; for rouge2 use kind = \"rouge\""),
        ('kind = "rouge"\naggregate = "median"', "field 'methods.0.rouge.aggregate': Input should be 'max' or 'mean'"),
    ],
)
def test_a_bad_rouge_option_is_one_located_line(tmp_path, capsys, options, message):
    data = tmp_path / "data"
    data.mkdir()
    summaries, articles = summeval_files(data)
    config = tmp_path / "meta.toml"
    config.write_text(f'run_dir = "run"\n[dataset]\nkind = "summeval"\nsummaries = "{summaries}"\narticles = "{articles}"\n[[methods]]\nname = "r"\n{options}\n')
    assert cli.main(["meta-eval", str(config)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {config}: ") and message in err and len(err.splitlines()) == 1


# -- the system level --------------------------------------------------------------------------------------------
DOCS = [d for d in "abcdef" for _ in range(3)]
SYSTEMS = ["x", "y", "z"] * 6
HUMAN = [4, 3, 1, 5, 2, 2, 3, 3, 1, 4, 1, 2, 5, 4, 2, 3, 2, 2]
METRIC = [0.9, 0.5, 0.2, 0.7, 0.8, 0.1, 0.6, 0.4, 0.3, 0.5, 0.2, 0.6, 0.9, 0.1, 0.3, 0.4, 0.5, 0.0]
SCIPY = {
    "spearman": lambda x, y: stats.spearmanr(x, y).statistic,
    "kendall": lambda x, y: stats.kendalltau(x, y).statistic,
    "pearson": lambda x, y: stats.pearsonr(x, y).statistic,
}


def system_means(human, metric, systems, keep):
    names = sorted(set(systems))
    pairs = [[(h, m) for h, m, s, k in zip(human, metric, systems, keep) for _ in range(k) if s == name] for name in names]
    means = [(round(float(np.mean([h for h, _ in p])), 10), round(float(np.mean([m for _, m in p])), 10)) for p in pairs if p]
    return [h for h, _ in means], [m for _, m in means]


def test_system_level_correlates_each_systems_mean_score_with_its_mean_human_score():
    result = correlate(HUMAN, METRIC, DOCS, systems=SYSTEMS, resamples=0)
    x, y = system_means(HUMAN, METRIC, SYSTEMS, [1] * len(DOCS))
    assert result.systems == 3 and result.system is not None
    for name, reference in SCIPY.items():
        assert getattr(result.system, name).value == pytest.approx(reference(x, y), abs=1e-12)


SPARSE = ["x", "y", "y", "z", "w", "w", "x", "z", "w", "y", "y", "z", "x", "w", "z", "z", "y", "x"]  # not in every document


@pytest.mark.parametrize("systems", [SYSTEMS, SPARSE])
def test_system_level_intervals_are_percentiles_over_resampled_documents(systems):
    order = sorted(set(DOCS))
    counts = resample_counts(len(order), 200, seed=3)
    result = summarize(draws(HUMAN, METRIC, DOCS, order, counts, systems), confidence=0.9)
    for name, reference in SCIPY.items():
        values = []
        for row in counts:
            keep = [int(row[order.index(d)]) for d in DOCS]
            x, y = system_means(HUMAN, METRIC, systems, keep)  # a system no drawn document holds is left out
            if len(set(x)) > 1 and len(set(y)) > 1:
                values.append(reference(x, y))
        estimate = getattr(result.system, name)
        assert [estimate.low, estimate.high] == pytest.approx(list(np.percentile(values, [5, 95])), abs=1e-12)


def test_one_system_leaves_the_system_level_undefined():
    result = correlate(HUMAN, METRIC, DOCS, resamples=50)
    assert result.systems == 1 and result.system is not None and result.system.spearman.value is None


# -- honest summary-level cells ------------------------------------------------------------------------------------
def test_a_summary_cell_on_fewer_than_five_documents_has_no_interval_and_no_place_in_the_average():
    order = sorted(set(DOCS))
    counts = resample_counts(len(order), 100, seed=1)
    wide = draws(HUMAN, METRIC, DOCS, order, counts, SYSTEMS)
    constant = [m if d in "ab" else 0.5 for d, m in zip(DOCS, METRIC)]  # 4 documents constant: 2 left
    thin = draws(HUMAN, constant, DOCS, order, counts, SYSTEMS)
    assert not wide.too_few_documents and thin.too_few_documents
    cell = summarize(thin, 0.95)
    assert cell.summary_documents == 2 and cell.summary.spearman.value is not None and cell.summary.spearman.low is None
    assert summarize(wide, 0.95).summary.spearman.low is not None
    mean = average([wide, thin], 0.95)
    assert mean["summary"].spearman.value is None and mean["dataset"].spearman.value is not None
    assert average([wide, wide], 0.95)["summary"].spearman.value == pytest.approx(wide.point["summary", "spearman"])


# -- every new full-size config at a tiny size -----------------------------------------------------------------------
def tiny(config: str, tmp_path: Path) -> Path:
    """The config as shipped, its data paths swapped for the fixtures' files, its run directory under ``tmp_path``
    and checklist paths made absolute; everything else (the methods and their options) unchanged."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    summaries, articles = summeval_files(data)
    _, unieval = qags_files(data)
    paths = {"run_dir": tmp_path / "run", "summaries": summaries, "articles": articles, "path": unieval}
    text = (EXPERIMENTS / config).read_text()
    for key, value in paths.items():
        text = re.sub(rf'^{key} = ".*"$', f'{key} = "{value}"', text, flags=re.M)
    text = re.sub(r'^checklist = "(.*)"$', lambda m: f'checklist = "{EXPERIMENTS / m.group(1)}"', text, flags=re.M)
    text = re.sub(r"^resamples = \d+$", "resamples = 20", text, flags=re.M)
    assert tomllib.loads(text)["run_dir"] == str(tmp_path / "run")
    path = tmp_path / config
    path.write_text(text)
    return path


def any_script(request: Request) -> str:
    """The scripted judge on SummEval's fixtures; on others (no quality word in the output) yes, and a 3."""
    if any(q in field_of(request, "output").lower() for q in QUALITY):
        return judge_script(request)
    return verdict_json("yes") if "question" in prompt_fields(request) else json.dumps({"score": 3})


@pytest.mark.parametrize(
    "config",
    ["summeval_rouge.toml", "summeval_rouge_decoded.toml", "summeval_holistic_full.toml", "summeval_unieval_full.toml", "qags_cnndm_rouge.toml", "qags_xsum_rouge.toml", "qags_cnndm_full.toml", "qags_xsum_full.toml", "qags_cnndm_30.toml", "qags_xsum_30.toml",
     "qags_cnndm_ablation.toml", "qags_xsum_ablation.toml", "summeval_hybrid_full.toml"],
)
def test_every_full_size_config_runs_at_a_tiny_size(config, tmp_path, monkeypatch):
    route_cli_lm(monkeypatch, any_script)
    assert cli.main(["meta-eval", str(tiny(config, tmp_path))]) == 0
    results = (tmp_path / "run" / "results.md").read_text()
    assert "system Spearman" in results and "Ties: Spearman on average ranks, Kendall tau-b" in results


@pytest.mark.parametrize(
    "hybrid, code, lm",
    [
        ("summeval_hybrid_checklist.json", "summeval_code_checklist.json", "summeval_hybrid_lm_questions_checklist.json"),
        ("qags_hybrid_checklist.json", "qags_code_checklist.json", "qags_lm_question_checklist.json"),
    ],
)
def test_the_ablation_checklists_are_the_hybrid_ones_split_by_who_answers(hybrid, code, lm):
    """The ablation rows read as 'the hybrid's code checks alone' and 'its LM questions alone' only while the files
    hold exactly those questions, in order, with the same task: a hand edit to one of the three fails here."""

    def load(name: str) -> dict:
        return json.loads((EXPERIMENTS / name).read_text())

    whole, by_code, by_lm = load(hybrid), load(code), load(lm)
    assert by_code["questions"] == [q for q in whole["questions"] if q.get("verifier")]
    assert by_lm["questions"] == [q for q in whole["questions"] if not q.get("verifier")]
    for part in (by_code, by_lm):
        assert part["task"] == whole["task"]
        assert part["dimensions"] == [d for d in whole["dimensions"] if any(q["dimension"] == d for q in part["questions"])]


def test_show_and_report_read_the_system_level_and_older_results_without_it(tmp_path, monkeypatch, capsys):
    from bineval_dspy.core.jsonio import load_model
    from bineval_dspy.meta.results import MetaEvalResults
    from bineval_dspy.report.meta_runs import correlation_rows

    assert cli.main(["meta-eval", str(tiny("summeval_rouge.toml", tmp_path))]) == 0
    capsys.readouterr()
    assert cli.main(["show", str(tmp_path / "run")]) == 0
    shown = capsys.readouterr().out
    assert " system " in shown and "1.00 (few" in shown  # three articles: too few for the summary level (cell wraps)
    page = tmp_path / "report.html"
    assert cli.main(["report", str(tmp_path / "run"), "-o", str(page)]) == 0
    html = page.read_text()
    assert '<th colspan="3">system</th>' in html and 'data-stat="system-spearman"' in html and "(too few docs)" in html
    path = tmp_path / "run" / "results.json"
    rows = correlation_rows(load_model(path, MetaEvalResults))
    assert rows[0].levels["system"].spearman.value is not None
    raw = json.loads(path.read_text())
    for method in raw["methods"]:
        for cell in method["correlations"].values():
            del cell["system"]
        if method["average"] is not None:
            del method["average"]["system"]
    path.write_text(json.dumps(raw))
    older = correlation_rows(load_model(path, MetaEvalResults))
    assert older[0].levels["system"].spearman.value is None and older[0].levels["summary"] == rows[0].levels["summary"]


def test_results_rank_the_systems_by_their_means_and_skip_a_single_system(tmp_path, monkeypatch):
    assert cli.main(["meta-eval", str(tiny("summeval_rouge.toml", tmp_path))]) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["human_system_means"]["coherence"] == {"M0": 5.0, "M1": 3.0, "M2": 1.0}
    rouge_1 = next(m for m in results["methods"] if m["name"] == "rouge-1")["system_means"]["coherence"]
    assert rouge_1["M0"] > rouge_1["M1"] > rouge_1["M2"]
    markdown = (tmp_path / "run" / "results.md").read_text()
    assert "## System rankings" in markdown and "| M0 | 5.000 (1) |" in markdown and "| M2 | 1.000 (3) |" in markdown
    qags = tmp_path / "qags"
    qags.mkdir()
    assert cli.main(["meta-eval", str(tiny("qags_xsum_rouge.toml", qags))]) == 0
    assert "## System rankings" not in (qags / "run" / "results.md").read_text()  # one system: nothing to rank


def test_length_baseline_scores_words_for_every_dimension_without_an_lm():
    method = MetaEvalConfig.model_validate(
        {"run_dir": "r", "dataset": {"kind": "summeval", "summaries": "s.jsonl", "articles": "a.jsonl"}, "methods": [{"name": "length", "kind": "length"}]}
    ).methods[0]
    assert not method.uses_lm
    assert build_scorer(method, ["relevance", "fluency"], "summary")(ROW).scores == {"relevance": 9.0, "fluency": 9.0}  # punctuation is no word
