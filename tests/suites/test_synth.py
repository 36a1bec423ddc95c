"""``bineval suite synth``: seeded training suites whose constraints are valid, compatible and code-checked, and
whose prompts never equal or nearly duplicate a test prompt."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import pytest

from bineval_dspy.cli.main import main
from bineval_dspy.core.neardup import leaks
from bineval_dspy.suites import load_suite
from bineval_dspy.suites.samplers import CONTENT_WORDS, END_PHRASES, PARAGRAPH_OPENERS, RARE_LETTERS, SAMPLERS
from bineval_dspy.suites.synth import (
    CONFLICTS,
    EXCLUDED,
    FAMILIES,
    GROUPS,
    SOLO,
    conflicting,
    family_of,
    kwargs_clash,
    load_tasks,
    read_excluded,
    select_ids,
    synthesize,
)
from bineval_dspy.verifiers import build_check, describe, known_instruction_ids
from tests.conftest import SHARED_DATA

IFEVAL = SHARED_DATA / "ifeval" / "ifeval_shared.jsonl"
IFBENCH = SHARED_DATA / "ifbench" / "ifbench_test_shared.jsonl"


def synth(tmp_path: Path, *options: str, name: str = "synth.jsonl") -> tuple[int, Path]:
    out = tmp_path / name
    return main(["suite", "synth", "-o", str(out), *options]), out


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# -- samplers ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("instruction_id", sorted(SAMPLERS))
def test_every_sampled_instance_builds_its_check_and_rule(instruction_id):
    for seed in range(50):
        kwargs = SAMPLERS[instruction_id](random.Random(seed))
        build_check(instruction_id, kwargs, "Write about the sea.")  # raises VerifierError on kwargs it cannot take
        assert describe(instruction_id, kwargs, "Write about the sea.").strip()


def test_every_registered_id_is_sampled_or_excluded_with_a_reason():
    known = set(known_instruction_ids())
    assert set(SAMPLERS) | set(EXCLUDED) == known
    assert not set(SAMPLERS) & set(EXCLUDED)
    assert all(reason.strip() for reason in EXCLUDED.values())
    assert all(family_of(i) in FAMILIES for i in known)  # every id has a family for --ids
    assert {i for i in known if family_of(i) == "ifeval"} - set(SAMPLERS) == {"combination:repeat_prompt"}


def test_the_conflict_table_names_only_sampled_ids_and_its_own_groups():
    assert {i for members in GROUPS.values() for i in members} | SOLO <= set(SAMPLERS)
    assert {group for pair in CONFLICTS for group in pair} <= set(GROUPS)


def test_the_word_lists_keep_keyword_counts_and_letter_limits_satisfiable():
    assert not [(a, b) for a, b in combinations(CONTENT_WORDS, 2) if a in b or b in a]
    named = " ".join((*CONTENT_WORDS, *END_PHRASES, *PARAGRAPH_OPENERS)).lower()
    assert not set(RARE_LETTERS) & set(named)


@pytest.mark.parametrize(
    "first, second",
    [
        ("change_case:english_lowercase", "change_case:english_capital"),
        ("change_case:english_lowercase", "language:response_language"),
        ("language:response_language", "count:words_japanese"),
        ("length_constraints:number_words", "count:word_count_range"),
        ("length_constraints:number_sentences", "text:sentence_count"),
        ("detectable_format:json_format", "length_constraints:number_paragraphs"),
        ("detectable_format:json_format", "detectable_format:multiple_sections"),
        ("startend:quotation", "format:quote_unquote"),
        ("punctuation:no_comma", "count:punctuation"),
        ("words:prime_lengths", "keywords:existence"),
        ("detectable_format:constrained_response", "punctuation:no_comma"),
        ("punctuation:no_comma", "punctuation:no_comma"),
    ],
)
def test_contradicting_instructions_conflict(first, second):
    assert conflicting(first, second) and conflicting(second, first)


def test_compatible_instructions_do_not_conflict():
    assert not conflicting("change_case:english_lowercase", "punctuation:no_comma")
    assert not conflicting("keywords:existence", "startend:end_checker")
    assert not conflicting("detectable_format:title", "detectable_format:number_bullet_lists")


def test_kwargs_naming_the_same_word_or_a_rationed_letter_clash():
    assert kwargs_clash([{"keywords": ["harbor"]}, {"forbidden_words": ["harbor"]}])
    assert kwargs_clash([{"keyword": "raven", "relation": "at least", "frequency": 3}, {"word": "Raven", "N": 2}])
    assert kwargs_clash([{"letter": "z", "let_relation": "less than", "let_frequency": 2}, {"keywords": ["bronze"]}])
    assert not kwargs_clash([{"keywords": ["harbor"]}, {"relation": "at least", "num_words": 100}, {"forbidden_words": ["very"]}])


def test_no_conflicting_pair_is_ever_drawn():
    rows = synthesize(2000, seed=3, tasks=load_tasks(), ids=select_ids(None)).rows
    drawn = set()
    for row in rows:
        ids = row["instruction_id_list"]
        assert 1 <= len(ids) <= 3
        assert not [pair for pair in combinations(ids, 2) if conflicting(*pair)], row
        assert not kwargs_clash(row["kwargs"]), row
        drawn.update(ids)
    assert drawn == set(SAMPLERS)  # every sampler is used, solo ones included


# -- the command -------------------------------------------------------------------------------------------------
def test_the_same_seed_writes_the_same_bytes(tmp_path, capsys):
    assert synth(tmp_path, "-n", "60", "--seed", "7")[0] == 0
    assert synth(tmp_path, "-n", "60", "--seed", "7", name="again.jsonl")[0] == 0
    assert synth(tmp_path, "-n", "60", "--seed", "8", name="other.jsonl")[0] == 0
    first, again, other = ((tmp_path / name).read_bytes() for name in ("synth.jsonl", "again.jsonl", "other.jsonl"))
    assert first == again and first != other
    assert "wrote 60 row(s)" in capsys.readouterr().out


def test_the_suite_loads_and_every_row_is_graded_by_code(tmp_path):
    code, out = synth(tmp_path, "-n", "200", "--min-instructions", "2", "--max-instructions", "3")
    assert code == 0
    rows = load_suite(out)
    assert [row.key for row in rows] == [f"synth-{i}" for i in range(200)]
    tasks = set(load_tasks())
    for row in rows:
        assert 2 <= len(row.instruction_id_list) <= 3
        assert all(callable(check) for check in row.checks())  # no instruction left ungraded
        rules = [describe(i, k, row.prompt) for i, k in zip(row.instruction_id_list, row.kwargs)]
        task = row.prompt[: row.prompt.index(rules[0])].strip()
        assert task in tasks and row.prompt == " ".join([task, *rules])


def test_ids_restricts_the_draw_to_a_family_a_prefix_or_ids(tmp_path):
    assert synth(tmp_path, "-n", "100", "--ids", "ifeval")[0] == 0
    assert {family_of(i) for row in lines(tmp_path / "synth.jsonl") for i in row["instruction_id_list"]} == {"ifeval"}
    assert synth(tmp_path, "-n", "50", "--ids", "keywords,punctuation:no_comma", "--overwrite")[0] == 0
    drawn = {i for row in lines(tmp_path / "synth.jsonl") for i in row["instruction_id_list"]}
    assert drawn <= {*select_ids("keywords"), "punctuation:no_comma"} and "punctuation:no_comma" in drawn


def test_your_own_tasks_as_lines_or_json_lines(tmp_path):
    (tmp_path / "tasks.txt").write_text("Describe a kite.\n\n  Write about tea  \n", encoding="utf-8")
    (tmp_path / "tasks.jsonl").write_text('{"task": "Describe a kite."}\n{"task": "Write about tea", "id": 2}\n', encoding="utf-8")
    assert load_tasks(tmp_path / "tasks.txt") == load_tasks(tmp_path / "tasks.jsonl") == ["Describe a kite.", "Write about tea"]
    assert synth(tmp_path, "-n", "20", "--tasks", str(tmp_path / "tasks.txt"))[0] == 0
    prompts = [row["prompt"] for row in lines(tmp_path / "synth.jsonl")]
    assert all(p.startswith(("Describe a kite. ", "Write about tea. ")) for p in prompts)


# -- leaks -------------------------------------------------------------------------------------------------------
def test_leaks_finds_equal_and_near_duplicate_prompts():
    excluded = [("test:1", "Write a letter to a friend about your summer holiday by the lake and the boats there.")]
    near = "write a LETTER to a friend  about your summer\nholiday by the lake and the canoes there."
    found = leaks([excluded[0][1], near, "Describe a kite in the wind."], excluded)
    assert [(index, key) for index, key, _ in found] == [(0, "test:1"), (1, "test:1")]
    assert found[0][2] == 1.0 and 0.5 <= found[1][2] < 1.0
    assert leaks([near], excluded, threshold=0.95) == []


IFEVAL_PROMPT = (  # IFEval's key 1000
    'Write a 300+ word summary of the wikipedia page "https://en.wikipedia.org/wiki/Raymond_III,_Count_of_Tripoli". Do not use any '
    "commas and highlight at least 3 sections that has titles in markdown format, for example *highlighted section part 1*, "
    "*highlighted section part 2*, *highlighted section part 3*."
)


@pytest.mark.parametrize(
    "copy",
    [
        IFEVAL_PROMPT.replace(",", ""),  # 0.32 before (issue 46, item 2)
        re.sub(r"([^\w\s])", r" \1", IFEVAL_PROMPT),  # a space before each punctuation mark: 0.28
        re.sub(r"[^\w\s]", "", IFEVAL_PROMPT),  # no punctuation: 0.23
        IFEVAL_PROMPT.replace("a", "\u0430"),  # a Cyrillic a for every Latin one: no shared shingle
        IFEVAL_PROMPT.replace(" ", " \u200b").replace("e", "e\u200b"),  # zero-width spaces: no shared shingle
        IFEVAL_PROMPT.replace("o", "\u03bf").replace("W", "\uff37"),  # a Greek omicron, a full-width W
    ],
    ids=["no commas", "spaced punctuation", "no punctuation", "cyrillic a", "zero-width spaces", "greek and full-width"],
)
def test_a_near_copy_of_a_test_prompt_leaks_whatever_its_punctuation_or_look_alike_letters(copy):
    found = leaks([copy], [("ifeval:1000", IFEVAL_PROMPT)])
    assert [key for _, key, _ in found] == ["ifeval:1000"]  # at least the 0.5 threshold (0.71 without any punctuation, else 1.0)


@pytest.mark.skipif(not (IFEVAL.is_file() and IFBENCH.is_file()), reason=f"no IFEval/IFBench shared data under {SHARED_DATA} (set BINEVAL_SHARED_DATA)")
def test_no_test_prompt_leaks_into_500_rows(tmp_path, capsys):
    code, out = synth(tmp_path, "-n", "500", "--exclude", str(IFEVAL), "--exclude", str(IFBENCH))
    assert code == 0
    assert "redrew " in capsys.readouterr().err
    excluded = read_excluded([IFEVAL, IFBENCH])
    assert len(excluded) > 400
    assert leaks([row["prompt"] for row in lines(out)], excluded) == []


def test_a_task_that_is_a_test_prompt_is_redrawn_and_never_written(tmp_path, capsys):
    test_prompts = [
        "Write a persuasive essay about why cities should build more bicycle lanes, and mention the cost of parking.",
        "Tell me a story about a dragon who is afraid of the dark and learns to love the stars at night.",
    ]
    suite = tmp_path / "test.jsonl"
    suite.write_text("".join(json.dumps({"key": i, "prompt": p}) + "\n" for i, p in enumerate(test_prompts)), encoding="utf-8")
    verbatim, near = test_prompts[0], test_prompts[1].replace("Tell me", "Write")
    clean = ["Describe a kite.", "Explain how tea is grown."]
    tasks = tmp_path / "tasks.txt"
    tasks.write_text("\n".join([verbatim, near, *clean]) + "\n", encoding="utf-8")
    assert len(leaks([verbatim, near, *clean], read_excluded([suite]))) == 2  # the check sees them

    code, out = synth(tmp_path, "-n", "100", "--tasks", str(tasks), "--exclude", str(suite))
    assert code == 0
    redrawn = int(capsys.readouterr().err.split("redrew ")[1].split()[0])
    assert redrawn > 20  # about half of the draws picked one of the two leaking tasks
    prompts = [row["prompt"] for row in lines(out)]
    assert all(p.startswith(tuple(clean)) for p in prompts)
    assert leaks(prompts, read_excluded([suite])) == []


# -- bad input ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "options, message",
    [
        (["--tasks", "{tmp}/missing.txt"], "missing.txt: cannot read"),
        (["--tasks", "{tmp}/bad.jsonl"], "bad.jsonl:2: field 'task'"),
        (["--exclude", "{tmp}/noprompt.jsonl"], "noprompt.jsonl:1: missing field 'prompt'"),
        (["--threshold", "abc"], "--threshold: expected a number"),
        (["--threshold", "1.5"], "--threshold: must be above 0 and at most 1"),
        (["--threshold", "0"], "--threshold: must be above 0 and at most 1"),
        (["--ids", "nope"], "--ids: 'nope' is no family"),
        (["--ids", "custom"], "--ids: 'custom' names no id that can be drawn"),
        (["--ids", "change_case", "--min-instructions", "2"], "cannot draw 2 instructions that go together"),
        (["--min-instructions", "3", "--max-instructions", "2"], "--min-instructions (3) must be from 1 to --max-instructions (2)"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_with_nothing_written(tmp_path, capsys, options, message):
    (tmp_path / "bad.jsonl").write_text('{"task": "Describe a kite."}\n{"task": 3}\n', encoding="utf-8")
    (tmp_path / "noprompt.jsonl").write_text('{"key": 1}\n', encoding="utf-8")
    code, out = synth(tmp_path, *(option.format(tmp=tmp_path) for option in options))
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_a_task_file_with_a_1_gb_line_is_one_located_line_not_a_memory_error(tmp_path, capsys):
    """Issue 46: the tasks file was read whole; now line by line, each capped as a JSON Lines row is."""
    tasks = tmp_path / "tasks.txt"
    with tasks.open("wb") as handle:
        handle.write(b"Describe a kite.\n")
        handle.truncate(2**30)  # sparse: a 1 GB second line of NUL bytes that takes no disk
    code, out = synth(tmp_path, "--tasks", str(tasks))
    err = capsys.readouterr().err
    assert code == 2 and f"{tasks}:2: a line longer than 64 MiB" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_an_existing_output_is_kept_without_overwrite(tmp_path, capsys):
    (tmp_path / "synth.jsonl").write_text("mine\n", encoding="utf-8")
    assert synth(tmp_path, "-n", "5")[0] == 2
    assert "exists; use --overwrite" in capsys.readouterr().err
    assert (tmp_path / "synth.jsonl").read_text(encoding="utf-8") == "mine\n"
    assert synth(tmp_path, "-n", "5", "--overwrite")[0] == 0
    assert len(lines(tmp_path / "synth.jsonl")) == 5


def test_its_help_loads_no_verifier_code():
    probe = (
        "import sys\nfrom bineval_dspy.cli.main import main\ntry:\n    main(['suite', 'synth', '--help'])\nexcept SystemExit:\n    pass\n"
        "print([m for m in ('bineval_dspy.suites.synth', 'bineval_dspy.verifiers', 'dspy') if m in sys.modules], file=sys.stderr)"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert run.stderr.strip().splitlines()[-1] == "[]" and "--exclude" in run.stdout
