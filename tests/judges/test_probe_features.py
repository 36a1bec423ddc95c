"""Pooled probe features and thresholds that transfer (issue 56): spans pooled from per-token states, the feature spec
saved and rebuilt, the threshold rule on calibrated probabilities, grouped folds that never split a task, the heads
saved before pooled features still loading and scoring as they did, and backbones compared on the training folds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import Question
from bineval_dspy.judges import probe_fit
from bineval_dspy.judges.probe import Probe, ProbeRecord, fit_head, head_of_run, probe_text
from bineval_dspy.judges.probe_fit import (
    FeatureSpec,
    PooledHead,
    expected_kappa,
    expected_kappa_threshold,
    fit_platt,
    grouped_folds,
    out_of_fold,
    place_thresholds,
    sigmoid,
)
from bineval_dspy.lm.hidden import Reading, _Store, pool, token_spans

RESULTS = Path(__file__).resolve().parents[2] / "experiments" / "results"


def test_pool_reads_the_last_token_and_each_spans_mean():
    states = np.arange(2 * 5 * 3, dtype=np.float32).reshape(2, 5, 3)  # 2 layers, 5 tokens, width 3
    pooled = pool(states, {"output": (1, 3), "question": (4, 5)})
    assert np.array_equal(pooled["last"], states[:, 4])
    assert np.allclose(pooled["output"], states[:, 1:3].mean(axis=1)) and np.array_equal(pooled["question"], states[:, 4])
    with pytest.raises(InputError, match="span 'output': tokens \\[3, 3\\)"):
        pool(states, {"output": (3, 3)})


def test_character_spans_become_the_tokens_that_overlap_them():
    offsets = [(0, 0), (0, 3), (3, 7), (7, 8), (8, 12)]  # a special token of no characters first
    assert token_spans(offsets, {"output": (4, 8), "question": (20, 25)}) == {"output": (2, 4)}


class _Plain:
    chat_template = None


class _Chat:
    chat_template = "x"

    def apply_chat_template(self, messages, tokenize, add_generation_prompt):
        return "".join(f"<{m['role']}>{m['content']}</s>" for m in messages) + "<assistant>"


@pytest.mark.parametrize("tokenizer", [_Plain(), _Chat()])
def test_the_probe_prompt_names_where_the_output_and_question_lie(tokenizer):
    text, spans = probe_text(tokenizer, "Judge.", "Write a poem.", "Roses are red.", "Does it rhyme?")
    assert text[slice(*spans["output"])] == "Roses are red." and text[slice(*spans["question"])] == "Does it rhyme?"
    assert text.endswith("Answer:" if isinstance(tokenizer, _Plain) else "<assistant>")


def _pooled_readings(n: int, signal: str, seed: int = 0) -> tuple[list[Reading], np.ndarray, list[str]]:
    """Readings of 4 layers x 6 dims with last/output/question poolings, the label only in ``signal``'s layer 2."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.7).astype(float)
    out = []
    for label in y:
        pooled = {name: rng.normal(size=(4, 6)).astype(np.float32) for name in ("last", "output", "question")}
        pooled[signal][2, 0] += 3.0 * (label - 0.5)
        out.append(Reading(hidden=pooled.pop("last"), gap=float(rng.normal()), pooled=pooled))
    return out, y, [f"task{k // 3}" for k in range(n)]


def test_the_search_finds_the_pooling_that_carries_the_label_and_the_spec_round_trips(tmp_path):
    readings, y, groups = _pooled_readings(240, signal="question")
    head, candidates, _ = fit_head(readings, y, groups, layers=[1, 2, 3], strengths=[0.1], folds=4)
    assert all(m.features.pooling == ["question"] and 2 in m.features.layers for m in head.members)
    assert any(c.features and "question" in c.features for c in candidates) and head.calibration is not None
    record = ProbeRecord(model="m", labels="t", rows=240, yes_share=0.7, groups=["a"], folds=4, candidates=candidates, validation={})
    Probe(instructions="Judge.", head=head, record=record).save(tmp_path / "probe.json")
    loaded = Probe.load(tmp_path / "probe.json")
    assert isinstance(loaded.head, PooledHead) and loaded.head == head
    assert np.allclose(loaded.head.p_yes(readings), head.p_yes(readings))


