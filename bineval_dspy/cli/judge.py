"""``bineval demo``, ``checklist`` and ``judge``: write checklists and judge outputs against them."""

from __future__ import annotations

import argparse
import json
from importlib.resources import files
from pathlib import Path

from rich.table import Table

from bineval_dspy.checklists.bineval import BinEvalWriter
from bineval_dspy.core.console import console, progress_map
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.jsonio import append_jsonl, load_model, read_jsonl
from bineval_dspy.core.schema import Checklist, Scorecard
from bineval_dspy.core.scoring import join
from bineval_dspy.judges.binary import BinaryJudge
from bineval_dspy.lm import runtime
from bineval_dspy.lm.runtime import effective_threads


def _read_task(value: str) -> str:
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    return value


def print_scorecard(title: str, checklist: Checklist, card: Scorecard) -> None:
    """Per-question verdicts with explanations, then per-dimension scores."""
    table = Table(title=title, show_lines=False, expand=True)
    table.add_column("dimension", style="cyan", no_wrap=True)
    table.add_column("question")
    table.add_column("answer", no_wrap=True)
    table.add_column("explanation", style="dim")
    colours = {"yes": "green", "no": "red", "unanswered": "yellow"}
    for q, v in join(checklist, card.verdicts):
        p = f" ({v.p_yes:.2f})" if v.p_yes is not None else ""
        table.add_row(q.dimension, q.text, f"[{colours[v.answer]}]{v.answer}[/]{p}", v.explanation)
    console.print(table)
    scores = Table(show_header=True)
    for dim in [*card.dimension_scores, "overall"]:
        scores.add_column(dim, justify="right")
    values = [*card.dimension_scores.values(), card.overall]
    rescaled = [card.rescaled.get(d) for d in [*card.dimension_scores, "overall"]]
    scores.add_row(*[_fmt(v) for v in values])
    scores.add_row(*[f"{_fmt(v)} / 5" for v in rescaled])
    console.print(scores)
    if card.unanswered:
        console.print(f"[yellow]{card.unanswered} question(s) unanswered: not counted as yes[/]")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


# -- commands ----------------------------------------------------------------------------
def cmd_demo(args: argparse.Namespace) -> None:
    """Build a checklist for the bundled example, judge three summaries, print and save everything."""
    example = json.loads(files("bineval_dspy").joinpath("data/demo.json").read_text(encoding="utf-8"))
    runtime.configure(args.lm, args.cache_dir)
    console.print(f"[bold]Task:[/] {example['task']}")
    with console.status("writing the checklist (requirements, then questions)"):
        checklist = BinEvalWriter(max_questions=args.max_questions)(task=example["task"], dimensions=example["dimensions"])
    console.print(f"checklist: {len(checklist.questions)} questions over {', '.join(checklist.dimensions)}")
    judge = BinaryJudge(probability=args.probability)
    summaries = example["summaries"]
    cards = list(progress_map(lambda s: judge(input=example["article"], output=s["text"], checklist=checklist), summaries, "judging"))
    results = []
    for summary, card in zip(summaries, cards):
        print_scorecard(f"summary '{summary['label']}'", checklist, card)
        results.append({"label": summary["label"], "summary": summary["text"], "scorecard": card.model_dump(mode="json")})
    Path(args.output).write_text(
        json.dumps({"task": example["task"], "article": example["article"], "checklist": checklist.model_dump(mode="json"), "results": results}, indent=2),
        encoding="utf-8",
    )
    console.print(f"wrote {args.output}")


def cmd_checklist(args: argparse.Namespace) -> None:
    """Generate a checklist for a task and save it as JSON."""
    task = _read_task(args.task)
    if not task.strip():
        raise InputError("--task: the task description is empty")
    dims = [d for d in (args.dimensions or "").split(",") if d.strip()]
    runtime.configure(args.lm, args.cache_dir)
    with console.status("writing the checklist"):
        checklist = BinEvalWriter(max_questions=args.max_questions)(task=task, dimensions=dims)
    Path(args.output).write_text(checklist.model_dump_json(indent=2), encoding="utf-8")
    for q in checklist.questions:
        console.print(f"[cyan]{q.dimension:>14}[/] {q.text}")
    console.print(f"wrote {len(checklist.questions)} questions to {args.output}")


def cmd_judge(args: argparse.Namespace) -> None:
    """Judge every row of a JSONL file against a checklist; resumable (finished rows are skipped)."""
    checklist = load_model(Path(args.checklist), Checklist)
    rows = list(read_jsonl(Path(args.data), required=("input", "output")))
    for number, row in rows:
        for field in ("input", "output"):
            if not isinstance(row[field], str):
                raise InputError(f"{args.data}:{number}: field '{field}' must be a string")
    out = Path(args.output)
    done = {r["line"] for _, r in read_jsonl(out)} if out.exists() else set()
    todo = [(n, r) for n, r in rows if n not in done]
    if done:
        console.print(f"resuming: {len(done)} row(s) already in {out}, {len(todo)} to go")
    lm = runtime.configure(args.lm, args.cache_dir)
    judge = BinaryJudge(chain_of_thought=args.cot, samples=args.samples, probability=args.probability)

    def judge_row(item: tuple[int, dict]) -> tuple[int, dict, Scorecard]:
        number, row = item
        return number, row, judge(input=row["input"], output=row["output"], checklist=checklist)

    for number, row, card in progress_map(judge_row, todo, "judging", effective_threads(lm, args.threads)):
        append_jsonl(out, {**row, "line": number, "scorecard": card.model_dump(mode="json")})
    _print_means(checklist, [r["scorecard"] for _, r in read_jsonl(out)])
    console.print(f"wrote {out}")


def _print_means(checklist: Checklist, cards: list[dict]) -> None:
    table = Table(title=f"mean scores over {len(cards)} row(s)")
    dims = [*checklist.by_dimension(), "overall"]
    for d in dims:
        table.add_column(d, justify="right")
    means = []
    for d in dims:
        values = [c["overall"] if d == "overall" else c["dimension_scores"].get(d) for c in cards]
        values = [v for v in values if v is not None]
        means.append(_fmt(sum(values) / len(values)) if values else "n/a")
    table.add_row(*means)
    console.print(table)
