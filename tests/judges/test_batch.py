"""Batch scoring: all questions of one output in one call, beside one call per question; a missing verdict is
unanswered, P(yes) is read per verdict, and the judge spec records the mode."""

from __future__ import annotations

import json
import math
import re

import dspy
import pytest
from dspy.lm15 import Request

from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.judges.batch import read_batch
from bineval_dspy.judges.binary import BinaryJudge
from tests.conftest import prompt_fields, question_of, scripted_lm, verdict_json

QUESTIONS = ["Is the summary short?", "Does the summary name the city?", "Is the summary about rain?", "Does it mention snow?"]
CHECKLIST = Checklist(task="Summarize.", dimensions=["content"], questions=[Question(text=t, dimension="content") for t in QUESTIONS])


def rule(question: str, output: str) -> str:
    """The scripted judge's answer: yes when the question's last word (without '?') is in the output."""
    return "yes" if question.rstrip("?").split()[-1].lower() in output.lower() else "no"


def script(request: Request) -> str:
    fields = prompt_fields(request)
    output = fields["output"]
    if "questions" in fields:
        asked = re.findall(r"^(q\d+): (.+)$", fields["questions"], re.M)
        return json.dumps({"verdicts": {key: {"answer": rule(q, output)} for key, q in asked}})
    return verdict_json(rule(question_of(request), output))


@pytest.mark.parametrize("output", ["Rain in the city, short.", "Snow.", "Nothing here."])
def test_batch_and_per_question_agree_on_scripted_replies(output):
    lm = scripted_lm(script)
    dspy.configure(lm=lm)
    each = BinaryJudge(explanations="none")(input="article", output=output, checklist=CHECKLIST)
    assert len(lm.engine.requests) == len(QUESTIONS)
    lm.engine.requests.clear()
    together = BinaryJudge(explanations="none", scoring="batch")(input="article", output=output, checklist=CHECKLIST)
    assert len(lm.engine.requests) == 1
    assert [v.answer for v in together.verdicts] == [v.answer for v in each.verdicts]
    assert together.dimension_scores == each.dimension_scores and together.overall == each.overall
    assert (each.judge.scoring, together.judge.scoring) == ("per_question", "batch")  # type: ignore[union-attr]


def test_a_missing_or_bad_verdict_is_unanswered_and_the_rest_stand():
    reply = json.dumps({"verdicts": {"q1": {"answer": "yes"}, "q3": {"answer": "maybe"}, "q4": {"answer": "no"}}})
    dspy.configure(lm=scripted_lm(lambda r: reply))
    card = BinaryJudge(explanations="none", scoring="batch")(input="a", output="b", checklist=CHECKLIST)
    assert [v.answer for v in card.verdicts] == ["yes", "unanswered", "unanswered", "no"]
    assert "no verdict for this question" in card.verdicts[1].explanation and "'maybe'" in card.verdicts[2].explanation
    assert card.overall is None and card.unanswered == 2  # never a yes, and the score waits for every answer


def test_a_reply_without_verdicts_leaves_every_question_unanswered():
    lm = scripted_lm(lambda r: "Sure! The summary is great.")
    dspy.configure(lm=lm)
    card = BinaryJudge(scoring="batch")(input="a", output="b", checklist=CHECKLIST)
    assert {v.answer for v in card.verdicts} == {"unanswered"} and card.overall is None
    assert card.verdicts[0].explanation.startswith("no usable batch answer")


