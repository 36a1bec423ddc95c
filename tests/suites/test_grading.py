"""Tests for ``bineval verify``: grading a responses file against an IFBench-style suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bineval_dspy.checklists.hybrid import hybrid_checklist
from bineval_dspy.cli.main import main
from bineval_dspy.core.errors import InputError
from bineval_dspy.suites import ResponseRow, SuiteRow, grade, load_suite, verify
from bineval_dspy.verifiers import VerifierError
from tests.conftest import SHARED_DATA

NO_COMMA = "punctuation:no_comma"
HAS_KEYWORD = "keywords:existence"
LOWERCASE = "change_case:english_lowercase"


def _output(capsys) -> str:
    """What a command printed: notes on stderr, then its results on stdout."""
    captured = capsys.readouterr()
    return captured.err + captured.out


def write_jsonl(path: Path, rows: list[dict | str]) -> Path:
    """Rows given as strings are written verbatim (for malformed lines)."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def suite_row(key, prompt: str, ids: list[str], kwargs: list[dict]) -> dict:
    return {"key": key, "prompt": prompt, "instruction_id_list": ids, "kwargs": kwargs}


SUITE = [
    # IFEval files use integer keys; IFBench files pad kwargs with nulls.
    suite_row(1, "Praise apples.", [NO_COMMA, HAS_KEYWORD], [{}, {"keywords": ["apple"], "num_words": None}]),
    suite_row("2", "List two letters without commas.", [NO_COMMA], [{}]),
    suite_row("3", "Mention pears, in lowercase.", [LOWERCASE, HAS_KEYWORD], [{}, {"keywords": ["pear"]}]),
]


def run_verify(tmp_path: Path, suite: list, responses: list, *extra: str) -> tuple[int, Path]:
    out = tmp_path / "results.jsonl"
    suite_file = write_jsonl(tmp_path / "suite.jsonl", suite)
    responses_file = write_jsonl(tmp_path / "responses.jsonl", responses)
    code = main(["verify", "--suite", str(suite_file), "--responses", str(responses_file), "-o", str(out), *extra])
    return code, out


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def one_line(text: str) -> str:
    """Rich wraps long lines and draws table borders; compare the words only."""
    return " ".join(text.replace("\u2502", " ").split())


# --- grading through the CLI -----------------------------------------------------------------


def test_verify_writes_official_rows_and_accuracies(tmp_path, capsys):
    responses = [
        {"key": 3, "response": "i really like the taste of a ripe pear in the morning."},  # int key matches "3"
        {"prompt": "List two letters without commas.", "response": "a, b"},  # matched by prompt
        {"key": "1", "response": "An apple a day.", "model": "ignored"},
    ]
    code, out = run_verify(tmp_path, SUITE, responses)
    assert code == 0
    assert read_rows(out) == [  # suite order, official field names plus key and ungraded
        {
            "key": 1,  # as the suite wrote it: IFEval's integer keys stay integers
            "prompt": "Praise apples.",
            "response": "An apple a day.",
            "instruction_id_list": [NO_COMMA, HAS_KEYWORD],
            "follow_instruction_list": [True, True],
            "follow_all_instructions": True,
            "ungraded": [],
        },
        {
            "key": "2",
            "prompt": "List two letters without commas.",
            "response": "a, b",
            "instruction_id_list": [NO_COMMA],
            "follow_instruction_list": [False],
            "follow_all_instructions": False,
            "ungraded": [],
        },
        {
            "key": "3",
            "prompt": "Mention pears, in lowercase.",
            "response": "i really like the taste of a ripe pear in the morning.",
            "instruction_id_list": [LOWERCASE, HAS_KEYWORD],
            "follow_instruction_list": [True, True],
            "follow_all_instructions": True,
            "ungraded": [],
        },
    ]
    err = one_line(_output(capsys))
    assert "prompt 2 3 66.67%" in err
    assert "instruction 4 5 80.00%" in err


def test_verify_counts_failed_instructions_at_both_levels(tmp_path, capsys):
    responses = [{"key": "3", "response": "No pear here."}, {"key": "1", "response": "Bananas, sadly."}]
    code, out = run_verify(tmp_path, SUITE, responses)
    assert code == 1  # suite row 2 has no response: the accuracies cover part of the suite
    assert [r["follow_instruction_list"] for r in read_rows(out)] == [[False, False], [False, True]]
    err = one_line(_output(capsys))
    assert "prompt 0 2 0.00%" in err
    assert "instruction 1 4 25.00%" in err
    assert "1 suite row(s) had no response" in err


