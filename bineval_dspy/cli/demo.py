"""``bineval demo``: judge three bundled summaries with the embedded LM, the first thing a newcomer runs."""

from __future__ import annotations

import argparse
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

from bineval_dspy.cli.judge import fmt, print_scorecard
from bineval_dspy.cli.options import (
    add_judge_options,
    add_overwrite_option,
    count,
    judge_options,
    lm_options,
    refuse_replacing,
)
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode, InputError
from bineval_dspy.core.jsonio import (
    check_output_path,
    write_json,
)
from bineval_dspy.core.schema import Checklist, JudgeSpec, Scorecard
from bineval_dspy.core.terminal import styled
from bineval_dspy.runs.kinds import RUN_KINDS


@RUN_KINDS.writes("demo")
def cmd_demo(args: argparse.Namespace) -> int:
    """Judge three bundled summaries (good, mediocre, bad) against a checklist, print and save everything.

    The embedded 135M model writes poor checklists, so by default the demo uses one written for the bundled
    example, whose countable questions (numbers and names found in the article, length, capitals, repeated words,
    the main subject) code answers; ``--write-checklist`` lets the LM write it with BinEval's two steps instead.
    """
    from bineval_dspy.checklists.bineval import BinEvalWriter
    from bineval_dspy.checklists.first import write_checklist
    from bineval_dspy.judges.binary import BinaryJudge
    from bineval_dspy.lm import runtime
    from bineval_dspy.lm.budget import metered_map
    from bineval_dspy.lm.usage import Cost, measured, total
    from bineval_dspy.runs.header import headed

    data = files("bineval_dspy").joinpath("data")
    example = json.loads(data.joinpath("demo.json").read_text(encoding="utf-8"))
    out = Path(args.output)
    check_output_path(out)
    if _earlier_demo(out) and not args.overwrite:  # its own results: a second demo in the same folder runs again
        console.print(f"replacing {out}: an earlier demo's results (-o another path keeps them)")
    else:
        refuse_replacing(out, args.overwrite)
    lm = runtime.configure(lm_options(args), args.cache_dir)
    console.print(styled(("Task:", "bold"), f" {example['task']}"))
    writing = Cost()
    if args.write_checklist:
        with console.status("the LM writes the checklist (requirements, then questions)"):
            writer = BinEvalWriter(max_questions=args.max_questions)
            checklist, writing = measured(lambda: write_checklist(writer, example["task"], example["dimensions"]))
        source = "written by the LM (BinEval's two steps)"
    else:
        checklist = Checklist.model_validate_json(data.joinpath("demo_checklist.json").read_text(encoding="utf-8"))
        source = "written for this example and shipped with the demo (--write-checklist: let the LM write one)"
    coded = sum(q.verifier is not None for q in checklist.questions)
    console.print(
        f"checklist: {len(checklist.questions)} questions over {', '.join(checklist.dimensions)}, {source}; "
        f"{coded} answered by code, {len(checklist.questions) - coded} by the LM ({lm.model})"
    )
    judge = BinaryJudge.from_spec(JudgeSpec(model=lm.model, **judge_options(args).model_dump()))
    summaries = example["summaries"]
    with headed(out, "demo") as heading:
        judged = list(metered_map(lambda s: judge(input=example["article"], output=s["text"], checklist=checklist), summaries, "judging"))
        cards = [card for card, _ in judged]
        results = []
        for summary, (card, cost) in zip(summaries, judged):
            shown.print(styled((f"\nsummary '{summary['label']}':", "bold"), f" {summary['text']}"))  # what was judged, before its card
            print_scorecard(f"summary '{summary['label']}'", checklist, card)
            results.append({"label": summary["label"], "summary": summary["text"], "scorecard": card.model_dump(mode="json"), "usage": cost.model_dump(mode="json")})
        _print_ranking(summaries, cards)
        spent = writing + total(cost for _, cost in judged)
        write_json(out, {
            "task": example["task"], "article": example["article"], "checklist_source": source, "checklist": checklist.model_dump(mode="json"),
            "results": results, "checklist_usage": writing.model_dump(mode="json"), "usage": spent.model_dump(mode="json"),
        })
        heading.usage, heading.status = spent, "finished" if all(card.complete for card in cards) else "incomplete"
    shown.print(f"wrote {out}")
    console.print(f"cost: {spent.summary()}")
    return ExitCode.OK if all(card.complete for card in cards) else ExitCode.INCOMPLETE


def _earlier_demo(out: Path) -> bool:
    """Whether ``out`` holds what a demo writes (any other file there is refused, never replaced unasked)."""
    from bineval_dspy.report.runs import load_run

    try:  # read by its header's kind: a file written over a demo's keeps the demo's header, and fails to read as one
        return out.is_file() and load_run(out).kind == "demo"
    except InputError:  # no run, or a damaged one: not ours to replace unasked
        return False


def _print_ranking(summaries: list[dict[str, Any]], cards: list[Scorecard]) -> None:
    """One line a newcomer can check: the overall score of each summary, best first."""
    ranked = sorted(zip(summaries, cards), key=lambda pair: -1.0 if pair[1].overall is None else -pair[1].overall)
    shown.print("ranking: " + " > ".join(f"{s['label']} {fmt(c.overall)}" for s, c in ranked))


def add_demo_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``bineval demo``."""
    demo = sub.add_parser("demo", parents=[common], help="judge three bundled summaries with the embedded LM")
    demo.add_argument("-o", "--output", default="demo-results.json", help="the JSON file of checklist, verdicts and scores")
    add_overwrite_option(demo, "a file that is not an earlier demo's results (those are replaced)")
    demo.add_argument("--max-questions", type=count(1), default=12, help="with --write-checklist: most questions the LM may write")
    add_judge_options(demo, ("probability", "calibration"))
    demo.add_argument("--write-checklist", action="store_true", help="let the LM write the checklist (BinEval's two steps)")
    demo.set_defaults(func=cmd_demo)
