"""Failures never look like success: unanswered verdicts, fingerprinted resume, located errors (issue 8)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import dspy
import pytest
from dspy.lm15 import Request

from bineval_dspy import cli
from bineval_dspy.checklists.bineval import BinEvalWriter
from bineval_dspy.core.schema import Checklist, Question
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.logprobs import p_yes_from_logprobs
from bineval_dspy.optimize import lessons
from bineval_dspy.optimize.feedback import SelfUpdateFeedback
from bineval_dspy.optimize.metric import bineval_metric
from bineval_dspy.optimize.optimizer import BinEvalOptimizer
from bineval_dspy.programs.generator import Generator
from tests.checklists.test_bineval import script as checklist_script
from tests.conftest import question_of, route_cli_lm, scripted_lm, verdict_json
from tests.optimize.test_optimizer import World, bag_of_words, checklist_for, rows


class Switch:
    """A scripted LM that fails every call until ``fixed`` is set (a missing API key, a dead endpoint)."""

    def __init__(self, answer: str = "yes") -> None:
        self.fixed = False
        self.answer = answer

    def __call__(self, request: Request) -> str:
        if not self.fixed:
            raise ConnectionError("endpoint unreachable")
        return verdict_json(self.answer)


@pytest.fixture
def use(monkeypatch, words_embedder):
    """Route the CLI's LM set-up to a scripted LM; returns a function taking the script."""

    def install(script) -> dspy.LM:
        return route_cli_lm(monkeypatch, script)

    return install


def files(tmp_path: Path, questions: list[Question] | None = None, rows_: list[dict] | None = None) -> tuple[Path, Path]:
    checklist = Checklist(task="t", dimensions=["d"], questions=questions or [Question(text="Is it short?", dimension="d"), Question(text="Is it kind?", dimension="d")])
    c = tmp_path / "checklist.json"
    c.write_text(checklist.model_dump_json())
    d = tmp_path / "rows.jsonl"
    d.write_text("".join(json.dumps(r) + "\n" for r in rows_ or [{"input": "a", "output": "b"}, {"input": "c", "output": "d"}]))
    return c, d


def judge_args(c: Path, d: Path, out: Path, *extra: str) -> list[str]:
    return ["judge", "--checklist", str(c), "--data", str(d), "-o", str(out), *extra]


# -- 1. a judge whose LM fails everywhere ---------------------------------------------------------------------
def test_a_judge_whose_lm_fails_exits_non_zero_and_a_rerun_judges_again(tmp_path, use, capsys):
    switch = Switch()
    lm = use(switch)
    c, d = files(tmp_path)
    out = tmp_path / "out.jsonl"
    assert cli.main(judge_args(c, d, out)) == 3  # every LM call failed alike: the LM failed (issue 33, item 6)
    err = capsys.readouterr().err
    assert "error: every LM verdict (4) unanswered, each the same way: no usable answer: LMUnexpectedError" in err
    assert "endpoint unreachable" in err.splitlines()[-1]
    rows_out = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["bineval"]["complete"] for r in rows_out] == [False, False]
    assert rows_out[0]["bineval"]["scorecard"]["overall"] is None
    switch.fixed = True  # the user fixes the key: the rerun judges the incomplete rows, it does not "resume" them
    assert cli.main(judge_args(c, d, out)) == 0
    rows_out = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["bineval"]["complete"] for r in rows_out] == [True, True]
    assert [r["bineval"]["scorecard"]["overall"] for r in rows_out] == [1.0, 1.0]
    assert len(lm.engine.requests) == 4 + 4


def test_an_optimizer_whose_generation_fails_everywhere_stops_with_an_error(tmp_path, use, capsys):
    def dead(request: Request) -> str:
        raise ConnectionError("no server")

    use(dead)
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", "instruction_id_list": ["detectable_format:number_bullet_lists"], "kwargs": [{"num_bullets": 2}]}) + "\n" for i in range(4)))
    config = tmp_path / "run.toml"
    config.write_text(f'mode = "self"\nrun_dir = "run"\n[data]\nsuite = "{suite.name}"\ntrain = 2\nval = 2\n')
    assert cli.main(["optimize", str(config)]) == 3
    err = capsys.readouterr().err
    assert "unanswered" in err and "no server" in err and "no failures left" not in err


