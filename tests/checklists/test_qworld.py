"""Qworld's recursive expansion tree with a scripted LM: expansion rounds, dedup at every level, lineage, weights,
unparseable answers and LM-call counts."""

from __future__ import annotations

import json

import dspy
import pytest

from bineval_dspy.checklists.qworld import DEFAULT_DIMENSION, QworldConfig, QworldWriter
from bineval_dspy.core.errors import InputError, RunError
from tests.checklists.qworld_script import (
    always_new,
    criterion,
    fake_embed,
    field,
    op_of,
    perspective,
    scenario,
    script_of,
    tags,
)
from tests.conftest import scripted_lm

TASK = "Explain how to take ibuprofen safely."
ROOMY = {"max_scenarios": 50, "max_perspectives": 50, "max_criteria": 500}


def grow(script, **config) -> tuple[QworldWriter, dspy.LM]:
    lm = scripted_lm(script)
    dspy.configure(lm=lm)
    writer = QworldWriter(QworldConfig(**config), embed=fake_embed)
    writer(task=TASK)
    return writer, lm


@pytest.mark.parametrize("w1, w2, w3", [(0, 0, 0), (1, 1, 0), (2, 3, 1), (3, 4, 0)])
def test_each_level_gets_exactly_its_expansion_rounds(w1, w2, w3):
    per_call = {"scenarios_per_call": 2, "perspectives_per_call": 2, "criteria_per_call": 2, "new_per_round": 1}
    writer, lm = grow(always_new(per_decompose=2, per_expand=1), w1=w1, w2=w2, w3=w3, **per_call, **ROOMY)
    tree = writer.tree
    s = 2 + w1  # every round adds one node to each node's group
    p = s * (2 + w2)
    assert (len(tree.scenarios), len(tree.perspectives), len(tree.criteria)) == (s, p, p * (2 + w3))
    assert tree.stats.decompose_calls == {"scenario": 1, "perspective": s, "criterion": p}
    assert tree.stats.expand_calls == {"scenario": w1, "perspective": w2 * s, "criterion": w3 * p}
    calls = 1 + w1 + s * (1 + w2) + p * (1 + w3)  # the formula in the module's docstring
    assert tree.stats.cost.lm_calls == calls == len(lm.engine.requests)
    ops = [op_of(r) for r in lm.engine.requests]
    assert ops.count("expand_scenarios") == w1 and ops.count("expand_perspectives") == w2 * s and ops.count("expand_criteria") == w3 * p
    assert tree.stats.merged == {"scenario": 0, "perspective": 0, "criterion": 0}


def test_a_round_that_adds_nothing_ends_that_nodes_expansion():
    script = script_of(
        {
            "decompose_task": lambda r: [scenario(1), scenario(2)],
            "expand_scenarios": lambda r: [],  # nothing missing
            "decompose_scenario": lambda r: [perspective(10 + tags(field(r, "scenario"))[0])],
            # scenario k1 keeps finding axes, scenario k2 finds nothing new after its first round
            "expand_perspectives": lambda r: [perspective(100 + len(field(r, "perspectives").splitlines()))] if "k1" in field(r, "scenario") else [],
            "decompose_perspective": lambda r: [criterion(tags(field(r, "perspective"))[0])],
            "expand_criteria": lambda r: [],
        }
    )
    writer, lm = grow(script, w1=3, w2=3, w3=2, **ROOMY)
    stats = writer.tree.stats
    assert stats.expand_calls == {"scenario": 1, "perspective": 3 + 1, "criterion": len(writer.tree.perspectives)}
    assert [p.name for p in writer.tree.perspectives] == ["axis k11", "axis k12", "axis k101", "axis k102", "axis k103"]


def test_near_duplicates_merge_at_every_level():
    def perspectives(request):
        if "k1" in field(request, "scenario"):
            return [perspective(10), perspective(10, name="k10 handling again"), perspective(11)]
        return [perspective(10, name="the k10 axis")]  # scenario k2 proposes an axis scenario k1 already has

    script = script_of(
        {
            "decompose_task": lambda r: [scenario(1), scenario(1, audience="grown-ups who ask"), scenario(2)],
            "expand_scenarios": lambda r: [scenario(2, audience="the same people as before")],
            "decompose_scenario": perspectives,
            "expand_perspectives": lambda r: [],
            "decompose_perspective": lambda r: (
                [criterion(20), criterion(20, wording="Is point k20 addressed in a clear way?")]
                if "k10" in field(r, "perspective")
                else [criterion(21), criterion(20, wording="Does it cover k20 at all?")]  # same as one of axis k10's
            ),
            "expand_criteria": lambda r: [],
        }
    )
    writer, lm = grow(script, w1=2, w2=1)
    tree = writer.tree
    assert [s.intent for s in tree.scenarios] == ["learn about k1 in plain words", "learn about k2 in plain words"]
    assert [(p.name, p.scenario, p.shared_with) for p in tree.perspectives] == [("axis k10", "s1", ["s2"]), ("axis k11", "s1", [])]
    assert [c.question for c in tree.criteria] == ["Does the response address point k20 clearly?", "Does the response address point k21 clearly?"]
    assert tree.stats.merged == {"scenario": 2, "perspective": 2, "criterion": 2}
    # the expansion round found only a duplicate: it added nothing, so there was no second round
    assert tree.stats.expand_calls["scenario"] == 1
    # a shared axis is listed to the scenario that proposed it again, as one it already has
    asked = [field(r, "perspectives") for r in lm.engine.requests if op_of(r) == "expand_perspectives" and "k2" in field(r, "scenario")]
    assert asked and "axis k10" in asked[0]