def test_loose_mode_forgives_a_chatty_first_line(tmp_path):
    suite = [suite_row("a", "Answer in lowercase.", [LOWERCASE], [{}])]
    responses = [{"key": "a", "response": "Sure! Here it is:\nhere is the answer, written in lowercase as you asked."}]
    _, strict_out = run_verify(tmp_path, suite, responses)
    strict = read_rows(strict_out)
    code, loose_out = run_verify(tmp_path, suite, responses, "--mode", "loose", "--overwrite")
    assert code == 0
    assert strict[0]["follow_instruction_list"] == [False]
    assert read_rows(loose_out)[0]["follow_instruction_list"] == [True]


# --- bad input ----------------------------------------------------------------------------------

BAD_SUITE_ROWS = {
    "missing field": ({"key": "x", "prompt": "p", "instruction_id_list": [NO_COMMA]}, "missing field 'kwargs'"),
    "mismatched kwargs": (suite_row("x", "p", [NO_COMMA], [{}, {}]), "mismatched kwargs"),
    "unknown id": (suite_row("x", "p", ["made:up"], [{}]), "instruction_id_list.0': unknown instruction id 'made:up'"),
    "wrong type": (suite_row("x", "p", NO_COMMA, [{}]), "field 'instruction_id_list'"),
    "duplicate key": (suite_row("1", "q", [NO_COMMA], [{}]), "duplicate key '1' (first at line 1)"),
    "malformed JSON": ('{"key": "x", ', "malformed JSON"),
}


@pytest.mark.parametrize("case", BAD_SUITE_ROWS)
def test_bad_suite_row_is_a_one_line_error_naming_file_and_line(tmp_path, capsys, case):
    row, message = BAD_SUITE_ROWS[case]
    code, _ = run_verify(tmp_path, [SUITE[0], row], [{"key": "1", "response": "apple"}])
    err = _output(capsys)
    assert code == 2
    assert err.count("\n") == 1
    assert "suite.jsonl:2: " in err
    assert message in err


BAD_RESPONSES = {
    "no suite row by key": ({"key": "9", "response": "r"}, "field 'key': no suite row with key '9'"),
    "no suite row by prompt": ({"prompt": "Other?", "response": "r"}, "field 'prompt': no suite row has this prompt"),
    "missing response": ({"key": "2"}, "missing field 'response'"),
    "missing key and prompt": ({"response": "r"}, "missing field 'key' or 'prompt'"),
    "response not text": ({"key": "2", "response": None}, "field 'response'"),
    "second response": ({"key": "1", "response": "r"}, "second response for suite key '1' (first at "),
    "malformed JSON": ("not json", "malformed JSON"),
}


@pytest.mark.parametrize("case", BAD_RESPONSES)
def test_bad_response_is_a_one_line_error_naming_file_and_line(tmp_path, capsys, case):
    row, message = BAD_RESPONSES[case]
    code, _ = run_verify(tmp_path, SUITE, [{"key": "1", "response": "apple"}, row])
    err = _output(capsys)
    assert code == 2
    assert err.count("\n") == 1
    assert "responses.jsonl:2: " in err
    assert message in err


def test_skip_invalid_grades_the_rest_and_reports_what_it_skipped(tmp_path, capsys):
    suite = [*SUITE, suite_row("4", "p", ["made:up"], [{}])]
    responses = [{"key": "1", "response": "apple"}, {"key": "4", "response": "r"}, {"response": "r"}]
    code, out = run_verify(tmp_path, suite, responses, "--skip-invalid")
    assert code == 1  # graded, but the accuracies rest on less than the files hold
    assert [r["key"] for r in read_rows(out)] == [1]
    err = one_line(_output(capsys))
    assert "skipped 1 invalid suite row(s) and 2 invalid or unmatched response(s)" in err


def test_skip_invalid_still_stops_on_malformed_json(tmp_path):
    code, _ = run_verify(tmp_path, SUITE, [{"key": "1", "response": "apple"}, "{oops"], "--skip-invalid")
    assert code == 2