# -- 2. incomplete is not a score; one definition of failed / unanswered ---------------------------------------
def test_a_tie_under_two_samples_is_unanswered_and_leaves_no_score():
    votes = iter(["yes", "no"])
    dspy.configure(lm=scripted_lm(lambda r: verdict_json(next(votes)) if "kind" in question_of(r) else verdict_json("yes")))
    checklist = Checklist(task="t", dimensions=["d"], questions=[Question(text="Is it kind?", dimension="d"), Question(text="Is it short?", dimension="d")])
    card = BinaryJudge(samples=2)(input="i", output="o", checklist=checklist)
    assert card.verdicts[0].answer == "unanswered"
    assert card.overall is None and card.rescaled["overall"] is None and not card.complete


def test_feedback_and_metric_share_one_definition_of_unanswered():
    def script(request: Request) -> str:
        raise TimeoutError("slow")

    world = World()
    dspy.configure(lm=scripted_lm(world))
    judge = BinaryJudge()
    checklist = Checklist(task="t", dimensions=["d"], questions=[Question(text="Is it kind?", dimension="d")])
    judge.set_lm(scripted_lm(script))
    evaluation = SelfUpdateFeedback(bineval_metric(judge, lambda ex: checklist)).evaluate(Generator("x"), rows(2))
    metric = bineval_metric(judge, lambda ex: checklist)(rows(1)[0], dspy.Prediction(response="r"))
    assert evaluation.score == 0.0 and evaluation.unanswered == 2 and evaluation.failures == []
    assert metric.score == 0.0 and "Unanswered" in metric.feedback and "Failed" not in metric.feedback


# -- 3. chain of thought + probability ---------------------------------------------------------------------------
def entry(token: str, top: dict[str, float]) -> dict:
    return {"token": token, "logprob": 0.0, "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in top.items()]}


def test_p_yes_is_read_at_the_verdict_token_not_in_the_reasoning():
    content = [
        entry('{"reasoning": "', {}),
        entry("the answer", {}),
        entry(" is", {}),
        entry(" yes", {"yes": 0.9, "no": 0.1}),  # reasoning that mentions an answer
        entry('", "verdict": {"answer": "', {}),
        entry("no", {"no": 0.95, "yes": 0.05}),
        entry('", "explanation": "x"}}', {}),
    ]
    assert p_yes_from_logprobs({"content": content}) == pytest.approx(0.05)


def test_probability_mode_never_overrides_the_parsed_answer():
    reply = json.dumps({"verdict": {"answer": "no", "explanation": "e"}})

    class WithLogprobs:
        supports_response_schema = True
        supported_params = frozenset({"temperature", "max_tokens", "response_format", "logprobs", "top_logprobs"})

        def complete(self, request):
            from dspy.lm15 import Message, Response, TokenLogprob, TopLogprob, Usage

            tokens = ['{"verdict": {"answer": "', "no", '", "explanation": "e"}}']
            tops = [(), (TopLogprob(token="yes", logprob=math.log(0.9)), TopLogprob(token="no", logprob=math.log(0.1))), ()]
            logprobs = tuple(TokenLogprob(token=t, logprob=0.0, top=top) for t, top in zip(tokens, tops))
            return Response(id="x", model=request.model, message=Message.assistant(reply), finish_reason="stop", usage=Usage(input_tokens=1, output_tokens=1), logprobs=logprobs)

        def __deepcopy__(self, memo):
            return self

    dspy.configure(lm=dspy.LM("custom/lp", engine=WithLogprobs(), cache=False, num_retries=0))
    verdict = BinaryJudge(probability=True).judge_question("i", "o", Question(text="Is it kind?", dimension="d"))
    assert verdict.answer == "no" and verdict.p_yes == pytest.approx(0.9)


# -- 4. fingerprinted resume ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "change, difference",
    [("--cot", "judge"), ("--samples=3", "judge"), ("checklist", "checklist"), ("data", "data")],
)
def test_judge_refuses_to_resume_into_output_made_otherwise(tmp_path, use, capsys, change, difference):
    use(lambda r: json.dumps({"reasoning": "r", "verdict": {"answer": "yes", "explanation": "e"}}))
    c, d = files(tmp_path)
    out = tmp_path / "out.jsonl"
    assert cli.main(judge_args(c, d, out)) == 0
    extra: list[str] = []
    if change == "checklist":
        files(tmp_path, questions=[Question(text="Is it long?", dimension="d")])
    elif change == "data":
        files(tmp_path, rows_=[{"input": "x", "output": "y"}])
    else:
        extra = [change]
    capsys.readouterr()
    assert cli.main(judge_args(c, d, out, *extra)) == 2
    err = capsys.readouterr().err
    assert f"made with other settings ({difference}" in err and "--overwrite" in err
    assert cli.main(judge_args(c, d, out, *extra, "--overwrite")) == 0