def test_exact_duplicates_merge_without_the_embedder():
    script = script_of(
        {
            "decompose_task": lambda r: [scenario(1)],
            "expand_scenarios": lambda r: [],
            "decompose_scenario": lambda r: [perspective(1), perspective(1)],
            "expand_perspectives": lambda r: [],
            "decompose_perspective": lambda r: [criterion(1), criterion(1, wording="Does the Response address  point K1 clearly?")],
            "expand_criteria": lambda r: [],
        }
    )
    embedded: list[list[str]] = []
    lm = scripted_lm(script)
    dspy.configure(lm=lm)
    writer = QworldWriter(QworldConfig(w1=1, w2=1), embed=lambda texts: (embedded.append(texts), fake_embed(texts))[1] * 0)
    writer(task=TASK)  # a zero embedder: only the exact comparison can merge
    assert (len(writer.tree.perspectives), len(writer.tree.criteria)) == (1, 1)
    assert writer.tree.stats.merged == {"scenario": 0, "perspective": 1, "criterion": 1}
    assert embedded  # one embedding call per LM answer, not per node
    assert len(embedded) <= sum(writer.tree.stats.decompose_calls.values()) + sum(writer.tree.stats.expand_calls.values())


def test_every_criterion_keeps_its_scenario_and_perspective():
    writer, _ = grow(always_new(), w1=1, w2=1, w3=1)
    checklist = writer(task=TASK)
    tree = writer.tree
    perspectives = {p.id: p for p in tree.perspectives}
    scenarios = {s.id: s for s in tree.scenarios}
    assert len(checklist.questions) == len(tree.criteria) > 0
    for q, c in zip(checklist.questions, tree.criteria):
        assert set(q.lineage) == {"scenario", "scenario_text", "perspective", "perspective_text"}
        p = perspectives[q.lineage["perspective"]]
        assert p.scenario == q.lineage["scenario"] == c.scenario  # the perspective belongs to the criterion's scenario
        assert q.lineage["perspective_text"] == p.name and q.lineage["scenario_text"] == scenarios[p.scenario].intent
        assert q.weight == c.weight and q.dimension == DEFAULT_DIMENSION
    # decompositions write positive criteria, the expansions' are negative (see always_new): both keep their sign
    assert {q.weight for q in checklist.questions} == {5, -5}
    assert checklist.dimensions == [DEFAULT_DIMENSION]


def test_the_prompts_show_the_tree_above_each_call():
    writer, lm = grow(always_new(), w1=1, w2=1, w3=1)
    first = writer.tree.scenarios[0]
    by_op = {}
    for r in lm.engine.requests:
        by_op.setdefault(op_of(r), r)
    assert field(by_op["expand_scenarios"], "scenarios").startswith("1. " + first.describe())
    assert field(by_op["decompose_scenario"], "scenario") == first.describe()
    assert field(by_op["decompose_perspective"], "perspective") == writer.tree.perspectives[0].describe()
    assert "(weight 5)" in field(by_op["expand_criteria"], "criteria")
    schema = json.dumps(by_op["decompose_perspective"].config.response_format["schema"])
    assert '"enum": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -1, -2' in schema  # Qworld's bands reach the grammar


