"""Template writers: a method declared as prompts plus a schema, registered by name, and the published methods
(CheckEval, RocketEval, RLCF direct and contrastive, feedback-to-criteria) run on a scripted LM."""

from __future__ import annotations

import json
import re

import dspy
import pytest
from dspy.lm15 import Request

from bineval_dspy.checklists.published import CHECKEVAL
from bineval_dspy.checklists.screen import screen
from bineval_dspy.checklists.templates import TEMPLATES, TemplateStep, WriterTemplate
from bineval_dspy.checklists.writers import METHODS, load_templates, make_writer, methods, register_template
from bineval_dspy.core.errors import InputError, RunError
from tests.conftest import bag_of_words, scripted_lm

pytestmark = pytest.mark.usefixtures("every_question_related")  # the relevance screen: tests/checklists/test_relevance.py

TASK = "Write a short poem about the sea that mentions a lighthouse."


def items(*texts: str, **extra) -> str:
    return json.dumps({"questions": {"items": [{"question": t, **extra} if extra else t for t in texts]}})


def request_text(request: Request) -> str:
    return request.messages[-1].text


@pytest.fixture(autouse=True)
def _registry():
    """Templates a test registers are gone after it."""
    before = dict(TEMPLATES)
    yield
    TEMPLATES.clear()
    TEMPLATES.update(before)


def test_a_new_template_writer_in_a_dozen_lines():
    register_template(
        WriterTemplate(
            name="reference-weighted",
            steps=[TemplateStep(prompt="Task: {task}\nReference: {reference}\nWrite weighted yes/no questions.", schema="weighted", max_questions=3)],
        )
    )
    lm = scripted_lm(lambda r: items("Does the poem mention a lighthouse?", "Is the poem short?", weight=40))
    dspy.configure(lm=lm)
    checklist = make_writer("reference-weighted", reference="A lighthouse blinks.", code_checks=False)(task=TASK)
    assert [(q.text, q.weight, q.lineage["method"]) for q in checklist.questions] == [
        ("Does the poem mention a lighthouse?", 40, "reference-weighted"),
        ("Is the poem short?", 40, "reference-weighted"),
    ]
    assert "Reference: A lighthouse blinks." in request_text(lm.engine.requests[0])
    schema = lm.engine.requests[0].config.response_format["schema"]  # the bounds reach a local model's grammar
    assert schema["$defs"]["WrittenQuestions"]["properties"]["items"]["maxItems"] == 3
    assert "reference-weighted" in methods() and "reference-weighted" not in METHODS


def test_checkeval_seeds_expands_and_filters_per_dimension():
    def script(r: Request) -> str:
        text, dim = request_text(r), re.search(r"dimension: (\w+)", request_text(r)).group(1)  # type: ignore[union-attr]
        if "Give the numbers" in text:
            return json.dumps({"questions": {"items": [1, 3, 9]}})  # 9 is out of range: ignored
        step = "expanded" if "Seed questions so far" in text else "seed"
        return items(f"Is the poem good in {dim} {step} one?", f"Is the poem good in {dim} {step} two?")

    lm = scripted_lm(script)
    dspy.configure(lm=lm)
    definitions = {"fluency": "reads smoothly", "imagery": "paints the sea"}
    checklist = make_writer("checkeval", definitions=definitions)(task=TASK, dimensions=["fluency", "imagery"])
    assert len(lm.engine.requests) == 3 * 2  # seed, expand, filter for each dimension
    assert "Definition: reads smoothly" in request_text(lm.engine.requests[0])
    assert "1. Is the poem good in fluency seed one?" in request_text(lm.engine.requests[2])  # expand sees the seeds
    assert [(q.dimension, q.text, q.lineage["step"]) for q in checklist.questions] == [
        ("fluency", "Is the poem good in fluency seed one?", "seed"),
        ("fluency", "Is the poem good in fluency expanded one?", "expand"),
        ("imagery", "Is the poem good in imagery seed one?", "seed"),
        ("imagery", "Is the poem good in imagery expanded one?", "expand"),
    ]
    assert screen(checklist, ["fluency", "imagery"], 2) == []


def test_rocketeval_needs_a_reference_and_uses_it():
    dspy.configure(lm=scripted_lm(lambda r: items("Does the poem mention a lighthouse?", "Is the poem about the sea?")))
    with pytest.raises(InputError, match="rocketeval writer: field 'reference': this method's prompt needs it"):
        make_writer("rocketeval")(task=TASK)
    checklist = make_writer("rocketeval")(task=TASK, reference="The lighthouse stands by the sea.")
    assert len(checklist.questions) == 2 and checklist.dimensions == ["instruction-following"]