def test_judge_refuses_to_resume_verdicts_made_by_other_verifier_code(tmp_path, use, monkeypatch, capsys):
    """A fixed verifier must not leave the old code's verdicts standing in a resumed run; a checklist that asks
    code nothing resumes whatever the verifiers' code."""
    use(lambda r: verdict_json("yes"))
    coded = [Question(text="Is it lowercase?", dimension="d", verifier="change_case:english_lowercase"), Question(text="Is it kind?", dimension="d")]
    c, d = files(tmp_path, questions=coded)
    out = tmp_path / "out.jsonl"
    assert cli.main(judge_args(c, d, out)) == 0
    lm_only = tmp_path / "lm_only"
    lm_only.mkdir()
    c2, d2 = files(lm_only)
    assert cli.main(judge_args(c2, d2, lm_only / "out.jsonl")) == 0
    monkeypatch.setattr("bineval_dspy.verifiers.code_digest", lambda: "0" * 16)  # the verifiers' code changed
    capsys.readouterr()
    assert cli.main(judge_args(c, d, out)) == 2
    err = capsys.readouterr().err
    assert "made with other settings (verifiers:" in err and "--overwrite" in err
    assert cli.main(judge_args(c2, d2, lm_only / "out.jsonl")) == 0
    assert cli.main(judge_args(c, d, out, "--overwrite")) == 0


def test_judge_refuses_output_it_did_not_make(tmp_path, use, capsys):
    use(lambda r: verdict_json("yes"))
    c, d = files(tmp_path)
    out = tmp_path / "out.jsonl"
    out.write_text('{"line": 1, "scorecard": {}}\n')
    assert cli.main(judge_args(c, d, out)) == 2
    assert "no out.jsonl.run.json (nor the out.jsonl.fingerprint.json of older output) says what made it" in capsys.readouterr().err


def test_generate_refuses_to_resume_under_other_instructions(tmp_path, use, capsys):
    use(lambda r: "a reply")
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps({"key": "1", "prompt": "Say hi.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}) + "\n")
    instructions = tmp_path / "i.txt"
    instructions.write_text("Be brief.")
    out = tmp_path / "o.jsonl"
    assert cli.main(["generate", "--suite", str(suite), "-o", str(out)]) == 0
    assert cli.main(["generate", "--suite", str(suite), "--instructions", str(instructions), "-o", str(out)]) == 2
    assert "(instructions:" in capsys.readouterr().err
    assert cli.main(["generate", "--suite", str(suite), "--refine", "1", "-o", str(out)]) == 2
    assert "made with other settings" in capsys.readouterr().err


def test_optimize_refuses_to_resume_under_a_changed_config(tmp_path, use, monkeypatch, capsys):
    use(World())
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"key": i, "prompt": f"List two fruits ({i}).", "instruction_id_list": ["detectable_format:number_bullet_lists"], "kwargs": [{"num_bullets": 2}]}) + "\n" for i in range(4)))
    config = tmp_path / "run.toml"
    body = f'mode = "self"\nrun_dir = "run"\n[data]\nsuite = "{suite.name}"\ntrain = 2\nval = 2\n[program]\ninstructions = "Answer."\n'
    config.write_text(body)
    assert cli.main(["optimize", str(config)]) == 0
    config.write_text(body.replace('"Answer."', '"Answer well."'))
    assert cli.main(["optimize", str(config)]) == 2
    assert "made with other settings (config." in capsys.readouterr().err  # the field inside the config that changed
    config.write_text(body)
    monkeypatch.setattr("bineval_dspy.optimize.config.code_digest", lambda: "0" * 16)  # the graders' code changed
    assert cli.main(["optimize", str(config)]) == 2
    assert "made with other settings (verifiers:" in capsys.readouterr().err


