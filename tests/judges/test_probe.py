"""A probe judge: states read from the embedded model at its real size, a head fitted and saved in a program, a
failed reading unanswered, and no task's questions on both sides of a split."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.probe import (
    LabeledExample,
    Probe,
    ProbeHead,
    ProbeRecord,
    best_threshold,
    examples_file,
    fit_head,
    fit_probe,
    grouped_folds,
)
from bineval_dspy.lm.hidden import Reading, reader_for
from bineval_dspy.programs.state import PROBE_FILE, PROGRAM_FILE, ProgramFile, load_program


def _readings(n: int, signal_layer: int, seed: int = 0) -> tuple[list[Reading], np.ndarray, list[str]]:
    """Readings of 4 layers x 8 dims where only ``signal_layer`` carries the label; groups of 3 rows."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.7).astype(float)
    out = []
    for label in y:
        hidden = rng.normal(size=(4, 8)).astype(np.float32)
        hidden[signal_layer, 0] += 2.5 * (label - 0.5)
        out.append(Reading(hidden=hidden, gap=float(rng.normal())))
    return out, y, [f"task{k // 3}" for k in range(n)]


def test_the_head_finds_the_layer_that_carries_the_label_and_beats_chance_on_new_rows():
    readings, y, groups = _readings(240, signal_layer=2)
    head, candidates, oof = fit_head(readings, y, groups, layers=[1, 2, 3], strengths=[0.01, 0.1], folds=4)
    assert all(2 in m.features.layers for m in head.members)
    assert {c.layer for c in candidates} == {1, 2, 3} and len([c for c in candidates if c.features is None]) == 6  # single layers, last token
    fresh, y_new, _ = _readings(200, signal_layer=2, seed=1)
    answers = head.p_yes(fresh) >= head.threshold
    recall_yes, recall_no = answers[y_new == 1].mean(), (~answers[y_new == 0]).mean()
    assert (recall_yes + recall_no) / 2 > 0.75  # balanced accuracy: a yes-sayer scores 0.5


def test_the_threshold_is_fitted_not_a_half():
    p = np.array([0.9, 0.85, 0.8, 0.75, 0.7, 0.6])
    y = np.array([1, 1, 1, 0, 0, 0])
    assert best_threshold(p, y) == pytest.approx(0.8)


def test_folds_never_split_a_task():
    groups = [f"t{k % 17}" for k in range(200)]
    folds = grouped_folds(groups, 5, seed=3)
    for task in set(groups):
        assert len({int(f) for f, g in zip(folds, groups) if g == task}) == 1


def test_a_task_on_both_sides_is_refused_before_any_state_is_read():
    examples = [LabeledExample(input="i", output="o", question="q", reference=r, group=g) for r, g in (("yes", "a"), ("no", "b"))]

    class Unread:
        model = "m"

        def read(self, prompts):  # pragma: no cover - the leak check comes first
            raise AssertionError("read before the leak check")

    with pytest.raises(InputError, match="task 'b' is also in the test split"):
        fit_probe(examples, Unread(), labels="x", test_groups=["b", "c"])  # type: ignore[arg-type]


def _probe(model: str = "m") -> Probe:
    head = ProbeHead(layer=1, strength=0.01, mean=[0.0] * 9, scale=[1.0] * 9, weights=[0.1] * 9, bias=0.0, threshold=0.5)
    record = ProbeRecord(model=model, labels="test", rows=2, yes_share=0.5, groups=["a"], folds=2, candidates=[], validation={})
    return Probe(instructions="Judge.", head=head, record=record)


class _FailingReader:
    model = "m"
    backend = "torch"

    def tokenizer(self):
        raise RuntimeError("out of memory")


def test_a_reading_that_fails_leaves_every_question_unanswered():
    questions = [Question(id="q1", text="Is it good?", dimension="d"), Question(id="q2", text="Is it short?", dimension="d")]
    verdicts = _probe().verdicts(_FailingReader(), "in", "out", questions, "judge")  # type: ignore[arg-type]
    assert {v.answer for v in verdicts.values()} == {"unanswered"}
    assert all("no probe reading: RuntimeError: out of memory" in v.explanation for v in verdicts.values())
    assert all(v.p_yes is None for v in verdicts.values())


def test_a_head_for_another_model_answers_nothing():
    verdicts = _probe(model="other").verdicts(_FailingReader(), "in", "out", [Question(id="q", text="?", dimension="d")], "judge")  # type: ignore[arg-type]
    assert verdicts["q"].answer == "unanswered" and "reads other's states" in verdicts["q"].explanation