def test_empty_responses_file_is_an_error(tmp_path, capsys):
    code, _ = run_verify(tmp_path, SUITE, [])
    assert code == 2
    assert "responses.jsonl: no responses" in capsys.readouterr().err


# --- instructions whose kwargs their verifier rejects: ungraded, the rest of the row is graded --------

LETTER = "keywords:letter_frequency"
BAD_LETTER = {"letter": "#", "let_frequency": 2, "let_relation": "at least"}  # as in IFEval's shared prompt 1122
BAD_LETTER_REASON = "kwargs.0: keywords:letter_frequency: bad kwargs (letter must be a single letter, got '#')"
UNGRADED_ROW = suite_row(5, "Use # twice and no commas.", [LETTER, NO_COMMA], [BAD_LETTER, {}])


def test_bad_kwargs_leave_that_instruction_ungraded_and_grade_the_rest(tmp_path, capsys):
    responses = [{"key": "5", "response": "# and # again"}, {"key": "2", "response": "a b"}]
    code, out = run_verify(tmp_path, [*SUITE, UNGRADED_ROW], responses)
    assert code == 1
    rows = {str(row["key"]): row for row in read_rows(out)}
    assert rows["5"]["follow_instruction_list"] == [None, True]
    assert rows["5"]["follow_all_instructions"] is None
    assert rows["5"]["ungraded"] == [BAD_LETTER_REASON]
    err = one_line(_output(capsys))
    assert "prompt 1 1 100.00%" in err  # key "5" has no known outcome
    assert "instruction 2 2 100.00%" in err
    assert "1 instruction(s) ungraded" in err
    assert "1 prompt(s) with an unknown outcome" in err


def test_a_failed_graded_instruction_still_fails_the_prompt():
    row = SuiteRow.model_validate(UNGRADED_ROW)
    result = grade(row, "#, and #")
    assert (result.follow_instruction_list, result.follow_all_instructions) == ([None, False], False)
    assert result.ungraded == [BAD_LETTER_REASON]


def test_ungraded_instructions_and_unknown_prompts_stay_out_of_the_accuracies():
    suite = [
        SuiteRow.model_validate({**UNGRADED_ROW, "key": "a"}),
        SuiteRow.model_validate({**UNGRADED_ROW, "key": "b"}),
        SuiteRow(key="c", prompt="No commas.", instruction_id_list=[NO_COMMA], kwargs=[{}]),
    ]
    responses = [ResponseRow(where=f"r:{k}", key=k, response=text) for k, text in zip("abc", ["ok", "a, b", "ok"])]
    results, stats = verify(suite, responses)
    assert [r.follow_all_instructions for r in results] == [None, False, True]
    assert (stats.prompts, stats.prompts_followed, stats.ungraded_prompts) == (2, 1, 1)
    assert (stats.instructions, stats.instructions_followed, stats.ungraded_instructions) == (3, 2, 2)
    assert (stats.prompt_accuracy, stats.instruction_accuracy) == (0.5, 2 / 3)


def test_an_unexpected_kwarg_is_ungraded_too():
    row = SuiteRow(key="x", prompt="p", instruction_id_list=[NO_COMMA], kwargs=[{"bogus": 1}])
    result = grade(row, "ok")
    assert (result.follow_instruction_list, result.follow_all_instructions) == ([None], None)
    assert result.ungraded == ["kwargs.0: punctuation:no_comma: unexpected kwargs bogus"]


def test_an_unknown_instruction_id_is_still_an_error_of_the_row():
    row = SuiteRow(key="x", prompt="p", instruction_id_list=["made:up", NO_COMMA], kwargs=[{}, {}])
    with pytest.raises(VerifierError, match="unknown instruction id 'made:up'"):
        grade(row, "ok")


def test_load_suite_keeps_a_row_whose_kwargs_a_verifier_rejects(tmp_path):
    assert [r.key for r in load_suite(write_jsonl(tmp_path / "suite.jsonl", [UNGRADED_ROW]))] == ["5"]