def test_explanations_come_with_the_batch_and_code_checks_stay_out_of_it():
    routed = CHECKLIST.model_copy(update={"questions": [*CHECKLIST.questions, Question(text="Are numbers from the article?", dimension="content", verifier="grounded:numbers")]})
    lm = scripted_lm(lambda r: json.dumps({"verdicts": {f"q{k}": {"answer": "yes", "explanation": f"reason {k}"} for k in range(1, 5)}}))
    dspy.configure(lm=lm)
    card = BinaryJudge(scoring="batch")(input="The 3 cats.", output="3 cats", checklist=routed)
    assert [v.explanation for v in card.verdicts[:4]] == [f"reason {k}" for k in range(1, 5)]
    assert card.verdicts[4].judge == "code:grounded:numbers" and len(lm.engine.requests) == 1
    assert "Are numbers" not in lm.engine.requests[0].messages[-1].text
    schema = lm.engine.requests[0].config.response_format["schema"]["$defs"]["Verdicts"]
    assert schema["required"] == ["q1", "q2", "q3", "q4"]  # every verdict required: a grammar writes them all


def test_failures_are_explained_and_calibration_asks_one_content_free_batch():
    lm = scripted_lm(script)
    dspy.configure(lm=lm)
    card = BinaryJudge(scoring="batch", explanations="failures")(input="a", output="rain", checklist=CHECKLIST)
    assert [v.answer for v in card.verdicts] == ["no", "no", "yes", "no"]
    assert len(lm.engine.requests) == 1 + 3  # the batch, then one explaining call per failed question
    lm.engine.requests.clear()
    BinaryJudge(scoring="batch", explanations="none", calibration="content_free")(input="a", output="rain", checklist=CHECKLIST)
    assert len(lm.engine.requests) == 2 and "N/A" in lm.engine.requests[1].messages[-1].text


def test_p_yes_is_read_at_each_verdicts_own_answer_token():
    def token(text: str, p_yes: float | None = None) -> dict:
        top = [] if p_yes is None else [{"token": "yes", "logprob": math.log(p_yes)}, {"token": "no", "logprob": math.log(1 - p_yes)}]
        return {"token": text, "logprob": 0.0, "top_logprobs": top}

    logprobs = {"content": [
        token('{"verdicts": {"q1": {"answer": "'), token("yes", 0.8), token('"}, "q2": {"answer": "'), token("no", 0.3), token('"}}}'),
    ]}
    verdicts = read_batch({"q1": {"answer": "yes"}, "q2": {"answer": "no"}}, CHECKLIST.questions[:2], logprobs, "lm", read_p=True)
    assert [round(v.p_yes or 0, 6) for v in verdicts.values()] == [0.8, 0.3]


def test_batch_scoring_is_checked_and_rebuilt_from_its_spec():
    with pytest.raises(ValueError, match="batch scoring answers without chain of thought"):
        BinaryJudge(scoring="batch", chain_of_thought=True)
    with pytest.raises(ValueError, match="scoring must be per_question or batch"):
        BinaryJudge(scoring="all")  # type: ignore[arg-type]
    dspy.configure(lm=scripted_lm(script))
    judge = BinaryJudge(scoring="batch", samples=3)
    assert BinaryJudge.from_spec(judge.spec()).kind.scoring == "batch"
    assert [name for name, _ in BinaryJudge().named_predictors()] == ["answer"]  # a per-question judge keeps one predictor


def test_judge_cli_scoring_batch_is_one_call_per_row_and_in_the_fingerprint(tmp_path, monkeypatch, capsys):
    from bineval_dspy import cli
    from tests.conftest import route_cli_lm

    lm = route_cli_lm(monkeypatch, script)
    (tmp_path / "c.json").write_text(CHECKLIST.model_dump_json())
    (tmp_path / "d.jsonl").write_text('{"input": "a", "output": "rain"}\n{"input": "a", "output": "snow in the city"}\n')
    args = ["judge", "--checklist", str(tmp_path / "c.json"), "--data", str(tmp_path / "d.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--explanations", "none"]
    assert cli.main([*args, "--scoring", "batch"]) == 0, capsys.readouterr().err
    assert len(lm.engine.requests) == 2
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [row["bineval"]["scorecard"]["overall"] for row in rows] == [0.25, 0.5]
    capsys.readouterr()
    assert cli.main([*args, "--limit", "1"]) == 2  # a resume under per-question scoring is refused, naming the field
    assert "judge.scoring: 'batch' -> 'per_question'" in capsys.readouterr().err