def test_the_lesson_bank_does_not_carry_over_between_compile_calls():
    dspy.configure(lm=scripted_lm(World()))
    opt = BinEvalOptimizer(bineval_metric(BinaryJudge(), checklist_for), bank=lessons.LessonBank(embed=bag_of_words), max_iterations=1)
    opt.compile(Generator("Answer the request."), trainset=rows(2), valset=rows(2))
    first = opt.lesson_bank
    opt.compile(Generator("Answer the request."), trainset=rows(2), valset=rows(2))
    assert opt.lesson_bank is not None and first is not opt.lesson_bank
    assert [x.support for x in opt.lesson_bank.lessons] == [2]  # not 4: the first run's support is not counted


# -- 7 and 9: one located line for every user mistake --------------------------------------------------------
def test_non_utf8_input_is_one_located_line(tmp_path, use, capsys):
    use(lambda r: verdict_json("yes"))
    c, d = files(tmp_path)
    d.write_bytes(b'{"input": "a", "output": "b"}\n{"input": "\xff", "output": "b"}\n')
    assert cli.main(judge_args(c, d, tmp_path / "o.jsonl")) == 2
    err = capsys.readouterr().err
    assert "rows.jsonl:2: not UTF-8" in err and "Traceback" not in err


@pytest.mark.parametrize("target", ["missing/out.jsonl", "."])
def test_bad_output_paths_are_found_before_any_lm_call(tmp_path, use, capsys, target):
    lm = use(lambda r: verdict_json("yes"))
    c, d = files(tmp_path)
    assert cli.main(judge_args(c, d, tmp_path / target)) == 2
    err = capsys.readouterr().err
    assert ("does not exist" in err or "is a folder" in err) and not lm.engine.requests


def test_output_without_our_fields_is_a_located_error(tmp_path, use, capsys):
    use(lambda r: verdict_json("yes"))
    c, d = files(tmp_path)
    out = tmp_path / "o.jsonl"
    assert cli.main(judge_args(c, d, out)) == 0
    out.write_text('{"input": "a"}\n')
    assert cli.main(judge_args(c, d, out)) == 2
    assert "o.jsonl:1: missing field 'bineval'" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["judge", "--checklist", "c", "--data", "d", "--samples", "0"], ["checklist", "--task", "t", "--max-questions", "0"]])