def test_a_head_that_pools_a_span_the_reading_lacks_answers_nothing():
    spec = FeatureSpec(layers=[1], pooling=["output"])
    head = PooledHead(strength=1.0, members=[probe_fit.Fitted(np.zeros(7), np.ones(7), np.zeros(7), 0.0).linear(spec)], threshold=0.5)
    record = ProbeRecord(model="m", labels="t", rows=2, yes_share=0.5, groups=["a"], folds=2, candidates=[], validation={})

    class Reader:
        model = "m"
        backend = "torch"

        def tokenizer(self):
            return _Plain()

        def read(self, prompts, spans=None):
            return [Reading(hidden=np.zeros((2, 6), dtype=np.float32), gap=0.0) for _ in prompts]

    verdicts = Probe(instructions="J.", head=head, record=record).verdicts(Reader(), "i", "o", [Question(id="q", text="?", dimension="d")], "j")  # type: ignore[arg-type]
    assert verdicts["q"].answer == "unanswered" and "no 'output' span" in verdicts["q"].explanation


def test_platt_recovers_a_known_miscalibration():
    rng = np.random.default_rng(0)
    score = rng.normal(size=20000)
    y = (rng.random(20000) < sigmoid(2.0 * score - 1.0)).astype(float)
    platt = fit_platt(sigmoid(score), y)
    assert platt.a == pytest.approx(2.0, abs=0.1) and platt.b == pytest.approx(-1.0, abs=0.1)


def test_the_threshold_maximizes_expected_kappa_and_follows_the_base_rate():
    rng = np.random.default_rng(1)
    for base in (0.5, 0.85):
        q = sigmoid(rng.normal(size=4000) + np.log(base / (1 - base)))  # calibrated scores around this base rate
        cut = expected_kappa_threshold(q)
        best = expected_kappa(q, q >= cut)
        assert all(expected_kappa(q, q >= t) <= best + 1e-12 for t in np.linspace(0.05, 0.95, 19))
        assert 0.2 < (q >= cut).mean() < 0.95
    # a higher base rate moves the cut up: fewer yes-sayers among the uncertain rows
    low, high = sigmoid(rng.normal(size=4000)), sigmoid(rng.normal(size=4000) + 1.7)
    assert expected_kappa_threshold(high) > expected_kappa_threshold(low)


def test_a_dimension_gets_its_own_threshold_only_with_enough_of_both_answers():
    rng = np.random.default_rng(2)
    q = rng.random(300)
    y = (rng.random(300) < q).astype(float)
    dims = ["content"] * 200 + ["format"] * 90 + [None] * 10
    y[200:290] = 1.0  # "format" holds no "no": it keeps the global threshold
    overall, own = place_thresholds(q, y, dims)
    assert set(own) == {"content"} and 0 < overall < 1
    head = PooledHead(strength=1.0, members=[probe_fit.Fitted(np.zeros(1), np.ones(1), np.zeros(1), 0.0).linear(FeatureSpec(layers=[0]))], threshold=overall, thresholds=own)
    assert head.threshold_for("content") == own["content"] and head.threshold_for("format") == overall == head.threshold_for(None)


def test_out_of_fold_never_trains_on_a_held_out_task(monkeypatch):
    groups = [f"t{k % 13}" for k in range(130)]
    fold_of = grouped_folds(groups, 4, seed=5)
    x = np.array([[float(g[1:])] for g in groups])  # the task's number as the feature: what a fit saw
    y = np.array([k % 2 for k in range(130)], dtype=float)
    real = probe_fit.fit_linear
    seen: list[set[float]] = []

    def recording(x_train, y_train, strength):
        seen.append(set(x_train[:, 0].tolist()))
        return real(x_train, y_train, strength)

    monkeypatch.setattr(probe_fit, "fit_linear", recording)
    out_of_fold(x, y, fold_of, 1.0)
    for k, trained in enumerate(seen):
        held = {float(g[1:]) for g, f in zip(groups, fold_of) if f == k}
        assert held and not held & trained


