"""`bineval judge --repeats K` (issue 57, item 16): each LM question asked K times a row, the majority counting (a tie
or too many unanswered repeats fail closed), flips and pass^K per row and over the run, repeats as cache entries of
their own, each in an order of its own, and a resume refused under another K."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bineval_dspy import cli
from bineval_dspy.core.errors import ExitCode, InputError
from bineval_dspy.core.repeats import NO_MAJORITY, Repeated, RepeatTally, counted
from bineval_dspy.core.schema import Checklist, JudgeOptions, Question, Verdict
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.judges.repeats import Repeats
from bineval_dspy.lm import remote
from bineval_dspy.lm.runtime import LMOptions
from bineval_dspy.programs.judge_file import JudgeFile, plan_file, run_file
from bineval_dspy.runs.header import read_header
from tests.conftest import prompt_fields, route_cli_lm, verdict_json
from tests.fake_openai import completion, scripted_server, verdict

QUESTIONS = ["Is it short?", "Is it kind?"]


def v(answer: str, p_yes: float | None = None, why: str = "because") -> Verdict:
    return Verdict(question_id="q", answer=answer, p_yes=p_yes, explanation=why, judge="m")  # type: ignore[arg-type]


def files(tmp_path: Path, rows: int = 3, questions: list[Question] | None = None) -> tuple[Path, Path]:
    checklist = Checklist(task="t", dimensions=["d"], questions=questions or [Question(text=text, dimension="d") for text in QUESTIONS])
    (tmp_path / "checklist.json").write_text(checklist.model_dump_json())
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps({"input": f"q{i}", "output": f"a{i}"}) + "\n" for i in range(rows)))
    return tmp_path / "checklist.json", tmp_path / "rows.jsonl"


class Flipping:
    """A judge LM whose answer to "Is it short?" alternates yes, no, yes, ... on each row (counted per row and
    question, so rows judged at once do not disturb it); "Is it kind?" is always yes."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: Any) -> str:
        fields = prompt_fields(request)
        key = (fields["output"], fields["question"])
        with self.lock:
            self.calls[key] += 1
            n = self.calls[key]
        return verdict_json("yes" if "kind" in key[1] or n % 2 == 1 else "no")


def test_the_strict_majority_counts_and_a_tie_or_too_many_unanswered_fail_closed():
    assert counted("q", [v("yes"), v("no"), v("yes")]).answer == "yes"
    assert counted("q", [v("no"), v("no"), v("unanswered")]).answer == "no"  # 2 of 3: a majority of K
    tie = counted("q", [v("yes"), v("no")])
    assert tie.answer == "unanswered" and tie.explanation.startswith(f"{NO_MAJORITY}: 1 yes / 1 no of 2 repeats")
    assert counted("q", [v("yes"), v("unanswered"), v("unanswered")]).answer == "unanswered"
    assert counted("q", [v("yes"), v("yes"), v("no"), v("unanswered")]).answer == "unanswered"  # 2 of 4 is no majority
    dead = counted("q", [v("unanswered", why="no usable answer: LMError timeout")] * 3)
    assert dead.explanation.startswith("no usable answer: LMError")  # the failure's own reason, as the CLI reads it
    assert counted("q", [v("yes", 0.9), v("yes", 0.7), v("no", 0.2)]).p_yes == pytest.approx(0.6)
    assert counted("q", [v("yes", 0.9), v("yes"), v("no", 0.2)]).p_yes is None


def test_flips_pass_k_and_the_run_summary_add_up():
    rows = [
        Repeated(k=3, answers={"a": ["yes", "no", "yes"], "b": ["yes"] * 3}, scores=[1.0, 0.5, 1.0], passes=2),
        Repeated(k=3, answers={"a": ["yes"] * 3, "b": ["yes"] * 3}, scores=[1.0, 1.0, 1.0], passes=3),
    ]
    assert (rows[0].flips, rows[0].pass_k, rows[0].mean) == (1, False, pytest.approx(2.5 / 3))
    tally = RepeatTally()
    for row in rows:
        tally.add(row)
    summary = tally.summary()
    assert summary is not None and (summary.flip_rate, summary.pass_k, summary.pass_rate) == (0.25, 1, pytest.approx(5 / 6))
    assert tally.flip_rates() == [("a", 0.5, 2)]
    assert "flip rate 0.250 (1 of 4 LM verdicts" in summary.line() and "pass^3 0.500 (1 of 2 rows" in summary.line()


