"""A verifier of the user's own steers decoding with the public building blocks: a word predicate defined in the
user's file (a word-length cap, which no built-in id has), declared with ``enforce=``, shown by ``bineval
verifiers``, keyed into the steered request's cache by the file's bytes, and held by a real ``generate`` run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bineval_dspy import cli
from bineval_dspy.enforce.steering import CODE_KEY, code_digest, metadata
from bineval_dspy.verifiers import build_check, load_verifier_file
from bineval_dspy.verifiers.enforcement import compile_plan
from tests.enforce.test_property import drive

pytestmark = pytest.mark.usefixtures("own_verifiers")

SHORT = '''
import re

from pydantic import BaseModel, Field

import bineval_dspy
from bineval_dspy.enforce import word_predicate, words


@word_predicate("mine:short", partial=True)  # a word too long only grows: refuse it as soon as it is too long
def short(word: str, most: int) -> bool:
    return len(word) <= most


class ShortArgs(BaseModel):
    most: int = Field(ge=1)


@bineval_dspy.verifier(
    "mine:short_words",
    rule="Use only words of at most {most} letters.",
    kwargs=ShortArgs,
    enforce=lambda most: words("mine:short", most=most),
)
def short_words(response: str, most: int) -> bineval_dspy.Finding:
    long = [w for w in re.findall(r"\\w+", response) if len(w) > most]
    return bineval_dspy.Finding(not long, f"words over {most} letters: {long[:3]}")
'''


def own_file(folder: Path, text: str = SHORT) -> Path:
    path = folder / "short_words.py"
    path.write_text(text)
    return path


def test_bineval_verifiers_shows_the_users_enforcement(tmp_path, capsys):
    assert cli.main(["verifiers", "mine:", "--verifiers", str(own_file(tmp_path))]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "mine:short_words Use only words of at most {most} letters." in out and "enforced by mask" in out


def test_the_users_word_predicate_steers_and_its_verifier_passes(tmp_path):
    load_verifier_file(own_file(tmp_path))
    for seed in range(8):
        kwargs = {"most": 3 + seed % 3}
        plan = compile_plan([("mine:short_words", kwargs)], "p", "annotated")
        assert [d.status for d in plan.decisions] == ["enforced"]
        text = drive(plan.steering, seed, sample=bool(seed % 2))
        assert build_check("mine:short_words", kwargs)(text).passed, text


def test_bad_kwargs_or_a_mismatched_enforce_are_named(tmp_path):
    load_verifier_file(own_file(tmp_path))
    (decision,) = compile_plan([("mine:short_words", {"most": 0})], "p", "annotated").decisions
    assert decision.status == "invalid" and "most" in decision.reason
    from bineval_dspy.core.errors import InputError

    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(InputError, match=r"other/short_words.py:\d+: word predicate 'mine:short' is already defined elsewhere"):
        load_verifier_file(own_file(other))
    mismatched = SHORT.replace('"mine:short"', '"mine:short2"').replace("_words\"", "_words2\"").replace("lambda most: words(", "lambda n: words(").replace("most=most)", "most=n)")
    with pytest.raises(InputError, match=r"short_words.py:\d+: enforce of 'mine:short_words2' takes \['n'\], its kwargs are \['most'\]"):
        load_verifier_file(own_file(other, mismatched))


def test_a_steered_requests_cache_key_changes_with_the_users_file(tmp_path):
    path = own_file(tmp_path)
    load_verifier_file(path)
    steering = compile_plan([("mine:short_words", {"most": 4})], "p", "annotated").steering
    first = metadata(steering)[CODE_KEY]
    assert first.startswith(code_digest() + "+")
    path.write_text(SHORT.replace("return len(word) <= most", "return len(word) <= most  # edited"))
    load_verifier_file(path)
    assert metadata(compile_plan([("mine:short_words", {"most": 4})], "p", "annotated").steering)[CODE_KEY] != first
    builtin = compile_plan([("words:prime_lengths", {})], "p", "annotated").steering
    assert metadata(builtin)[CODE_KEY] == code_digest()  # built-in rules: the library's digest alone


@pytest.mark.embedded
def test_generate_holds_the_users_constraint_on_the_embedded_model(tmp_path, capsys):
    mine = own_file(tmp_path)
    rows = [
        {"key": 1, "prompt": "Describe a cat in short words.", "instruction_id_list": ["mine:short_words"], "kwargs": [{"most": 4}]},
        {"key": 2, "prompt": "Tell me about the sea.", "instruction_id_list": ["mine:short_words"], "kwargs": [{"most": 5}]},
    ]
    suite, out = tmp_path / "s.jsonl", tmp_path / "o.jsonl"
    suite.write_text("".join(json.dumps(row) + "\n" for row in rows))
    args = ["generate", "--suite", str(suite), "--enforce", "annotated", "--max-tokens", "48", "-o", str(out), "--verifiers", str(mine)]
    assert cli.main(args) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    for record, row in zip(records, rows):
        assert record["enforcement"]["held"] == {"mine:short_words": True}, record["response"]
        most = row["kwargs"][0]["most"]
        assert all(len(w) <= most for w in re.findall(r"\w+", record["response"])), record["response"]
        assert len(record["response"].split()) >= 3  # it still wrote something
