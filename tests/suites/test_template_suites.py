"""Template suites (issue 47, item 8): a prompt template with {{variables}} and a table of rows, read wherever a suite
is; the filled prompt is generated, judged and recorded with the row's values, and the template is the program's
instructions, so it is what the optimizer edits."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import InputError
from bineval_dspy.lm import runtime, specs
from bineval_dspy.programs.generator import Generator
from bineval_dspy.programs.state import set_instructions
from bineval_dspy.suites.rows import SuiteRow, load_suite
from bineval_dspy.suites.templates import MissingVariable, fill, variables
from bineval_dspy.testing import scripted_lm, verdict_json
from tests.conftest import route_cli_lm

TEMPLATE = "Write a {{form}} about {{ topic }}, with no commas."
NO_COMMA = '[{verifier = "punctuation:no_comma"}]'


def template_suite(folder: Path, rows: str, name: str = "rows.csv", template: str = TEMPLATE, checks: str = NO_COMMA) -> Path:
    (folder / name).write_text(rows)
    suite = folder / "haiku.toml"
    suite.write_text(f"template = {json.dumps(template)}\nrows = {json.dumps(name)}\nchecks = {checks}\n")
    return suite


def test_fill_replaces_each_variable_once_and_never_reads_a_value_as_a_template():
    assert variables(TEMPLATE) == ["form", "topic"]
    assert fill(TEMPLATE, {"form": "haiku", "topic": "{{form}}"}) == "Write a haiku about {{form}}, with no commas."
    with pytest.raises(MissingVariable, match=r"no value for \{\{topic\}\}"):
        fill(TEMPLATE, {"form": "haiku"})


def test_a_template_suite_is_a_suite_of_filled_prompts_with_their_values(tmp_path):
    rows = load_suite(template_suite(tmp_path, "form,topic,mood\nhaiku,autumn,calm\npoem,the sea,wild\n"))
    assert [(r.key, r.prompt) for r in rows] == [("1", "Write a haiku about autumn, with no commas."), ("2", "Write a poem about the sea, with no commas.")]
    assert rows[0].variables == {"form": "haiku", "topic": "autumn", "mood": "calm"} and rows[0].template == TEMPLATE
    assert rows[0].instruction_id_list == ["punctuation:no_comma"] and SuiteRow.from_example(rows[0].to_example()) == rows[0]
    assert set(rows[0].to_example().inputs().keys()) == {"prompt", "variables"}

    jsonl = '{"key": "a", "form": "haiku", "topic": "rain", "instruction_id_list": ["keywords:existence"], "kwargs": [{"keywords": ["rain"]}]}\n'
    (row,) = load_suite(template_suite(tmp_path, jsonl, "rows.jsonl"))
    assert row.key == "a" and row.instruction_id_list == ["punctuation:no_comma", "keywords:existence"] and row.variables == {"form": "haiku", "topic": "rain"}
    plain = SuiteRow(key="1", prompt="p", instruction_id_list=["punctuation:no_comma"], kwargs=[{}])
    assert "variables" not in plain.model_dump() and set(plain.to_example().inputs().keys()) == {"prompt"}  # a plain suite as before


def test_the_template_may_be_a_file_beside_the_suite(tmp_path):
    (tmp_path / "prompt.txt").write_text("Describe {{topic}}.\n")
    (row,) = load_suite(template_suite(tmp_path, "topic\nfog\n", template="prompt.txt"))
    assert row.prompt == "Describe fog."


@pytest.mark.parametrize(
    ("rows", "template", "checks", "message"),
    [
        ("form,topic\nhaiku,autumn\npoem\n", TEMPLATE, NO_COMMA, r"rows.csv:3: no value for \{\{topic\}\}, which the template names"),
        ("form,topic\nhaiku,autumn\n", "A {{form}} in {{mood}}.", NO_COMMA, r"rows.csv:2: no value for \{\{mood\}\}, which the template names"),
        ("form,topic\nhaiku,autumn\n", "promt.txt", NO_COMMA, r"haiku.toml: field 'template': the template names no \{\{variable\}\}"),
        ("form,topic\nhaiku,autumn\n", TEMPLATE, '[{verifier = "punctuation:no_coma"}]', r"haiku.toml: field 'checks.0.verifier': unknown .*no_comma"),
        ("form,topic\nhaiku,autumn\n", TEMPLATE, "[]", r"rows.csv:2: no checks: give `checks`"),
        ("form,topic\nhaiku,autumn,extra\n", TEMPLATE, NO_COMMA, r"rows.csv:2: more values than the header's 2 columns"),
        ("form,topic,form\nhaiku,autumn,poem\n", TEMPLATE, NO_COMMA, r"rows.csv:1: column 'form' appears twice in the header"),
        ("key,topic\nk,autumn\n", "Write about {{topic}} as {{key}}.", NO_COMMA, r"haiku.toml: field 'template': \{\{key\}\} is reserved \(key, instruction_id_list, kwargs"),
    ],
)
def test_a_bad_template_suite_is_one_located_line(tmp_path, rows, template, checks, message):
    with pytest.raises(InputError, match=message):
        load_suite(template_suite(tmp_path, rows, template=template, checks=checks))


@pytest.mark.parametrize(("value", "kind"), [("null", "null"), ("true", "true"), ('{"a": 1}', "an object"), ('["x"]', "a list")])
def test_a_value_that_is_no_text_is_refused_naming_file_line_and_field(tmp_path, value, kind):
    """Issue 55, break 6: `{"topic": null}` sent "Write about None.", `true` "True", `{"a": 1}` "{'a': 1}"."""
    rows = '{"form": "haiku", "topic": "rain"}\n' + f'{{"form": "haiku", "topic": {value}}}\n'
    with pytest.raises(InputError, match=rf"rows.jsonl:2: field 'topic': a template value is text or a number, not {kind}$"):
        load_suite(template_suite(tmp_path, rows, "rows.jsonl"))


def test_a_number_is_filled_in_as_its_json_text(tmp_path):
    rows = '{"form": "haiku", "topic": 3}\n{"form": "haiku", "topic": 2.5}\n'
    assert [r.prompt for r in load_suite(template_suite(tmp_path, rows, "rows.jsonl"))] == [
        "Write a haiku about 3, with no commas.", "Write a haiku about 2.5, with no commas."
    ]


def test_the_cli_says_a_missing_variable_in_one_line(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, lambda r: "a reply")
    suite = template_suite(tmp_path, "form,topic\nhaiku,autumn\npoem\n")
    assert cli.main(["generate", "--suite", str(suite), "-o", str(tmp_path / "out.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "rows.csv:3: no value for {{topic}}" in err and err.count("\n") == 1 and "Traceback" not in err


def test_generate_sends_the_filled_template_and_records_the_rows_values(tmp_path, monkeypatch):
    lm = route_cli_lm(monkeypatch, lambda r: "leaves fall softly")
    suite = template_suite(tmp_path, "form,topic\nhaiku,autumn\npoem,the sea\n")
    out = tmp_path / "out.jsonl"
    assert cli.main(["generate", "--suite", str(suite), "-o", str(out)]) == 0
    assert sorted((r.system or "", [m.text for m in r.messages]) for r in lm.engine.requests) == [
        ("", ["Write a haiku about autumn, with no commas."]), ("", ["Write a poem about the sea, with no commas."])
    ]  # the filled template is the whole prompt: no system message (rows run on threads: any order)
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["prompt"], r["variables"]) for r in written] == [
        ("Write a haiku about autumn, with no commas.", {"form": "haiku", "topic": "autumn"}),
        ("Write a poem about the sea, with no commas.", {"form": "poem", "topic": "the sea"}),
    ]
    assert cli.main(["verify", "--suite", str(suite), "--responses", str(out), "-o", str(tmp_path / "v.jsonl")]) == 0
    assert cli.main(["generate", "--suite", str(suite), "--best-of", "2", "-o", str(tmp_path / "b.jsonl")]) == 2


def test_generate_reports_the_template_suites_checks_as_verify_grades_them(tmp_path, monkeypatch, capsys):
    """Issue 57, item 10: the checks a template suite declares were not reported by `generate`."""
    route_cli_lm(monkeypatch, lambda r: "leaves, falling" if "haiku" in r.messages[-1].text else "waves rise")
    suite = template_suite(tmp_path, "form,topic\nhaiku,autumn\npoem,the sea\nsong,rain\n")
    out = tmp_path / "out.jsonl"
    assert cli.main(["generate", "--suite", str(suite), "-o", str(out)]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "the template suite's checks on 3 response(s) (strict, as verify grades them)" in shown
    assert "prompt │ 2 │ 3 │ 66.67%" in shown and "instruction │ 2 │ 3 │ 66.67%" in shown
    assert cli.main(["verify", "--suite", str(suite), "--responses", str(out), "-o", str(tmp_path / "v.jsonl")]) == 0
    assert "prompt │ 2 │ 3 │ 66.67%" in " ".join(capsys.readouterr().out.split())  # the same figures


def test_the_template_is_what_an_edit_changes_and_the_rows_stay(tmp_path):
    lm = scripted_lm(lambda r: "ok")
    dspy.configure(lm=lm)
    (row,) = load_suite(template_suite(tmp_path, "form,topic\nhaiku,autumn\n"))
    program = Generator(row.template)
    set_instructions(program, {"generate": row.template + " Use lowercase letters only."})  # what an optimizer edit does
    program(**row.to_example().inputs())
    assert [m.text for m in lm.engine.requests[0].messages] == ["Write a haiku about autumn, with no commas. Use lowercase letters only."]
    with pytest.raises(ValueError, match="no row's `variables`"):
        program(prompt=row.prompt)  # never sent as a system message unfilled


def test_an_experiment_on_a_template_suite_runs_the_template_as_its_start_program(tmp_path, monkeypatch):
    made = {"custom/a": scripted_lm(lambda r: "hi there", model="custom/a")}
    monkeypatch.setattr(specs, "make_lm", lambda spec, **kwargs: made[spec])
    monkeypatch.setattr(runtime, "make_lm", lambda spec, **kwargs: made[spec])
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes"))
    template_suite(tmp_path, "form,topic\nhaiku,autumn\npoem,rain\n")
    config = tmp_path / "eval.toml"
    config.write_text('mode = "self"\nrun_dir = "runs/eval"\n[data]\nsuite = "haiku.toml"\ntrain = 0\nval = 0\n[[arms]]\nname = "start"\nkind = "start"\nlm = "custom/a"\n')
    assert cli.main(["experiment", str(config)]) == 0
    sent = sorted(m.text for r in made["custom/a"].engine.requests for m in r.messages)
    assert sent == ["Write a haiku about autumn, with no commas.", "Write a poem about rain, with no commas."]
    assert all(r.system is None for r in made["custom/a"].engine.requests)
    grid = [json.loads(line) for line in (tmp_path / "runs" / "eval" / "grid.jsonl").read_text().splitlines()]
    assert sorted(row["input"] for row in grid) == sent  # the filled prompt is what is judged and shown
    header = json.loads((tmp_path / "runs" / "eval" / "results.json.run.json").read_text())  # the run's one header
    assert (header["kind"], header["status"]) == ("experiment", "finished") and header["usage"]["lm_calls"] > 0


def test_a_quoted_csv_value_keeps_its_newline_and_a_value_is_never_filled_again(tmp_path):
    """Issue 46 probes t3, t6: a CSV value spanning lines was joined ("autumnleaves"); a value holding {{form}} is
    sent as written."""
    (tmp_path / "rows.csv").write_text('form,topic\nhaiku,"autumn\nleaves"\npoem,{{form}}\n')
    (tmp_path / "t.toml").write_text('template = "Write a {{form}} about {{topic}}."\nrows = "rows.csv"\nchecks = [{verifier = "punctuation:no_comma"}]\n')
    rows = load_suite(tmp_path / "t.toml")
    assert [row.prompt for row in rows] == ["Write a haiku about autumn\nleaves.", "Write a poem about {{form}}."]
    assert rows[1].key == "2"  # issue 57, item 10: a row is named by its number among the data rows, not its line (4)


def test_a_key_column_names_the_rows_and_an_empty_key_is_refused(tmp_path):
    rows = load_suite(template_suite(tmp_path, "key,form,topic\nfirst,haiku,autumn\nsecond,poem,rain\n"))
    assert [r.key for r in rows] == ["first", "second"] and "key" not in rows[0].variables
    jsonl = '{"form": "haiku", "topic": "rain"}\n\n{"form": "poem", "topic": "fog"}\n'  # a blank line is no row
    assert [r.key for r in load_suite(template_suite(tmp_path, jsonl, "rows.jsonl"))] == ["1", "2"]
    with pytest.raises(InputError, match=r"rows.csv:3: field 'key' is empty"):
        load_suite(template_suite(tmp_path, "key,form,topic\nfirst,haiku,autumn\n,poem,rain\n"))