def test_rlcf_contrastive_shows_the_candidates_and_keeps_weights():
    lm = scripted_lm(lambda r: json.dumps({"questions": {"items": [{"question": "Does the poem name the lighthouse?", "weight": 90}, {"question": "Is the poem under ten lines?", "weight": 20}]}}))
    dspy.configure(lm=lm)
    checklist = make_writer("rlcf-contrastive", candidates=["Waves.", "A lighthouse by the sea."])(task=TASK)
    assert [q.weight for q in checklist.questions] == [90, 20]
    assert "Response 2:\nA lighthouse by the sea." in request_text(lm.engine.requests[0])
    with pytest.raises(InputError, match="field 'candidates'"):
        make_writer("rlcf-contrastive")(task=TASK)


def test_feedback_reads_notes_in_calls_and_merges_near_duplicates():
    notes = [f"note {k}: the summary misses the main event" for k in range(10)]
    replies = iter([
        json.dumps({"questions": {"items": [{"question": "Does the summary state the main event?", "category": "relevance"}, {"question": "Is the summary fluent and easy to read?", "category": "fluency"}]}}),
        json.dumps({"questions": {"items": [{"question": "Does the summary state the main event clearly?", "category": "relevance"}]}}),
    ])
    lm = scripted_lm(lambda r: next(replies))
    dspy.configure(lm=lm)
    writer = make_writer("feedback", observations=notes, embed=bag_of_words)
    checklist = writer(task="Summarize the article.", dimensions=["relevance", "fluency"])
    assert len(lm.engine.requests) == 2  # 8 notes a call: 8 + 2
    assert "9. note 8" not in request_text(lm.engine.requests[0]) and "2. note 9" in request_text(lm.engine.requests[1])
    category = lm.engine.requests[0].config.response_format["schema"]["$defs"]["CategorizedItem"]["properties"]["category"]
    assert category["enum"] == ["relevance", "fluency"]  # the LM names a requested dimension, nothing else
    assert [(q.dimension, q.lineage["support"]) for q in checklist.questions] == [("relevance", "2"), ("fluency", "1")]


def test_an_unparseable_answer_gives_no_questions_and_none_is_a_run_error():
    dspy.configure(lm=scripted_lm(lambda r: "I cannot help with that."))
    writer = make_writer("rlcf")
    with pytest.raises(RunError, match="rlcf: the LM gave no usable questions \\(1 unparseable"):
        writer(task=TASK)


def test_templates_load_from_toml_and_a_bad_field_is_one_line(tmp_path):
    good = tmp_path / "writers.toml"
    good.write_text('[[templates]]\nname = "tone"\n[[templates.steps]]\nprompt = "Task: {task}. Ask about its tone."\n')
    assert load_templates(good) == ["tone"] and isinstance(make_writer("tone"), dspy.Module)
    bad = tmp_path / "bad.toml"
    bad.write_text('[[templates]]\nname = "tone2"\n[[templates.steps]]\nprompt = "Task: {task} for {audience}"\n')
    with pytest.raises(InputError) as info:
        load_templates(bad)
    assert str(info.value).startswith(str(bad)) and "templates.0.steps.0" in str(info.value) and "{audience}" in str(info.value)
    assert "\n" not in str(info.value)
    with pytest.raises(InputError, match="built-in writer"):
        register_template(CHECKEVAL.model_copy(update={"name": "tick"}))



@pytest.mark.parametrize("field", ["{task:d}", "{task:{task.__class__}}", "{task!r}", "{task.__class__}", "{task[0]}"])
def test_a_placeholder_with_a_format_spec_is_refused_at_load(tmp_path, field):
    """Accepted at load, it failed at the first call (exit 3) or reached into objects (issue 32, item 13)."""
    bad = tmp_path / "spec.toml"
    bad.write_text(f'[[templates]]\nname = "spec"\n[[templates.steps]]\nprompt = "Task: {field}"\n')
    with pytest.raises(InputError, match="not a plain placeholder") as info:
        load_templates(bad)
    assert str(info.value).startswith(str(bad)) and "\n" not in str(info.value)


def cli_script(r: Request) -> str:
    text = request_text(r)
    if "Give the numbers" in text:
        return json.dumps({"questions": {"items": [1, 2]}})
    if "Name the dimension" in text:
        return json.dumps({"questions": {"items": [{"question": "Does the poem name the lighthouse?", "category": "content"}]}})
    if "importance weight" in text:
        return json.dumps({"questions": {"items": [{"question": "Does the poem name the lighthouse?", "weight": 80}, {"question": "Is the poem about the sea?", "weight": 30}]}})
    step = "more" if "Seed questions so far" in text else "first"
    return items(f"Does the poem name the lighthouse {step}?", f"Is the poem about the sea {step}?")