def test_every_kept_head_loads_through_its_program_and_scores_as_before():
    heads = sorted(RESULTS.rglob("probe.json"))
    assert heads, "no probe.json under experiments/results"
    rng = np.random.default_rng(3)
    for path in heads:
        probe = head_of_run(path.parent)  # the digest the program recorded still matches
        head = json.loads(path.read_text())["head"]
        if "layer" in head:  # one layer's last token and the gap (issue 44's heads)
            members, calibration = [{**head, "features": {"layers": [head["layer"]], "pooling": ["last"], "gap": True}}], None
        else:
            members, calibration = head["members"], head["calibration"]
        features = [m["features"] for m in members]
        width = (len(members[0]["mean"]) - features[0]["gap"]) // (len(features[0]["layers"]) * len(features[0]["pooling"]))
        depth = max(layer for f in features for layer in f["layers"]) + 1
        readings = [
            Reading(
                hidden=rng.normal(size=(depth, width)).astype(np.float32), gap=float(rng.normal()),
                pooled={name: rng.normal(size=(depth, width)).astype(np.float32) for name in ("output", "question")},
            )
            for _ in range(5)
        ]
        expected = np.zeros(len(readings))
        for m, f in zip(members, features):  # written out from the file: states pooled, layers concatenated, the gap last
            x = np.array([np.concatenate([*(r.states(p)[layer] for p in f["pooling"] for layer in f["layers"]), [r.gap] if f["gap"] else []]) for r in readings])
            expected += sigmoid(((x - np.array(m["mean"])) / np.array(m["scale"])) @ np.array(m["weights"]) + m["bias"]) / len(members)
        if calibration is not None:
            q = np.clip(expected, 1e-6, 1 - 1e-6)
            expected = sigmoid(calibration["a"] * np.log(q / (1 - q)) + calibration["b"])
        assert np.allclose(probe.head.p_yes(readings), expected), path
        for dimension, cut in head.get("thresholds", {}).items():
            assert probe.head.threshold_for(dimension) == cut, path
        assert probe.head.threshold_for("anything") == head["threshold"]


def test_the_cache_keeps_pooled_states_as_float16(tmp_path):
    store = _Store(tmp_path / "hidden.sqlite")
    reading = Reading(hidden=np.ones((3, 4), dtype=np.float32), gap=0.5, pooled={"output": np.full((3, 4), 2.0, dtype=np.float32)})
    store.put({"k": reading})
    back = store.get(["k", "missing"])
    assert set(back) == {"k"} and np.array_equal(back["k"].pooled["output"], reading.pooled["output"]) and back["k"].gap == 0.5


def test_calibrate_keeps_the_backbone_with_the_best_out_of_fold_auroc(tmp_path, monkeypatch):
    from bineval_dspy.optimize import calibrate as cal

    rows = [
        {"input": f"task {k}", "output": f"out {k} {j}", "question": "q?", "reference": "yes" if (k + j) % 3 else "no", "example_id": f"t{k}"}
        for k in range(30) for j in range(3)
    ]  # fmt: skip
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "cal.toml").write_text('run_dir = "run"\n[data]\ntrain = ["train.jsonl"]\n[probe]\nlayers = [1]\nstrengths = [0.1]\nfolds = 3\ncombine = false\nbackend = "llama"\n')
    config = cal.load_calibrate(tmp_path / "cal.toml")
    assert config.probe.backend == "llama"  # the CLI reads states through it; the head records it
    labels = {(r["output"]): r["reference"] == "yes" for r in rows}

    class Reader:
        computed = 0  # what calibrate's progress line counts

        def __init__(self, model: str, signal: float) -> None:
            self.model, self.signal, self.rng = model, signal, np.random.default_rng(0)
            self.backend, self.computed = "llama", 0

        def depth(self):
            return 2

        def tokenizer(self):
            return _Plain()

        def read(self, prompts, spans=None):
            out = []
            for text, marks in zip(prompts, spans):
                output = text[slice(*marks["output"])]
                hidden = self.rng.normal(size=(3, 4)).astype(np.float32)
                hidden[1, 0] += self.signal * (labels[output] - 0.5)
                out.append(Reading(hidden=hidden, gap=0.0, pooled={"output": hidden, "question": hidden}))
            return out

    results = cal.calibrate(config, [Reader("weak", 0.0), Reader("strong", 4.0)])  # type: ignore[list-item]
    assert results.record["model"] == "strong" and set(results.backbones) == {"weak", "strong"}
    assert results.backbones["strong"] > results.backbones["weak"]  # type: ignore[operator]
    assert json.loads((tmp_path / "run" / "probe.json").read_text())["record"]["model"] == "strong"
    assert json.loads((tmp_path / "run" / "probe.json").read_text())["record"]["backend"] == "llama"