def test_a_head_records_its_backend_and_answers_nothing_through_another():
    torch_head, llama_head = _probe(), _probe()
    llama_head.record.backend = "llama"
    assert "backend" not in json.loads(torch_head.model_dump_json())["record"]  # a torch head's file is as before
    assert json.loads(llama_head.model_dump_json())["record"]["backend"] == "llama"
    assert Probe.model_validate_json(llama_head.model_dump_json()).record.backend == "llama"
    verdicts = llama_head.verdicts(_FailingReader(), "in", "out", [Question(id="q", text="?", dimension="d")], "judge")  # type: ignore[arg-type]
    assert verdicts["q"].answer == "unanswered" and "trained on llama states" in verdicts["q"].explanation


def test_a_remote_lm_is_refused_in_one_line():
    import dspy

    with pytest.raises(InputError, match="only a model in this process gives"):
        reader_for(dspy.LM("openai/gpt-4o-mini"), None)


def test_the_probe_cannot_go_with_decoding_options():
    with pytest.raises(ValueError, match="probe: a probe reads one state per question"):
        BinaryJudge(samples=3, probe=_probe())
    with pytest.raises(ValueError, match="content-free"):
        BinaryJudge(calibration="content_free", probe=_probe())


def test_the_program_round_trips_and_refuses_another_head(tmp_path):
    judge = BinaryJudge(explanations="none", probability=True, probe=_probe())
    ProgramFile.of(judge).save(tmp_path / PROGRAM_FILE)
    saved = json.loads((tmp_path / PROGRAM_FILE).read_text())
    assert saved["probe"]["path"] == PROBE_FILE
    built = load_program(tmp_path, "judge").build()
    assert isinstance(built, BinaryJudge) and built.probe is not None
    assert built.probe.digest() == judge.probe.digest() and built.spec().probe == judge.spec().probe
    assert built.spec().probe is not None and BinaryJudge().spec().model_dump().get("probe") is None  # old specs unchanged
    probe = json.loads((tmp_path / PROBE_FILE).read_text())
    probe["head"]["threshold"] = 0.1
    (tmp_path / PROBE_FILE).write_text(json.dumps(probe))
    with pytest.raises(InputError, match="field 'probe.digest'"):
        load_program(tmp_path, "judge")
    (tmp_path / PROBE_FILE).unlink()
    with pytest.raises(InputError, match="field 'probe.path'.*not found"):
        load_program(tmp_path, "judge")


def test_examples_files_name_the_line_and_field(tmp_path):
    path = tmp_path / "ex.jsonl"
    path.write_text(json.dumps({"input": "i", "output": "o", "question": "q", "reference": "maybe"}) + "\n")
    with pytest.raises(InputError, match=r"ex.jsonl:1: field 'reference'"):
        examples_file(path)


# -- the embedded model at its real size ------------------------------------------------------------------------------
@pytest.mark.embedded
def test_states_are_read_fitted_cached_and_judged_on_the_embedded_model(tmp_path, monkeypatch):
    import dspy

    from bineval_dspy.lm.cache import install
    from bineval_dspy.lm.specs import make_lm

    install(tmp_path / "cache")
    lm = make_lm("smollm2")
    reader = reader_for(lm, tmp_path / "cache")
    outputs = {"Name three colors.": ["Red, green and blue.", "I like trains."], "Say hello.": ["Hello!", "Goodbye."]}
    examples = [
        LabeledExample(input=task, output=out, question=f"Does the output {q}?", reference="yes" if k == 0 else "no", group=task)
        for task, outs in outputs.items() for k, out in enumerate(outs) for q in ("answer the task", "stay on topic")
    ]  # fmt: skip
    probe = fit_probe(examples, reader, labels="hand labels", layers=[6, 30], strengths=[0.01], folds=2)
    assert probe.record.model == lm.model and probe.record.rows == 8 and set(probe.record.groups) == set(outputs)
    assert reader.computed == 8
    fresh = type(reader)(reader.gguf, reader.model, tmp_path / "cache")
    from bineval_dspy.judges.probe import read_examples

    cached = read_examples(fresh, probe.instructions, examples)
    assert fresh.computed == 0 and cached[0].hidden.shape == (31, 576)
    assert set(cached[0].pooled) == {"output", "question"} and cached[0].pooled["output"].shape == (31, 576)
    assert np.array_equal(cached[0].pooled["output"], cached[1].pooled["output"])  # the output precedes its questions
    from bineval_dspy.judges.probe import probe_text

    # the walk pooled the output from the states it kept of the shared prefix: the same as a prompt read alone
    text, spans = probe_text(reader.tokenizer(), probe.instructions, examples[1].input, examples[1].output, examples[1].question)
    alone = type(reader)(reader.gguf, reader.model, None).read([text], [spans])[0]
    for pooling in ("last", "output", "question"):
        a, b = alone.states(pooling), cached[1].states(pooling)
        assert np.linalg.norm(a - b) / np.linalg.norm(b) < 1e-2, pooling
    judge = BinaryJudge(explanations="none", probability=True, probe=probe)
    checklist = Checklist(task="t", dimensions=["d"], questions=[Question(id="q", text="Does the output answer the task?", dimension="d")])
    with dspy.context(lm=lm):
        card = judge(input="Say hello.", output="Hello!", checklist=checklist)
    verdict = card.verdicts[0]
    assert verdict.answer in ("yes", "no") and verdict.p_yes is not None and verdict.explanation.startswith("probe: P(yes)")
    assert card.judge is not None and card.judge.probe == probe.digest()
    assert reader.computed == 8  # that prompt was read while training: the judge's reading came from the cache