@pytest.mark.parametrize(
    "method, flags, questions, calls",
    [
        ("checkeval", ["--definitions", "definitions.json", "--dimensions", "content"], 2, 3),
        ("rocketeval", ["--reference", "@reference.txt"], 2, 1),
        ("rlcf", [], 2, 1),
        ("rlcf-contrastive", ["--candidates", "candidates.jsonl"], 2, 1),
        ("feedback", ["--observations", "notes.jsonl", "--dimensions", "content"], 1, 1),
        ("tone", ["--writer-file", "writers.toml"], 2, 1),
    ],
)
def test_every_published_method_runs_from_the_cli(tmp_path, monkeypatch, capsys, words_embedder, method, flags, questions, calls):
    from bineval_dspy import cli
    from bineval_dspy.core.schema import Checklist
    from tests.conftest import route_cli_lm

    monkeypatch.chdir(tmp_path)
    (tmp_path / "definitions.json").write_text(json.dumps({"content": "the poem says what was asked"}))
    (tmp_path / "reference.txt").write_text("The lighthouse keeps watch over the sea.")
    (tmp_path / "candidates.jsonl").write_text('{"output": "Waves."}\n{"output": "A lighthouse by the sea."}\n')
    (tmp_path / "notes.jsonl").write_text('{"text": "never names the lighthouse"}\n')
    (tmp_path / "writers.toml").write_text('[[templates]]\nname = "tone"\n[[templates.steps]]\nprompt = "Task: {task}. Ask about its tone."\n')
    lm = route_cli_lm(monkeypatch, cli_script)
    code = cli.main(["checklist", "--task", TASK, "--writer", method, *flags, "-o", "c.json"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert len(Checklist.model_validate_json((tmp_path / "c.json").read_text()).questions) == questions
    assert len(lm.engine.requests) == calls and f"cost: {calls} LM call(s)" in err


def test_template_flags_need_a_template_writer(tmp_path, monkeypatch, capsys):
    from bineval_dspy import cli
    from tests.conftest import route_cli_lm

    lm = route_cli_lm(monkeypatch, cli_script)
    code = cli.main(["checklist", "--task", TASK, "--method", "tick", "--reference", "x", "-o", str(tmp_path / "c.json")])
    assert code == 2 and capsys.readouterr().err.startswith("error: --reference: only with a template writer (checkeval")
    assert not lm.engine.requests


def test_rocketeval_checklist_judged_by_p_yes_then_weights_fitted_for_the_query(tmp_path, monkeypatch, capsys):
    """RocketEval end to end: the checklist from the reference, P(yes) verdicts, per-query weights by ``analyze``."""
    from bineval_dspy import cli
    from bineval_dspy.testing.scripted import Reply
    from tests.conftest import prompt_fields, route_cli_lm

    def script(r: Request) -> str | Reply:
        fields = prompt_fields(r)
        if "question" not in fields:
            return items("Does the poem name the lighthouse?", "Is the poem about the sea?")
        output, question = fields["output"], fields["question"]
        strength = output.count("light") / 4 if "lighthouse" in question else 0.5  # only the first question tells outputs apart
        return Reply(json.dumps({"verdict": {"answer": "yes" if strength >= 0.5 else "no", "explanation": ""}}), p_yes=min(0.95, 0.05 + strength))

    route_cli_lm(monkeypatch, script)
    monkeypatch.chdir(tmp_path)
    rows = [{"id": f"r{k}", "input": TASK, "output": "light " * k + "waves", "human": {"instruction-following": float(k)}} for k in range(6)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert cli.main(["checklist", "--task", TASK, "--writer", "rocketeval", "--reference", "A lighthouse by the sea.", "-o", "c.json"]) == 0
    assert cli.main(["judge", "--checklist", "c.json", "--data", "d.jsonl", "--probability", "--explanations", "none", "-o", "s.jsonl"]) == 0
    capsys.readouterr()
    code = cli.main(["analyze", "s.jsonl", "--checklist", "c.json", "--reference", "human", "--group", "id", "--values", "p_yes", "--folds", "3", "--resamples", "0", "-o", "a"])
    assert code == 0
    weights = capsys.readouterr().out.split("weights: ")[1]
    first, second = (float(w) for w in weights.split()[1:3])
    assert first > second  # the item that separates the outputs carries the weight