def test_given_dimensions_are_chosen_per_perspective():
    def perspectives(request):
        return [{**perspective(1), "dimension": "safety"}, {**perspective(2), "dimension": "clarity"}]

    script = script_of(
        {
            "decompose_task": lambda r: [scenario(1)],
            "expand_scenarios": lambda r: [],
            "decompose_scenario": perspectives,
            "expand_perspectives": lambda r: [],
            "decompose_perspective": lambda r: [criterion(tags(field(r, "perspective"))[0])],
            "expand_criteria": lambda r: [],
        }
    )
    lm = scripted_lm(script)
    dspy.configure(lm=lm)
    checklist = QworldWriter(embed=fake_embed)(task=TASK, dimensions=["Clarity", "safety"])
    assert checklist.dimensions == ["clarity", "safety"]
    assert [q.dimension for q in checklist.questions] == ["safety", "clarity"]
    request = next(r for r in lm.engine.requests if op_of(r) == "decompose_scenario")
    assert '"enum": ["clarity", "safety"]' in json.dumps(request.config.response_format["schema"])
    # one given dimension needs no choice: the LM's tag is not asked for, every criterion is in it
    lm.engine.requests.clear()
    assert {q.dimension for q in QworldWriter(embed=fake_embed)(task=TASK, dimensions=["safety"]).questions} == {"safety"}
    request = next(r for r in lm.engine.requests if op_of(r) == "decompose_scenario")
    assert "dimension" not in json.dumps(request.config.response_format["schema"])


def test_unparseable_answers_add_nothing_and_are_counted():
    def criteria(request):
        return "no json here" if "k2" in field(request, "perspective") else [criterion(9)]

    script = script_of(
        {
            "decompose_task": lambda r: [scenario(1)],
            "expand_scenarios": lambda r: '{"missing": {"items": [{"intent": "x"}]}}',  # breaks the schema
            "decompose_scenario": lambda r: [perspective(1), perspective(2)],
            "expand_perspectives": lambda r: [],
            "decompose_perspective": criteria,
            "expand_criteria": lambda r: [criterion(3, weight=0)],  # out of Qworld's bands
        }
    )
    writer, _ = grow(script, w1=2, w2=1, w3=1)
    tree = writer.tree
    assert [c.question for c in tree.criteria] == ["Does the response address point k9 clearly?"]
    assert tree.stats.unparseable == {"scenario": 1, "perspective": 0, "criterion": 2}
    assert tree.stats.expand_calls["scenario"] == 1  # a failed round adds nothing: no second one
    assert tree.stats.expand_calls["criterion"] == 1  # axis k2 got no criteria, so it is not expanded either


def test_no_criteria_at_all_is_a_run_error_with_the_tree_kept():
    script = script_of({op: (lambda r: "garbage") for op in ("decompose_task", "expand_scenarios")})
    lm = scripted_lm(script)
    dspy.configure(lm=lm)
    writer = QworldWriter(embed=fake_embed)
    with pytest.raises(RunError, match="no usable criteria \\(1 unparseable"):
        writer(task=TASK)
    assert writer.tree is not None and writer.tree.stats.cost.lm_calls == 1 and writer.tree.scenarios == []


def test_caps_stop_growth_and_spare_lm_calls():
    writer, lm = grow(always_new(per_decompose=3, per_expand=2), w1=3, w2=4, new_per_round=2, max_scenarios=4, max_perspectives=3, max_criteria=7)
    tree = writer.tree
    assert len(tree.scenarios) == 4 and tree.stats.expand_calls["scenario"] == 1
    assert all(len([p for p in tree.perspectives if p.scenario == s.id]) == 3 for s in tree.scenarios)
    assert tree.stats.expand_calls["perspective"] == 0  # every scenario was full after its decomposition
    assert len(tree.criteria) == 7 and tree.stats.decompose_calls["criterion"] == 3  # stopped once 7 were kept
    # criteria are written scenario by scenario in turn, so a short checklist still covers several scenarios
    assert [c.scenario for c in tree.criteria] == ["s1", "s1", "s1", "s2", "s2", "s2", "s3"]


def test_negative_criteria_never_go_to_code():
    script = script_of(
        {
            "decompose_task": lambda r: [scenario(1)],
            "expand_scenarios": lambda r: [],
            "decompose_scenario": lambda r: [perspective(1)],
            "expand_perspectives": lambda r: [],
            "decompose_perspective": lambda r: [
                criterion(1, 4, "Does the response use only numbers found in the article?"),
                criterion(2, -4, "Does the response state numbers not found in the article?"),
            ],
            "expand_criteria": lambda r: [],
        }
    )
    lm = scripted_lm(script)
    dspy.configure(lm=lm)
    positive, negative = QworldWriter(embed=fake_embed)(task=TASK).questions
    assert (positive.verifier, positive.weight) == ("grounded:numbers", 4)
    assert (negative.verifier, negative.weight) == (None, -4)


def test_bad_task_and_config_are_input_errors():
    with pytest.raises(InputError, match="task description is empty"):
        QworldWriter(embed=fake_embed)(task="  ")
    with pytest.raises(ValueError, match="w1"):
        QworldConfig(w1=-1)
    with pytest.raises(ValueError, match="threshold"):
        QworldConfig(threshold=1.5)