def test_argument_ranges(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2 and "must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["{}", "[]", "{not json"])
def test_show_on_a_foreign_audit(tmp_path, content, capsys):
    (tmp_path / "audit.json").write_text(content)
    assert cli.main(["show", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "audit.json" in err and "Traceback" not in err


def test_llm_question_bounds_in_toml(tmp_path, capsys):
    config = tmp_path / "run.toml"
    config.write_text('mode = "self"\nrun_dir = "r"\n[data]\nsuite = "s.jsonl"\n[program]\nllm_questions = [5, 2]\n')
    assert cli.main(["optimize", str(config)]) == 2
    assert "run.toml: field 'program.llm_questions'" in capsys.readouterr().err


def test_checklist_when_the_lm_fails_is_one_line(tmp_path, use, capsys):
    def dead(request: Request) -> str:
        raise ConnectionError("no server")

    use(dead)
    assert cli.main(["checklist", "--task", "Summarize.", "-o", str(tmp_path / "c.json")]) == 3
    err = capsys.readouterr().err
    assert "no usable checklist" in err and "Traceback" not in err


def test_empty_data_names_the_data_file(tmp_path, use, capsys):
    use(lambda r: verdict_json("yes"))
    c, d = files(tmp_path)
    d.write_text("\n")
    assert cli.main(judge_args(c, d, tmp_path / "o.jsonl")) == 2
    assert "rows.jsonl: no rows to judge" in capsys.readouterr().err


def test_threads_note_only_when_threads_were_given(tmp_path, monkeypatch, capsys):
    from bineval_dspy.lm.runtime import effective_threads

    local = dspy.LM("local/x", engine=type("E", (), {"in_process": True, "complete": lambda self, r: None})())
    assert effective_threads(local, 4, asked=False) == 1 and "ignored" not in capsys.readouterr().err
    assert effective_threads(local, 4, asked=True) == 1 and "`threads` ignored" in capsys.readouterr().err


# -- 8. verifiers in a judge checklist -----------------------------------------------------------------------
def test_judge_answers_verifier_questions_by_code(tmp_path, use, capsys):
    lm = use(lambda r: verdict_json("yes"))
    lowercase = Question(text="Is the response all lowercase?", dimension="d", verifier="change_case:english_lowercase")
    c, d = files(tmp_path, questions=[lowercase], rows_=[{"input": "Write a line.", "output": "A cat sat on a mat."}])
    out = tmp_path / "o.jsonl"
    assert cli.main(judge_args(c, d, out)) == 0
    verdict = json.loads(out.read_text())["bineval"]["scorecard"]["verdicts"][0]
    assert verdict["answer"] == "no" and verdict["judge"] == "code:change_case:english_lowercase"
    assert not lm.engine.requests


def test_judge_rejects_unknown_verifier_ids(tmp_path, use, capsys):
    use(lambda r: verdict_json("yes"))
    c, d = files(tmp_path, questions=[Question(text="Is it ok?", dimension="d", verifier="no:such_check")])
    assert cli.main(judge_args(c, d, tmp_path / "o.jsonl")) == 2
    assert "field 'questions.0.verifier': unknown verifier id 'no:such_check'; `bineval verifiers` lists them" in capsys.readouterr().err
    c, d = files(tmp_path, questions=[Question(text="Is it lower?", dimension="d", verifier="lowercase")])
    assert cli.main(judge_args(c, d, tmp_path / "o.jsonl")) == 2
    assert "unknown verifier id 'lowercase'; did you mean 'change_case:english_lowercase'?" in capsys.readouterr().err  # issue 33, item 15


# -- 10. DSPy settings survive set_lm and threads ------------------------------------------------------------
def test_dimensions_keep_the_lm_set_on_the_writer():
    own = scripted_lm(checklist_script)
    writer = BinEvalWriter()
    writer.set_lm(own)
    checklist = writer(task="Summarize the article.", dimensions=["relevance", "consistency"])
    assert checklist.questions and own.engine.requests  # no global LM is configured: set_lm's LM was used


def test_threads_see_the_callers_dspy_context():
    from bineval_dspy.lm.budget import metered_map

    lm = scripted_lm(lambda r: verdict_json("yes"))
    with dspy.context(lm=lm):
        seen = [found for found, _ in metered_map(lambda _: dspy.settings.lm, [1, 2, 3, 4], "t", threads=2)]
    assert all(x is lm for x in seen)


def test_a_bad_lm_in_toml_is_reported_as_the_toml_field(tmp_path, capsys):
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps({"key": "1", "prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}) + "\n")
    config = tmp_path / "run.toml"
    config.write_text(f'mode = "self"\nlm = "gpt4"\nrun_dir = "r"\n[data]\nsuite = "{suite.name}"\ntrain = 1\nval = 1\n')
    assert cli.main(["optimize", str(config)]) == 2
    err = capsys.readouterr().err
    assert "run.toml: field 'lm' = 'gpt4'" in err and "--lm" not in err
