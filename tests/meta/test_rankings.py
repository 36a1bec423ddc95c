"""System rankings (issue 21): each method's ranking of the systems beside the humans', in ``results.md``,
``bineval show`` and ``bineval report``: the columns the system level correlates."""

from __future__ import annotations

from pathlib import Path

from bineval_dspy import cli
from bineval_dspy.core.console import console
from bineval_dspy.meta.report import markdown, system_rankings
from bineval_dspy.meta.results import MetaEvalResults, MethodResult
from bineval_dspy.report import MetaEvaluation, load_runs, render
from tests.report import builders


def _results(human: dict[str, float], methods: dict[str, dict[str, float]]) -> MetaEvalResults:
    return MetaEvalResults(
        dataset="summeval",
        lm=None,
        documents=2,
        outputs=2 * len(human),
        dimensions=["coherence"],
        resamples=0,
        confidence=0.95,
        run_dir=Path("."),
        methods=[
            MethodResult(
                name=name,
                kind="rouge",
                outputs=2 * len(human),
                missing={},
                correlations={},
                average=None,
                lm_calls_per_output=0.0,
                seconds_per_output=0.0,
                system_means={"coherence": means},
            )
            for name, means in methods.items()
        ],
        human_system_means={"coherence": human},
    )


def test_systems_come_in_the_humans_order_with_ties_sharing_the_better_rank():
    results = _results(
        {"M1": 2.0, "M2": 4.5, "M3": 3.0},
        {"flat": {"M1": 0.5, "M2": 0.5, "M3": 0.1}, "partial": {"M1": 0.2, "M3": 0.9}, "one": {"M2": 1.0}},
    )
    (ranking,) = system_rankings(results)
    assert list(ranking.human) == ["M2", "M3", "M1"]
    assert ranking.human["M2"] == (4.5, 1) and ranking.human["M1"] == (2.0, 3)
    assert ranking.methods["flat"] == {"M1": (0.5, 1), "M2": (0.5, 1), "M3": (0.1, 3)}
    assert ranking.methods["partial"] == {"M1": (0.2, 2), "M3": (0.9, 1)}  # M2 unscored: absent, not last
    assert "one" not in ranking.methods  # one system cannot be ranked
    text = markdown(results)
    assert "| M2 | 4.500 (1) | 0.500 (1) | - |" in text and "| M1 | 2.000 (3) | 0.500 (1) | 0.200 (2) |" in text


def test_a_run_of_one_system_has_no_ranking():
    assert system_rankings(_results({"qags": 3.0}, {"rouge-1": {"qags": 0.4}})) == []


def test_show_and_report_put_each_method_s_ranks_beside_the_humans(tmp_path, monkeypatch, capsys):
    config = builders.meta_run(tmp_path, monkeypatch)  # three systems: good (M0), fair (M1), bad (M2) summaries
    (run,) = load_runs(config)
    assert isinstance(run, MetaEvaluation) and [r.dimension for r in run.rankings] == ["coherence", "consistency", "fluency", "relevance"]
    relevance = run.rankings[-1]
    assert [rank for _, rank in relevance.human.values()] == [1, 2, 3] and list(relevance.human) == ["M0", "M1", "M2"]
    assert relevance.methods["rouge-l"]["M2"][1] == 3  # "a cat sat" shares no word with the references
    html = render([run])
    assert html.count('<table class="numbers rankings"') == 4 and '<tr data-system="M2"><td class="text">M2</td>' in html
    monkeypatch.setattr(console, "width", 80)
    capsys.readouterr()
    assert cli.main(["show", str(config)]) == 0
    out = capsys.readouterr().out
    assert "system ranks on relevance (1 = highest mean; means: results.md)" in out
    lines = [line.split() for line in out.splitlines()]
    assert ["by", "M0", "M1", "M2"] in lines and ["human", "1", "2", "3"] in lines
    assert ["bineval", "1", "2", "2"] in lines and ["rouge-l", "1", "2", "3"] in lines  # bineval ties M1 and M2
    assert all(len(line) <= 80 for line in out.splitlines())
    (config.parent / "runs" / "meta" / "results.json").unlink()  # a run that has not written it: no rankings, no error
    (bare,) = load_runs(config)
    assert isinstance(bare, MetaEvaluation) and bare.rankings == [] and "rankings" not in render([bare])
