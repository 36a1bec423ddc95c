"""The prefilled verdict format: the verdict's JSON start ends the prompt as the assistant's own text, so the
answer is the first token generated; read fail-closed (anything but yes or no there is unanswered)."""

from __future__ import annotations

import dspy
import pytest

from bineval_dspy.core.errors import InputError
from bineval_dspy.core.schema import Checklist, JudgeSpec, Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.verdict import VERDICT_PREFILL
from bineval_dspy.testing.scripted import Reply, ScriptedEngine, question_of

CHECKLIST = Checklist(
    task="summarize",
    dimensions=["consistency"],
    questions=[Question(id="q1", text="Is the date correct?", dimension="consistency"), Question(id="q2", text="Is the name correct?", dimension="consistency")],
)


class PrefillEngine(ScriptedEngine):
    supports_prefill = True


def lm_of(script, engine_class=PrefillEngine) -> dspy.LM:
    return dspy.LM("custom/prefill", engine=engine_class(script), cache=False, num_retries=0)


def judged(script, **options):
    lm = lm_of(script)
    with dspy.context(lm=lm):
        card = BinaryJudge(verdict_format="prefilled", **options)(input="ARTICLE", output="SUMMARY", checklist=CHECKLIST)
    return card, lm.engine.requests


def test_the_prompt_ends_with_the_verdicts_start_and_the_reply_continues_it():
    card, requests = judged(lambda r: {"Is the date correct?": "yes", "Is the name correct?": "no"}[question_of(r)], explanations="none")
    assert [v.answer for v in card.verdicts] == ["yes", "no"]
    for request in requests:
        assert (request.messages[-1].role, request.messages[-1].text) == ("assistant", VERDICT_PREFILL)
        assert tuple(request.config.stop) == ('"',)  # a verdict-only call ends at the answer's closing quote
        assert request.config.response_format  # the grammar still holds the rest of the reply


@pytest.mark.parametrize("reply", ["y", "maybe", "yesterday", " yes", "", '"yes"'])
def test_anything_but_yes_or_no_at_the_first_token_is_unanswered(reply):
    card, _ = judged(lambda r: reply, explanations="none")
    assert [v.answer for v in card.verdicts] == ["unanswered", "unanswered"] and card.overall is None


def test_an_explanation_is_decoded_after_the_answer_and_the_whole_reply_must_parse():
    card, _ = judged(lambda r: 'no", "explanation": "the date is wrong"}}')
    assert [(v.answer, v.explanation) for v in card.verdicts] == [("no", "the date is wrong")] * 2
    broken, _ = judged(lambda r: 'no", "explanation": "x"}} {"verdict": {"answer": "yes"}}')  # a second object
    assert {v.answer for v in broken.verdicts} == {"unanswered"}


def test_p_yes_is_read_at_the_first_generated_token():
    card, requests = judged(lambda r: Reply("no", p_yes=0.3), explanations="none", probability=True)
    assert [v.p_yes for v in card.verdicts] == pytest.approx([0.3, 0.3]) and requests[0].config.logprobs


def test_an_lm_that_does_not_continue_a_prefill_is_refused_before_any_call():
    lm = lm_of(lambda r: "yes", engine_class=ScriptedEngine)
    with dspy.context(lm=lm), pytest.raises(InputError, match="prefilled verdict format needs an LM"):
        BinaryJudge(verdict_format="prefilled")(input="A", output="B", checklist=CHECKLIST)
    assert lm.engine.requests == []


def test_the_format_is_recorded_only_when_it_is_not_the_default():
    assert "verdict_format" not in JudgeSpec(model="m").model_dump()  # earlier fingerprints and records unchanged
    spec = JudgeSpec(model="m", verdict_format="prefilled")
    assert BinaryJudge.from_spec(spec).spec().model_dump() == {**spec.model_dump(), "model": "unknown-lm"}
    with pytest.raises(ValueError, match="no chain of thought"):
        BinaryJudge(verdict_format="prefilled", chain_of_thought=True)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--verdict-format", "prefilled", "--cot"], "no chain of thought"),
        (["--verdict-format", "prefilled", "--scoring", "batch"], "no batch scoring"),
        (["--scoring", "batch", "--cot"], "batch scoring answers without chain of thought"),
    ],
)
def test_judge_options_that_cannot_go_together_are_one_line_before_any_work(tmp_path, monkeypatch, capsys, flags, message):
    """They were a ValueError traceback, exit 1 (issue 32's own pass); refused before the LM's cache opens."""
    from bineval_dspy import cli

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BINEVAL_CACHE_DIR", raising=False)

    (tmp_path / "c.json").write_text(CHECKLIST.model_dump_json())
    (tmp_path / "d.jsonl").write_text('{"input": "A", "output": "B"}\n')
    out = tmp_path / "out.jsonl"
    argv = ["judge", "--checklist", str(tmp_path / "c.json"), "--data", str(tmp_path / "d.jsonl"), "-o", str(out), "--lm", "openai/m", "--api-base", "http://127.0.0.1:9/v1"]
    assert cli.main([*argv, *flags]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and message in error and not out.exists() and not (tmp_path / "home").exists()


def test_votes_are_one_token_verdicts_each():
    votes = iter(["yes", "no", "yes"] * 2)
    card, requests = judged(lambda r: next(votes), explanations="none", samples=3)
    assert [v.answer for v in card.verdicts] == ["yes", "yes"] and len(requests) == 6
    assert all(request.messages[-1].text == VERDICT_PREFILL for request in requests)


def test_the_content_free_prior_is_read_at_its_first_token_too():
    def script(request):
        return Reply("yes", p_yes=0.9 if "N/A" in request.messages[-2].text else 0.6)

    card, requests = judged(script, explanations="none", calibration="content_free")
    assert [v.p_yes_content_free for v in card.verdicts] == pytest.approx([0.9, 0.9])
    assert [(v.answer, v.p_yes) for v in card.verdicts] == [("no", pytest.approx(1 / 7))] * 2  # 0.6 against a 0.9 prior
    assert all(request.messages[-1].text == VERDICT_PREFILL and request.config.logprobs for request in requests)