def test_cross_fitting_never_scores_a_group_with_a_head_that_saw_it(monkeypatch):
    from bineval_dspy.meta import probe as meta_probe

    readings, _, _ = _readings(120, signal_layer=1)
    groups = [f"doc{k % 10}" for k in range(120)]
    human = [float(k % 5) for k in range(120)]
    trained_on: list[set[str]] = []
    real = meta_probe.fit_head

    def recording(readings, y, groups, **kwargs):
        trained_on.append(set(groups))
        return real(readings, y, groups, **kwargs)

    monkeypatch.setattr(meta_probe, "fit_head", recording)
    p, heads = meta_probe.cross_fitted(
        readings, human, ["d"] * 120, groups, folds=5, inner_folds=2, layers=[1, 2], strengths=[0.01], seed=0
    )
    assert not np.isnan(p).any() and len(heads) == 5
    folds = grouped_folds(groups, 5, 0)
    for head, seen in zip(heads, trained_on):
        held = {g for g, f in zip(groups, folds) if f == head["fold"]}
        assert held and not held & seen  # the scored documents were never trained on


@pytest.mark.embedded
def test_calibrate_trains_saves_and_scores_held_out_tasks(tmp_path, capsys):
    from bineval_dspy import cli

    rows = []
    for k in range(6):
        task = f"Write one sentence about the number {k}."
        for good, output in ((True, f"The number {k} is small."), (False, "Bananas are yellow.")):
            for q in ("Is the output about the number?", "Is the output one sentence?"):
                rows.append({"input": task, "output": output, "question": q, "reference": "yes" if good or "sentence" in q else "no", "example_id": f"t{k}"})
    train, test = rows[:16], rows[16:]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train))
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in test))
    (tmp_path / "cal.toml").write_text(
        'run_dir = "run"\n[data]\ntrain = ["train.jsonl"]\ntest = "test.jsonl"\n[probe]\nlayers = [9, 30]\nstrengths = [0.01]\nfolds = 2\n'
    )
    code = cli.main(["calibrate", str(tmp_path / "cal.toml"), "--cache-dir", str(tmp_path / "cache")])
    assert code == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert "kind" not in results and results["test_rows"] == 8
    header = json.loads((tmp_path / "run" / "results.json.run.json").read_text())
    assert (header["kind"], header["status"]) == ("calibration", "finished")  # the run's one header, the one carrier of its kind
    assert set(results["test"]) == {"kappa", "balanced_accuracy", "auroc", "agreement"}
    assert set(results["record"]["groups"]) == {f"t{k}" for k in range(4)}  # the test tasks were never trained on
    assert "test (8 rows)" in capsys.readouterr().out
    program = load_program(tmp_path / "run", "judge")
    assert program.probe is not None and program.build().probe is not None
    from bineval_dspy.lm.specs import make_lm
    from bineval_dspy.testing.assertions import BinevalAssertionError, assert_passes

    checklist = Checklist(task="t", dimensions=["d"], questions=[Question(id="q", text="Is the output about the number?", dimension="d")])
    try:  # the pytest assertion answers with the saved probe judge
        card = assert_passes("The number 5 is small.", checklist=checklist, input="Write one sentence about the number 5.", lm=make_lm("smollm2"), judge=tmp_path / "run")
    except BinevalAssertionError as failed:
        card = failed.scorecard
    assert card.verdicts[0].explanation.startswith("probe: P(yes)")
    (tmp_path / "again.toml").write_text(  # another head, scored beside the first on the same test rows
        'run_dir = "run3"\nbaselines = ["run"]\n[data]\ntrain = ["train.jsonl"]\ntest = "test.jsonl"\n[probe]\nlayers = [9]\nstrengths = [0.01]\nfolds = 2\n[curve]\nsizes = []\n'
    )
    assert cli.main(["calibrate", str(tmp_path / "again.toml"), "--cache-dir", str(tmp_path / "cache")]) == 0
    again = json.loads((tmp_path / "run3" / "results.json").read_text())
    compared = again["baselines"][str((tmp_path / "run").resolve())]
    assert compared["probe"] == json.loads((tmp_path / "run" / "results.json").read_text())["probe"]
    assert compared["test"]["auroc"] == results["test"]["auroc"]  # the first head's own figure, measured again
    assert compared["difference"]["auroc"]["estimate"] == pytest.approx(again["test"]["auroc"]["estimate"] - results["test"]["auroc"]["estimate"])
    assert "this run's head minus it, paired over tasks" in capsys.readouterr().out
    (tmp_path / "nobase.toml").write_text('run_dir = "run4"\nbaselines = ["missing"]\n[data]\ntrain = ["train.jsonl"]\ntest = "test.jsonl"\n')
    assert cli.main(["calibrate", str(tmp_path / "nobase.toml"), "--cache-dir", str(tmp_path / "cache")]) == 2
    assert "missing: no such file or folder" in capsys.readouterr().err and not (tmp_path / "run4" / "results.json").exists()
    (tmp_path / "leak.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[14:]))
    (tmp_path / "leak.toml").write_text('run_dir = "run2"\n[data]\ntrain = ["train.jsonl"]\ntest = "leak.jsonl"\n')
    assert cli.main(["calibrate", str(tmp_path / "leak.toml"), "--cache-dir", str(tmp_path / "cache")]) == 2
    assert "also in the test split" in capsys.readouterr().err


def test_a_damaged_states_cache_is_one_line_naming_the_file(tmp_path):
    from bineval_dspy.lm.hidden import HiddenStates

    (tmp_path / "hidden.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(InputError, match=r"hidden.sqlite: not a usable cache of hidden states .* delete it"):
        HiddenStates(tmp_path / "m.gguf", "m", tmp_path)


def test_a_layer_the_model_lacks_is_refused_before_any_state_is_read():
    examples = [LabeledExample(input="i", output="o", question="q", reference=r, group=g) for r, g in (("yes", "a"), ("no", "b"))]

    class Shallow:
        model = "m"

        def depth(self):
            return 30

        def read(self, prompts):  # pragma: no cover - the layer check comes first
            raise AssertionError("read before the layer check")

    with pytest.raises(InputError, match="the model has layers 0-30, got 99"):
        fit_probe(examples, Shallow(), labels="x", layers=[99])  # type: ignore[arg-type]


def test_a_negative_strength_is_refused_at_load():
    from pydantic import ValidationError

    from bineval_dspy.optimize.calibrate import ProbeSettings

    with pytest.raises(ValidationError, match="each C is a positive number"):
        ProbeSettings(strengths=[-1.0])


def test_meta_eval_refuses_a_tampered_head_as_judge_program_does(tmp_path, monkeypatch, capsys):
    """Issue 55, break 2: meta-eval's `probe = "RUN"` read probe.json directly: a threshold edited to -5 judged every
    verdict against -5.00 and exited 0. It reads the head through the one loader `judge --program` uses."""
    from bineval_dspy import cli
    from tests.conftest import route_cli_lm
    from tests.meta.fixtures import summeval_files

    route_cli_lm(monkeypatch, lambda request: "unused")
    summaries, articles = summeval_files(tmp_path)
    ProgramFile.of(BinaryJudge(explanations="none", probability=True, probe=_probe())).save(tmp_path / "program" / PROGRAM_FILE)
    shipped = Path(__file__).resolve().parents[2] / "experiments" / "meta"
    config = tmp_path / "meta.toml"
    config.write_text(
        f'run_dir = "{tmp_path / "run"}"\ndimensions = ["coherence"]\n[dataset]\nkind = "summeval"\nsummaries = "{summaries}"\narticles = "{articles}"\n'
        f'[[methods]]\nname = "probe"\nkind = "bineval"\nchecklist = "{shipped / "summeval_probe_checklist.json"}"\nprobe = "PROBE"\nprobability = true\n'
    )
    head = tmp_path / "program" / PROBE_FILE
    probe = json.loads(head.read_text())
    probe["head"]["threshold"] = -5
    head.write_text(json.dumps(probe))
    for named in (tmp_path / "program", head, tmp_path / "program" / PROGRAM_FILE):
        config.write_text(re.sub(r'probe = ".*"', f'probe = "{named}"', config.read_text()))
        assert cli.main(["meta-eval", str(config)]) == 2, named
        err = capsys.readouterr().err
        assert "field 'methods.0.probe'" in err and "field 'probe.digest'" in err and "its digest differs" in err, err
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run" / "scores.jsonl").exists()


def test_a_head_without_its_program_is_refused(tmp_path):
    from bineval_dspy.judges.probe import head_of_run

    _probe().save(tmp_path / PROBE_FILE)
    with pytest.raises(InputError, match=r"probe.json: no program.json beside it records the head's digest"):
        head_of_run(tmp_path / PROBE_FILE)
    with pytest.raises(InputError, match=r"no program.json beside it"):
        head_of_run(tmp_path)
    with pytest.raises(InputError, match=r"missing: no such file or folder"):
        head_of_run(tmp_path / "missing")
