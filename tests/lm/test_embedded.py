"""End-to-end with the real embedded LM (SmolLM2-135M-Instruct Q4_1 via llama.cpp): no mocks."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import dspy
import pytest
from dspy.lm15 import Config, Message, Request

from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.lm.specs import make_lm

pytestmark = pytest.mark.embedded


@pytest.fixture(scope="module")
def lm() -> dspy.LM:
    return make_lm("smollm2", cache=False)


def request(lm: dspy.LM, user: str, **config) -> Request:
    return Request(model=lm.model, system="You are terse.", messages=(Message.user(user),), config=Config(**config))


def test_model_string_names_file_and_quantisation(lm):
    assert lm.model.startswith("local/smollm2-135m-instruct-q4_1@sha256-")
    assert copy.deepcopy(lm).engine is lm.engine  # weights are never duplicated


def test_json_schema_is_enforced_and_logprobs_exposed(lm):
    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"], "additionalProperties": False}
    response = lm.engine.complete(
        request(lm, "Is the sky green? Reply in JSON.", max_tokens=20, temperature=0.0, logprobs=5,
                response_format={"type": "json_schema", "schema": schema, "name": "r", "strict": True})
    )
    assert json.loads(response.message.text)["answer"] in ("yes", "no")
    assert response.logprobs and len(response.logprobs[0].top) == 5


def test_prefix_is_reused_across_calls_that_share_it(lm):
    """Schema calls (verdicts) reuse the KV cells of a shared prefix; free text is prefilled whole, so a generation
    depends on its prompt alone (``llama_engine``'s module docstring)."""
    engine = lm.engine
    shared = "Article: " + "The council met on Tuesday and voted on the budget. " * 20
    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"]}
    verdict = {"response_format": {"type": "json_schema", "schema": schema, "name": "r", "strict": True}}

    def evaluated(question: str, **config) -> tuple[int, int]:
        before = (engine.stats.prompt_tokens, engine.stats.evaluated_prompt_tokens)
        engine.complete(request(lm, shared + question, max_tokens=2, temperature=0.0, **config))
        return engine.stats.prompt_tokens - before[0], engine.stats.evaluated_prompt_tokens - before[1]

    evaluated("\nQuestion one?", **verdict)
    prompt, suffix = evaluated("\nQuestion two?", **verdict)
    assert prompt > 200 and suffix < 20  # only the question's suffix was evaluated
    prompt, whole = evaluated("\nQuestion three?")
    assert whole == prompt  # free text: the whole prompt, whatever came before


def test_threads_share_one_model_safely(lm):
    results: list[str] = []

    def call(i: int) -> None:
        results.append(lm.engine.complete(request(lm, f"Say {i}.", max_tokens=4, temperature=0.0)).message.text)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4


def test_judge_probability_mode_end_to_end(lm):
    dspy.configure(lm=lm)
    checklist = Checklist(task="t", dimensions=["facts"], questions=[Question(text="Does the summary mention a library?", dimension="facts")])
    card = BinaryJudge(probability=True)(input="The town will build a library.", output="A library will be built.", checklist=checklist)
    verdict = card.verdicts[0]
    assert verdict.answer in ("yes", "no")
    assert verdict.p_yes is not None and 0.0 <= verdict.p_yes <= 1.0
    assert (verdict.answer == "yes") == (verdict.p_yes >= 0.5)
    assert card.overall == pytest.approx(verdict.p_yes)


def run_demo(tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "demo.json"
    env = {**os.environ, "BINEVAL_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "bineval_dspy.cli", "demo", "-o", str(out), *extra], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ranking: " in done.stdout  # a result: on stdout
    result = json.loads(out.read_text())
    questions = {q["id"] for q in result["checklist"]["questions"]}
    assert questions
    assert [r["label"] for r in result["results"]] == ["good", "mediocre", "bad"]
    for r in result["results"]:
        card = r["scorecard"]
        assert {v["question_id"] for v in card["verdicts"]} == questions
        assert all(v["answer"] in ("yes", "no") for v in card["verdicts"])
        assert all(v["judge"].startswith(("local/smollm2", "code:")) for v in card["verdicts"])
        assert set(card["dimension_scores"]) <= set(result["checklist"]["dimensions"])
    return result


def test_demo_tells_good_from_bad(tmp_path):
    result = run_demo(tmp_path)
    good, mediocre, bad = (r["scorecard"] for r in result["results"])
    assert good["overall"] > mediocre["overall"] > bad["overall"]
    assert good["overall"] - bad["overall"] >= 0.15
    for dimension in result["checklist"]["dimensions"]:
        scores = [card["dimension_scores"][dimension] for card in (good, mediocre, bad)]
        assert scores[0] >= scores[1] >= scores[2] and scores[0] > scores[2], (dimension, scores)
    judges = {v["judge"].split(":")[0] for v in good["verdicts"]}
    assert judges == {"code", result["results"][0]["scorecard"]["judge"]["model"].split(":")[0]}


def test_demo_with_a_checklist_the_lm_writes(tmp_path):
    result = run_demo(tmp_path, "--write-checklist", "--max-questions", "4")
    assert result["checklist_source"].startswith("written by the LM")


def test_check_first_grammar_decoding_matches_masking_every_step(lm):
    from itertools import islice

    engine = lm.engine
    llama = engine._load()
    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}, "why": {"type": "string", "maxLength": 40}},
              "required": ["answer", "why"], "additionalProperties": False}
    grammar = engine._grammar({"type": "json_schema", "schema": schema})
    tokens = engine.tokenize(engine.render(request(lm, "Is the sky green? Reply in JSON.")))
    llama.reset()
    masked = list(islice(llama.generate(tokens, temp=0.0, top_k=40, top_p=0.95, min_p=0.0, repeat_penalty=1.0, grammar=grammar), 25))
    from bineval_dspy.lm._decoding import _Decoding, _last_logits

    llama.reset()
    llama.eval(tokens)
    decoding = _Decoding(llama, Config(max_tokens=25), grammar, greedy=True)
    check_first = []
    for _ in range(25):
        token = decoding.choose(_last_logits(llama))
        check_first.append(token)
        llama.eval([token])
    decoding.close()
    assert check_first == masked