def test_every_shared_ifeval_prompt_loads():
    suite_file = SHARED_DATA / "ifeval" / "ifeval_shared.jsonl"
    if not suite_file.exists():
        pytest.skip(f"IFEval shared data not found under {SHARED_DATA} (set BINEVAL_SHARED_DATA)")
    rows = load_suite(suite_file)  # prompt 1122 asks for the frequency of the "letter" '#'
    assert len(rows) == 270
    assert sum(isinstance(check, str) for row in rows for check in row.checks()) == 1


def test_hybrid_checklist_asks_no_question_about_an_ungraded_constraint():
    row = SuiteRow.model_validate(UNGRADED_ROW)
    assert [q.verifier for q in hybrid_checklist(row, n_llm_questions=(0, 0)).questions] == [NO_COMMA]
    only_bad = row.model_copy(update={"instruction_id_list": [LETTER], "kwargs": [BAD_LETTER]})
    with pytest.raises(InputError, match="suite row '5': no constraint code can check"):
        hybrid_checklist(only_bad, n_llm_questions=(0, 0))


# --- library functions ----------------------------------------------------------------------------


def test_load_suite_normalizes_integer_keys(tmp_path):
    rows = load_suite(write_jsonl(tmp_path / "suite.jsonl", SUITE))
    assert [r.key for r in rows] == ["1", "2", "3"]


def test_prompt_matching_tolerates_surrounding_whitespace_but_not_ambiguity():
    suite = [SuiteRow(key="a", prompt="Same.", instruction_id_list=[NO_COMMA], kwargs=[{}])]
    rows, stats = verify(suite, [ResponseRow(where="r:1", prompt="  Same.\n", response="ok")])
    assert [r.key for r in rows] == ["a"] and stats.prompt_accuracy == 1.0
    twice = [*suite, SuiteRow(key="b", prompt="Same.", instruction_id_list=[NO_COMMA], kwargs=[{}])]
    with pytest.raises(InputError, match=r"^r:1: field 'prompt': matches suite rows 'a', 'b'; give a 'key'$"):
        verify(twice, [ResponseRow(where="r:1", prompt="Same.", response="ok")])


def test_no_graded_rows_gives_no_accuracy():
    suite = [SuiteRow(key="a", prompt="p", instruction_id_list=[NO_COMMA], kwargs=[{}])]
    rows, stats = verify(suite, [ResponseRow(where="r:1", key="zz", response="ok")], skip_invalid=True)
    assert rows == []
    assert (stats.prompt_accuracy, stats.instruction_accuracy) == (None, None)
    assert (stats.skipped_responses, stats.suite_rows_without_response) == (1, 1)


# --- agreement with the official IFBench grader ---------------------------------------------------


def test_reproduces_official_ifbench_verdicts(tmp_path):
    suite_file = SHARED_DATA / "ifbench" / "ifbench_test_shared.jsonl"
    graded_file = SHARED_DATA / "ifbench" / "ifbench_sample_responses_graded.jsonl"
    if not (suite_file.exists() and graded_file.exists()):
        pytest.skip(f"IFBench shared data not found under {SHARED_DATA} (set BINEVAL_SHARED_DATA)")
    official = {str(r["key"]): r for r in read_rows(graded_file)}
    for mode in ("strict", "loose"):
        out = tmp_path / f"{mode}.jsonl"
        args = ["verify", "--suite", str(suite_file), "--responses", str(graded_file), "--mode", mode, "-o", str(out)]
        assert main(args) == (0 if len(official) == len(load_suite(suite_file)) else 1)  # 1: suite rows without a response
        ours = read_rows(out)
        verdicts = f"{mode}_follow_instruction_list"
        assert {str(r["key"]) for r in ours} == set(official)
        pairs = [
            (mine, theirs)
            for row in ours
            for mine, theirs in zip(row["follow_instruction_list"], official[str(row["key"])][verdicts])
        ]
        assert len(pairs) == 226
        agree = sum(mine == theirs for mine, theirs in pairs)
        assert agree / len(pairs) >= 0.97, f"{mode}: {agree}/{len(pairs)} agree"


def test_an_empty_suite_is_blamed_on_the_suite(tmp_path, capsys):
    code, _ = run_verify(tmp_path, [], [{"key": "1", "response": "apple"}])
    assert code == 2 and "suite.jsonl: no suite rows" in capsys.readouterr().err