def test_a_run_with_repeats_keeps_the_majority_and_the_flips(tmp_path, monkeypatch):
    script = Flipping()
    route_cli_lm(monkeypatch, script)
    checklist, data = files(tmp_path)
    run = run_file(JudgeFile(checklist=checklist, data=data, output=tmp_path / "o.jsonl", judge=JudgeOptions(explanations="none"), repeats=3))
    assert set(script.calls.values()) == {3}  # every LM question asked 3 times a row
    rows = [json.loads(line)["bineval"] for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    for row in rows:
        assert [v["answer"] for v in row["scorecard"]["verdicts"]] == ["yes", "yes"]  # yes, no, yes: yes counts
        assert row["scorecard"]["verdicts"][0]["explanation"].startswith("2 yes / 1 no of 3 repeats")
        assert row["repeats"] == {"k": 3, "answers": {row["scorecard"]["verdicts"][0]["question_id"]: ["yes", "no", "yes"],
                                                      row["scorecard"]["verdicts"][1]["question_id"]: ["yes", "yes", "yes"]},
                                  "scores": [1.0, 0.5, 1.0], "passes": 2, "flips": 1, "pass_k": False, "mean": pytest.approx(2.5 / 3)}  # fmt: skip
    summary = run.summary.repeats.summary()
    assert summary is not None and (summary.flipped, summary.asked, summary.pass_k, summary.rows) == (3, 6, 0, 3)
    header = read_header(tmp_path / "o.jsonl")
    assert header is not None and header.repeats == summary  # CI reads the flip rate from the header


def test_a_tie_is_unanswered_and_the_command_says_why(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, Flipping())
    checklist, data = files(tmp_path, rows=2)
    code = cli.main(["judge", "--checklist", str(checklist), "--data", str(data), "-o", str(tmp_path / "o.jsonl"), "--explanations", "none", "--repeats", "2"])
    out, err = capsys.readouterr()
    assert code == ExitCode.INCOMPLETE  # yes then no: no answer counts, never a yes
    assert "repeats: each LM question asked 2 times; flip rate 0.500 (2 of 4 LM verdicts" in out
    assert "pass^2 0.000 (0 of 2 rows passed every repeat)" in out and "Is it short?" in out
    assert "2 LM verdict(s) unanswered: no answer had a majority of the 2 repeats" in err


def test_a_resume_under_another_k_is_refused_naming_repeats(tmp_path, monkeypatch):
    route_cli_lm(monkeypatch, lambda r: verdict_json("yes"))
    checklist, data = files(tmp_path, rows=2)
    config = JudgeFile(checklist=checklist, data=data, output=tmp_path / "o.jsonl", judge=JudgeOptions(explanations="none"), repeats=3)
    run_file(config)
    with pytest.raises(InputError, match="repeats"):
        run_file(config.model_copy(update={"repeats": 5}))
    with pytest.raises(InputError, match="repeats"):
        run_file(config.model_copy(update={"repeats": 1}))
    assert run_file(config).todo == 0  # the same K resumes
    with pytest.raises(InputError, match="repeats"):
        plan_file(config.model_copy(update={"repeats": 2}))  # the dry run says what the run would
    assert plan_file(config)[0].calls == 0


def test_each_repeat_has_its_own_rollouts_and_repeat_0_is_the_plain_run():
    judge, sampled = BinaryJudge(explanations="none"), BinaryJudge(explanations="none", samples=3)
    plain, again = Repeats(judge, 3).judges, Repeats(sampled, 2).judges
    assert [j.kind.call_config(j, 0, False).get("rollout_id") for j in plain] == [None, 1, 2]
    assert [j.kind.call_config(j, s, False)["rollout_id"] for j in again for s in range(3)] == [0, 1, 2, 3, 4, 5]
    assert judge.repeat == 0 and plain[0] is judge  # the judge given is repeat 0, unchanged


def test_each_repeat_asks_in_its_own_order_and_a_rerun_shuffles_alike():
    checklist = Checklist(task="t", questions=[Question(text=f"Q{i}?", dimension="d") for i in range(8)])
    repeats = Repeats(BinaryJudge(), 3)
    ids = [q.id for q in checklist.questions]
    orders = [repeats.order(checklist, "7", r) for r in range(3)]
    assert orders[0] == ids and sorted(orders[1]) == sorted(ids) and len({tuple(o) for o in orders}) == 3
    assert orders == [Repeats(BinaryJudge(), 3).order(checklist, "7", r) for r in range(3)]
    assert repeats.order(checklist, "8", 1) != orders[1]  # a seed per row too


def test_batch_scoring_numbers_each_repeats_questions_in_its_order(tmp_path, monkeypatch):
    asked: list[list[str]] = []

    def script(request: Any) -> str:
        text = prompt_fields(request)["questions"]
        order = [line.split(": ", 1)[1] for line in text.splitlines() if ": " in line]
        asked.append(order)
        even = lambda question: int(question.split()[2]) % 2 == 0  # noqa: E731  (an answer by the question, not its place)
        return json.dumps({"verdicts": {f"q{k}": {"answer": "yes" if even(q) else "no", "explanation": "ok"} for k, q in enumerate(order, start=1)}})

    route_cli_lm(monkeypatch, script)
    questions = [Question(text=f"Is part {i} there?", dimension="d") for i in range(6)]
    checklist, data = files(tmp_path, rows=1, questions=questions)
    run = run_file(JudgeFile(checklist=checklist, data=data, output=tmp_path / "o.jsonl", judge=JudgeOptions(scoring="batch", explanations="none"), repeats=3))
    texts = [q.text for q in questions]
    assert len(asked) == 3 and asked[0] == texts and all(sorted(order) == sorted(texts) for order in asked)
    assert asked[1] != texts and asked[2] != asked[1]
    (row,) = [json.loads(line)["bineval"] for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [v["answer"] for v in row["scorecard"]["verdicts"]] == ["yes", "no"] * 3  # each answer back on its question
    summary = run.summary.repeats.summary()
    assert summary is not None and summary.flipped == 0


def test_code_checks_are_asked_once_and_never_flip(tmp_path, monkeypatch):
    route_cli_lm(monkeypatch, Flipping())
    questions = [Question(text="Is it short?", dimension="d"), Question(text="Is it lowercase?", dimension="d", verifier="change_case:english_lowercase")]
    checklist, data = files(tmp_path, rows=1, questions=questions)
    run = run_file(JudgeFile(checklist=checklist, data=data, output=tmp_path / "o.jsonl", judge=JudgeOptions(explanations="none"), repeats=3))
    (row,) = [json.loads(line)["bineval"] for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert list(row["repeats"]["answers"]) == [questions[0].id]  # the code check is not among the repeated answers
    summary = run.summary.repeats.summary()
    assert summary is not None and summary.asked == 1


def test_the_plan_counts_every_repeat(tmp_path):
    checklist, data = files(tmp_path)
    plan, _ = plan_file(JudgeFile(checklist=checklist, data=data, output=tmp_path / "o.jsonl", repeats=3))
    assert plan.calls == 3 * 2 * 3 and "x 3 repeats" in plan.what


@pytest.fixture
def fresh_format_memory(monkeypatch):
    monkeypatch.setattr(remote, "_server_forms", {})


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "dspy-path"])
def test_repeats_are_cache_entries_of_their_own_and_a_rerun_replays_them(tmp_path, fast, fresh_format_memory):
    """On a real cache: K repeats reach the server K times (no repeat replays another's call), and the same command
    again is answered from the cache alone, with the same rows."""
    calls: Counter[str] = Counter()

    def reply(body: dict) -> Any:
        text = body["messages"][-1]["content"]
        calls[text] += 1
        return 200, completion(body, verdict("yes" if calls[text] % 2 or "kind" in text else "no"))

    checklist, data = files(tmp_path, rows=2)
    with scripted_server(reply) as server:
        config = JudgeFile(
            checklist=checklist, data=data, output=tmp_path / "o.jsonl", judge=JudgeOptions(explanations="none"), repeats=3,
            lm=LMOptions(spec="openai/m", api_base=server.url), cache_dir=tmp_path / "cache", concurrency=4, fast_path=fast,
        )  # fmt: skip
        first = run_file(config)
        sent = len(server.raw)
        before = (tmp_path / "o.jsonl").read_text()
        again = run_file(config.model_copy(update={"overwrite": True}))
        assert len(server.raw) == sent == 2 * 2 * 3  # rows x questions x repeats, then nothing more
    strip = lambda text: [{**json.loads(line)["bineval"], "usage": None} for line in text.splitlines()]  # noqa: E731
    assert strip((tmp_path / "o.jsonl").read_text()) == strip(before)
    summary, replayed = first.summary.repeats.summary(), again.summary.repeats.summary()
    assert summary is not None and summary == replayed and summary.flipped == 2  # "short?" flipped on both rows


def test_show_and_report_give_the_flip_rate_and_pass_k(tmp_path, monkeypatch, capsys):
    from bineval_dspy.report import load_runs, render

    route_cli_lm(monkeypatch, Flipping())
    checklist, data = files(tmp_path, rows=2)
    run_file(JudgeFile(checklist=checklist, data=data, output=tmp_path / "o.jsonl", judge=JudgeOptions(explanations="none"), repeats=3))
    capsys.readouterr()
    assert cli.main(["show", str(tmp_path / "o.jsonl")]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "flip rate 0.500 (2 of 4 LM verdicts changed between repeats)" in shown and "pass^3 0.000 (0 of 2 rows" in shown
    assert "flipped on 1.00 of 2 row(s): Is it short?" in shown
    (judged,) = load_runs(tmp_path / "o.jsonl")
    html = render([judged], charts_on=False)
    assert "flip rate 0.500 (2 of 4 LM verdicts changed between repeats)" in html
    assert re.search(r"<td class=\"text\">Is it short\?</td><td>1.000</td><td>2</td>", html)  # the question's flip rate over its rows


@pytest.mark.embedded
def test_repeats_on_the_embedded_lm(tmp_path, capsys):
    """Two rows, K = 2, on the embedded model at temperature 0: every LM question asked twice a row (its own cache
    entries), the repeats kept and summed up; the same command again is answered from the cache alone."""
    checklist, data = files(tmp_path, rows=2)
    command = ["judge", "--checklist", str(checklist), "--data", str(data), "--explanations", "none", "--repeats", "2",
               "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    assert cli.main([*command, "-o", str(tmp_path / "o.jsonl")]) in (ExitCode.OK, ExitCode.INCOMPLETE)  # a flip is a tie: unanswered
    out, err = capsys.readouterr()
    rows = [json.loads(line)["bineval"] for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [len(answers) for row in rows for answers in row["repeats"]["answers"].values()] == [2] * 4
    assert "repeats: each LM question asked 2 times; flip rate" in out and "at temperature 0" in " ".join(err.split())
    assert "8 LM call(s)" in " ".join(err.split())
    cli.main([*command, "-o", str(tmp_path / "again.jsonl")])
    assert "cache: 8 hit(s)" in " ".join(capsys.readouterr().err.split())
    strip = lambda path: [{**json.loads(line)["bineval"], "usage": None} for line in path.read_text().splitlines()]  # noqa: E731
    assert strip(tmp_path / "again.jsonl") == strip(tmp_path / "o.jsonl")


def test_a_batch_api_run_sends_every_repeat_in_one_batch(tmp_path):
    from tests.batch_server import batch_server
    from tests.cli.test_reliability import judge_args, results, write_inputs

    write_inputs(tmp_path, [Question(text=text, dimension="d") for text in QUESTIONS], [{"input": f"t{i}", "output": f"a{i}"} for i in range(2)])
    with batch_server(lambda body: verdict("yes")) as server:
        assert cli.main(judge_args(tmp_path, *server.lm_args(), "--batch", "--explanations", "none", "--repeats", "3")) == ExitCode.OK
    assert server.created == 1 and len(server.bodies) == 2 * 2 * 3  # rows x questions x repeats, as requests of their own
    assert all(set(map(len, row["repeats"]["answers"].values())) == {3} for row in results(tmp_path / "out.jsonl"))


def test_a_probe_judge_is_not_repeated(tmp_path):
    """A probe decodes nothing: its K answers would be one answer K times, so the run is refused, not run K times."""
    from bineval_dspy.programs.state import PROGRAM_FILE, ProgramFile
    from tests.judges.test_probe import _probe

    ProgramFile.of(BinaryJudge(explanations="none", probability=True, probe=_probe())).save(tmp_path / "program" / PROGRAM_FILE)
    checklist, data = files(tmp_path)
    with pytest.raises(InputError, match="`repeats`: a probe judge"):
        plan_file(JudgeFile(checklist=checklist, data=data, output=tmp_path / "o.jsonl", program=tmp_path / "program", repeats=3))


def test_the_readme_repeats_command_parses():
    """The README's "In CI" repeats command is one the parser takes as written."""
    import re
    import shlex

    from bineval_dspy.cli.main import build_parser

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    (line,) = [line for line in re.findall(r"^bineval judge .*$", readme, flags=re.M) if "--repeats" in line and "[" not in line]
    args = build_parser().parse_args(shlex.split(line)[1:])
    assert (args.repeats, args.temperature) == (3, 0.7)


def test_a_checklist_of_code_checks_says_there_is_nothing_to_repeat(tmp_path, monkeypatch, capsys):
    route_cli_lm(monkeypatch, Flipping())
    questions = [Question(text="Is it lowercase?", dimension="d", verifier="change_case:english_lowercase")]
    checklist, data = files(tmp_path, rows=2, questions=questions)
    run = run_file(JudgeFile(checklist=checklist, data=data, output=tmp_path / "o.jsonl", repeats=3))
    assert "every question of" in capsys.readouterr().err
    summary = run.summary.repeats.summary()
    assert summary is not None and (summary.asked, summary.flipped) == (0, 0)
    assert summary.mean == run.summary.mean("overall")  # each repeat is the one code-checked card
    assert "no LM question (code checks are asked once: nothing to flip)" in summary.line()
