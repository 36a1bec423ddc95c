"""How many labels (issue 56, item 4) and a head at chance said plainly (issue 57, items 1, 5 and 12): the learning
curve's sizes and grouped splits at tiny size, the chance warning, `judge --program`'s line on its head, the
`limit` key, and probe verdicts named as the probe's. States come from a fake reader (synthetic features)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from bineval_dspy import cli
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.probe import LabeledExample, Probe, ProbeHead, ProbeRecord
from bineval_dspy.judges.standing import Majority, chance_reasons, standing_of
from bineval_dspy.lm.hidden import Reading
from bineval_dspy.optimize.calibrate import CalibrationResults, figures_of
from bineval_dspy.optimize.calibrate_steps import predict
from bineval_dspy.optimize.learning_curve import CurveSettings, learning_curve, sides, subsample
from bineval_dspy.programs.state import PROGRAM_FILE, ProgramFile, load_program
from bineval_dspy.stats.bootstrap import Bootstrap, Interval
from tests.conftest import route_cli_lm, verdict_json

MODEL = "fake/states"


class _Tokenizer:
    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        return "\n".join(m["content"] for m in messages)


class FakeReader:
    """States of 4 layers x 8 dims: noise seeded by the prompt, and on layer 2 a signal when the output says "good"
    (with ``signal`` off, none: a head on these states is at chance)."""

    model = MODEL
    backend = "torch"

    def __init__(self, signal: bool = True) -> None:
        self.signal = signal
        self.computed = 0

    def tokenizer(self) -> _Tokenizer:
        return _Tokenizer()

    def depth(self) -> int:
        return 3

    def read(self, prompts, spans=None):
        out = []
        for p in prompts:
            rng = np.random.default_rng(int(hashlib.sha256(p.encode()).hexdigest()[:8], 16))
            hidden = rng.normal(size=(4, 8)).astype(np.float32)
            if self.signal:
                hidden[2, 0] += 3.0 if "Output:\ngood" in p else -3.0
            out.append(Reading(hidden=hidden, gap=float(rng.normal()), pooled={"output": hidden, "question": hidden}))
        self.computed += len(prompts)
        return out


def rows(tasks: int, start: int = 0) -> list[dict[str, str]]:
    """Two outputs (a good one, a bad one) x 3 questions per task: 6 rows a task, half yes."""
    out = []
    for k in range(start, start + tasks):
        for good in (True, False):
            for q in range(3):
                output = f"good answer {k}" if good else f"bad answer {k}"
                out.append({"input": f"task {k}", "output": output, "question": f"Q{q}?", "reference": "yes" if good else "no", "example_id": f"t{k}"})
    return out


def examples(tasks: int) -> list[LabeledExample]:
    return [LabeledExample(input=r["input"], output=r["output"], question=r["question"], reference=r["reference"], group=r["example_id"]) for r in rows(tasks)]  # type: ignore[arg-type]


def write(path: Path, data: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in data))
    return path


# -- the curve's splits ---------------------------------------------------------------------------------------------
def test_a_size_is_whole_tasks_cut_to_the_size_and_seeded():
    train = examples(10)
    drawn = subsample(train, 20, seed=1)
    assert len(drawn) == 20
    by_task = {e.group: sum(x.group == e.group for x in drawn) for e in drawn}
    assert sorted(by_task.values()) == [2, 6, 6, 6]  # three whole tasks, the last one cut
    assert subsample(train, 20, seed=1) == drawn and subsample(train, 20, seed=2) != drawn


def test_folds_hold_out_whole_tasks_and_never_train_on_them():
    train = examples(9)
    parts = sides(train, [], folds=3, seed=0)
    assert len(parts) == 3 and sorted(i for _, held in parts for i in held) == list(range(len(train)))
    for rows_, held in parts:
        assert not {e.group for e in rows_} & {train[i].group for i in held}


def test_the_curve_runs_each_size_below_the_labels_available_on_grouped_splits():
    train, test = examples(12), examples(16)[72:]
    seen: list[tuple[int, set[str]]] = []

    def fit(rows_, seed):
        seen.append((len(rows_), {e.group for e in rows_}))
        return lambda held: (np.array([0.9 if "good" in e.output else 0.1 for e in held]), ["yes" if "good" in e.output else "no" for e in held])

    curve = learning_curve(train, test, fit, CurveSettings(sizes=[10, 30, 100], repeats=2), seed=0)
    assert curve.held_out == "test file" and curve.held_out_rows == 24 and curve.dropped == [100]
    assert [(p.labels, p.all, p.heads) for p in curve.points] == [(10, False, 2), (30, False, 2), (72, True, 1)]
    assert [n for n, _ in seen] == [10, 10, 30, 30, 72]
    assert all(not groups & {e.group for e in test} for _, groups in seen)
    assert curve.points[-1].kappa.estimate == pytest.approx(1.0) and curve.confusion == {"yes/yes": 12, "yes/no": 0, "no/yes": 0, "no/no": 12}
    assert [(b.low, b.rows, b.yes_rate) for b in curve.reliability] == [(0.1, 12, 0.0), (0.9, 12, 1.0)]
    folds = learning_curve(train, [], fit, CurveSettings(sizes=[10], folds=3), seed=0)
    assert folds.held_out == "grouped folds" and folds.held_out_rows == 72 and folds.folds == 3
    assert [p.labels for p in folds.points] == [10, 48]


def test_the_progress_counts_the_heads_it_trains_as_its_total_says():
    """The calibrate run's bar read 5/4: the run's own head, reused as the all-labels point, was counted as trained."""
    from bineval_dspy.optimize.learning_curve import fits_needed

    train, test = examples(12), examples(16)[72:]

    def fit(rows_, seed):
        return lambda held: (np.full(len(held), 0.9), ["yes"] * len(held))

    settings = CurveSettings(sizes=[10, 30], repeats=2)
    for held, full in ((test, fit(train, 0)), (test, None), ([], None)):
        ticks: list[int] = []
        learning_curve(train, held, fit, settings, seed=0, full=full, advance=lambda ticks=ticks: ticks.append(1))
        assert len(ticks) == fits_needed(train, held, settings, 0, full=full is not None)


def test_a_draw_that_cannot_train_is_said_never_a_figure():
    def fit(rows_, seed):
        from bineval_dspy.core.errors import InputError

        raise InputError("probe training data: the references need both answers, yes and no")

    curve = learning_curve(examples(6), examples(8)[36:], fit, CurveSettings(sizes=[6]), full=None)
    assert curve.points[0].heads == 0 and "both answers" in curve.points[0].skipped[0]
    assert curve.points[0].kappa.estimate is None and "not measured" in curve.lines()[1]


# -- chance -----------------------------------------------------------------------------------------------------------
def constant_yes() -> Probe:
    head = ProbeHead(layer=2, strength=0.01, mean=[0.0] * 9, scale=[1.0] * 9, weights=[0.0] * 9, bias=10.0, threshold=0.5)
    record = ProbeRecord(model=MODEL, labels="test", rows=36, yes_share=0.5, groups=["t0"], folds=2, candidates=[], validation={"kappa": 0.0, "agreement": 0.5})
    return Probe(instructions="Judge.", head=head, record=record)


def test_a_constant_yes_head_is_at_chance_on_both_counts():
    test = [e for e in examples(10) if e.reference == "yes" or e.question == "Q0?"]  # 30 yes, 10 no
    p, answers = predict(constant_yes(), FakeReader(), test)  # type: ignore[arg-type]
    figures = figures_of(Bootstrap([e.group for e in test], 1000, 0), p, answers, [e.reference for e in test])
    majority = Majority.of([e.reference for e in test])
    assert majority == Majority(answer="yes", agreement=0.75)
    reasons = chance_reasons(figures["kappa"], figures["agreement"].estimate, majority)
    assert len(reasons) == 2 and "does not exclude 0" in reasons[0] and "always answering 'yes' (0.750)" in reasons[1]
    assert chance_reasons(Interval(estimate=0.4, low=0.2, high=0.6), 0.8, majority) == []


def test_calibrate_says_a_head_at_chance_and_records_the_curve(tmp_path, monkeypatch, capsys):
    import bineval_dspy.lm.hidden as hidden

    write(tmp_path / "train.jsonl", rows(12))
    write(tmp_path / "test.jsonl", rows(6, start=12))
    config = 'run_dir = "{run}"\nlimit = {limit}\n[data]\ntrain = ["train.jsonl"]\ntest = "test.jsonl"\n[probe]\nlayers = [1, 2]\nstrengths = [0.1]\nfolds = 3\n[curve]\nsizes = [12, 30, 500]\n'
    (tmp_path / "cal.toml").write_text(config.format(run="run", limit=10))
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes"), model=MODEL)
    monkeypatch.setattr(hidden, "reader_for", lambda lm, cache, source="", backend="torch": FakeReader(signal=False))
    assert cli.main(["calibrate", str(tmp_path / "cal.toml")]) == 0
    out, err = capsys.readouterr()
    results = CalibrationResults.model_validate_json((tmp_path / "run" / "results.json").read_text())
    assert results.record["rows"] == 60 and results.test_rows == 36  # limit 10: the first 10 tasks of train, all 6 of test
    assert results.standing is not None and results.standing.at_chance and results.test_majority is not None
    assert "(!) AT CHANCE on the test split" in out and "agreement 0.417 [0.250, 0.583] (always 'yes' agrees 0.500)" in out
    assert results.curve is not None and results.curve.held_out == "test file" and results.curve.dropped == [500]
    assert [p.labels for p in results.curve.points] == [12, 30, 60] and "learning curve on 36 held-out rows" in out
    assert "reading states: 60 training rows, 20 outputs of 10 task(s)" in err and "state(s) computed" in err

    monkeypatch.setattr(hidden, "reader_for", lambda lm, cache, source="", backend="torch": FakeReader(signal=True))
    (tmp_path / "good.toml").write_text(config.format(run="good", limit=12))
    assert cli.main(["calibrate", str(tmp_path / "good.toml")]) == 0
    out = capsys.readouterr().out
    good = CalibrationResults.model_validate_json((tmp_path / "good" / "results.json").read_text())
    assert good.standing is not None and not good.standing.at_chance and "AT CHANCE" not in out
    assert good.curve is not None and good.curve.points[-1].kappa.estimate >= 0.9  # a head with real signal (one miss at the calibrated threshold)


# -- a head loaded for judging ----------------------------------------------------------------------------------------
def saved(folder: Path, probe: Probe, test: dict[str, Interval] | None) -> None:
    ProgramFile.of(BinaryJudge(explanations="none", probability=True, probe=probe)).save(folder / PROGRAM_FILE)
    if test is not None:
        results = CalibrationResults(probe=probe.digest(), record={}, test_rows=40, test=test, test_majority=Majority(answer="yes", agreement=0.82))
        (folder / "results.json").write_text(results.model_dump_json())


def test_loading_a_head_repeats_its_test_figures_and_warns_at_chance(tmp_path, capsys):
    from bineval_dspy.judges import standing

    standing._print_once.cache_clear()  # once a process: another test may have loaded the same head
    at_chance = {"kappa": Interval(estimate=0.0, low=-0.166, high=0.137), "agreement": Interval(estimate=0.393)}
    saved(tmp_path, constant_yes(), at_chance)
    load_program(tmp_path, "judge")
    err = capsys.readouterr().err
    assert "probe head, test (40 rows): kappa 0.000 [-0.166, 0.137]" in err and "(always 'yes': 0.820)" in err
    assert "AT CHANCE" in err and "does not exclude 0" in err and "does not beat always answering 'yes'" in err
    other = tmp_path / "other"
    other.mkdir()
    saved(other, constant_yes(), None)  # no test recorded: the training record's out-of-fold figures
    found = standing_of(other, load_program(other, "judge")._probe)  # type: ignore[arg-type]
    assert found.source == "out-of-fold" and found.at_chance


def test_judge_program_says_its_head_is_at_chance_in_the_table_and_header_and_names_the_probe(tmp_path, monkeypatch, capsys):
    import bineval_dspy.lm.hidden as hidden

    saved(tmp_path, constant_yes(), {"kappa": Interval(estimate=0.0, low=-0.1, high=0.1), "agreement": Interval(estimate=0.5)})
    checklist = tmp_path / "checklist.json"
    checklist.write_text(Checklist(task="t", dimensions=["d"], questions=[Question(id="q1", text="Is it good?", dimension="d")]).model_dump_json())
    data = write(tmp_path / "rows.jsonl", [{"input": "a", "output": "good"}, {"input": "a", "output": "bad"}])
    route_cli_lm(monkeypatch, lambda r: verdict_json("no"), model=MODEL)
    monkeypatch.setattr(hidden, "reader_for", lambda lm, cache, source="", backend="torch": FakeReader())
    out = tmp_path / "out.jsonl"
    assert cli.main(["judge", "--checklist", str(checklist), "--data", str(data), "-o", str(out), "--program", str(tmp_path)]) == 0
    stdout = capsys.readouterr().out
    assert "(!) probe head, test (40 rows)" in stdout and "AT CHANCE" in stdout
    header = json.loads(out.with_name(out.name + ".run.json").read_text())
    assert "AT CHANCE" in header["probe_head"]
    verdicts = [v for line in out.read_text().splitlines() for v in json.loads(line)["bineval"]["scorecard"]["verdicts"]]
    assert {v["judge"] for v in verdicts} == {f"probe:{MODEL}"} and {v["answer"] for v in verdicts} == {"yes"}
    assert cli.main(["show", str(out)]) == 0
    assert "AT CHANCE" in capsys.readouterr().out
    assert cli.main(["report", str(out), "-o", str(tmp_path / "report.html")]) == 0
    page = (tmp_path / "report.html").read_text()
    assert "AT CHANCE" in page and f"probe:{MODEL}" in page


def test_the_report_draws_the_curve_the_reliability_and_the_confusion_of_a_calibration(tmp_path, monkeypatch, capsys):
    import bineval_dspy.lm.hidden as hidden

    write(tmp_path / "train.jsonl", rows(12))
    (tmp_path / "cal.toml").write_text('run_dir = "run"\n[data]\ntrain = ["train.jsonl"]\n[probe]\nlayers = [2]\nstrengths = [0.1]\nfolds = 2\n[curve]\nsizes = [12]\nfolds = 3\n')
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes"), model=MODEL)
    monkeypatch.setattr(hidden, "reader_for", lambda lm, cache, source="", backend="torch": FakeReader())
    assert cli.main(["calibrate", str(tmp_path / "cal.toml")]) == 0
    assert "learning curve on 72 held-out rows of 12 task(s) (3 grouped held-out folds of the training rows)" in capsys.readouterr().out
    assert cli.main(["report", str(tmp_path / "run" / "results.json"), "-o", str(tmp_path / "report.html")]) == 0
    page = (tmp_path / "report.html").read_text()
    assert "How many labels" in page and "3 grouped folds of the training rows" in page and "answered yes" in page
    assert "learning curve: 72 held-out rows" in page and "reliability: P(yes) against the observed yes rate" in page


def test_meta_evals_probe_key_repeats_the_heads_figures_too(tmp_path, capsys):
    from bineval_dspy.judges import standing
    from bineval_dspy.meta.methods import BinEvalMethod

    standing._print_once.cache_clear()  # once a process: another test may have loaded the same head
    saved(tmp_path, constant_yes(), {"kappa": Interval(estimate=0.05, low=-0.02, high=0.12), "agreement": Interval(estimate=0.7)})
    method = BinEvalMethod(name="probe", kind="bineval", probe=tmp_path)
    assert method.trained_probe() is not None
    err = capsys.readouterr().err
    assert "probe head, test (40 rows): kappa 0.050 [-0.020, 0.120]" in err and "AT CHANCE" in err
