"""``bineval checklist``: write a checklist for a task with any writer (built-in or template), screened."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bineval_dspy.cli.defaults import CHECKLIST_METHODS
from bineval_dspy.cli.options import (
    add_overwrite_option,
    add_verifiers_option,
    count,
    lm_options,
    refuse_replacing,
)
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode, InputError, RunError
from bineval_dspy.core.jsonio import (
    check_output_path,
    read_json,
    read_jsonl,
    read_text,
    write_text_atomic,
)
from bineval_dspy.core.terminal import styled

if TYPE_CHECKING:
    pass


def read_task(value: str) -> str:
    return read_text(Path(value[1:])) if value.startswith("@") else value


QWORLD_FLAGS = ("w1", "w2", "w3")


def _writer_params(args: argparse.Namespace) -> dict[str, Any]:
    """The writer params the flags set; ``--max-questions`` caps each method's questions (qworld: its criteria)."""
    given = [name for name in QWORLD_FLAGS if getattr(args, name) is not None]
    if given and args.method != "qworld":
        raise InputError(f"--{given[0]}: only with --method qworld")
    params: dict[str, Any] = {name: getattr(args, name) for name in given}
    if args.max_questions is not None:
        params["max_criteria" if args.method == "qworld" else "max_questions"] = args.max_questions
    return params | _template_inputs(args)


TEMPLATE_FLAGS = ("reference", "candidates", "observations", "definitions")


def _template_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """A template writer's inputs from their flags: a reference (text or @FILE), candidates (JSONL, field 'output'),
    observations (JSONL, field 'text'), definitions (a JSON object: dimension -> definition)."""
    from bineval_dspy.checklists.templates import TEMPLATES

    given = [name for name in TEMPLATE_FLAGS if getattr(args, name) is not None]
    if given and args.method not in TEMPLATES:
        raise InputError(f"--{given[0]}: only with a template writer ({', '.join(TEMPLATES)})")
    params: dict[str, Any] = {}
    if args.reference is not None:
        params["reference"] = read_task(args.reference)
    for name, field in (("candidates", "output"), ("observations", "text")):
        if getattr(args, name) is not None:
            rows = read_jsonl(Path(getattr(args, name)), required=(field,), standard=True)
            params[name] = [str(row[field]) for _, row in rows]
    if args.definitions is not None:
        definitions = read_json(Path(args.definitions))
        if not isinstance(definitions, dict) or not all(isinstance(v, str) for v in definitions.values()):
            raise InputError(f"{args.definitions}: must be one JSON object of dimension -> definition text")
        params["definitions"] = definitions
    return params


def cmd_checklist(args: argparse.Namespace) -> int:
    """Generate a checklist for a task with the chosen method, save it as JSON, and say what it cost."""
    from bineval_dspy.checklists.first import first_checklist
    from bineval_dspy.checklists.qworld import QworldWriter
    from bineval_dspy.checklists.writers import make_writer, save_checklist_usage
    from bineval_dspy.lm import runtime

    task = read_task(args.task)
    if not task.strip():
        raise InputError("--task: the task description is empty")
    dims = [d for d in (args.dimensions or "").split(",") if d.strip()]
    out = Path(args.output)
    check_output_path(out, *([Path(args.task[1:])] if args.task.startswith("@") else []))
    refuse_replacing(out, args.overwrite)
    if args.writer_file:
        from bineval_dspy.checklists.writers import load_templates

        load_templates(Path(args.writer_file))
    writer = make_writer(args.method, **_writer_params(args))  # bad params fail before the LM loads
    lm = runtime.configure(lm_options(args), args.cache_dir)
    with console.status(f"writing the checklist ({args.method})"):
        written = first_checklist(writer, task, dims, lm)
    screened, cost, failures = written.screened, written.cost, written.failures
    for line in screened.dropped:
        console.print(f"left out: {line}", style="yellow")
    for number, failure in failures if screened.checklist is not None and len(failures) < screened.attempts else []:
        console.print(f"attempt {number + 1} gave no usable checklist: {failure}", style="yellow")
    checklist = screened.checklist
    if len(failures) == screened.attempts:  # no attempt gave a checklist: the task's own constraints alone are not one
        console.print(f"cost: {cost.summary()} ({screened.attempts} attempt(s))")
        raise failures[0][1]  # the first one's reason
    if checklist is None:
        for problem in screened.problems:
            console.print(f"problem: {problem}", style="yellow")
        console.print(f"cost: {cost.summary()} ({screened.attempts} attempt(s))")
        raise RunError(f"checklist: no question the LM wrote passed the screen in {screened.attempts} attempt(s); nothing written")
    write_text_atomic(out, checklist.model_dump_json(indent=2))
    sidecar = save_checklist_usage(out, args.method, lm.model, cost, attempts=screened.attempts)
    for q in checklist.questions:
        weight = (f" (weight {q.weight:+g})", "magenta") if q.weight != 1 else ""
        where = (f" ({q.lineage['perspective_text']})", "dim") if "perspective_text" in q.lineage else ""
        by = (f" (code: {q.verifier})", "dim") if q.verifier else ""
        shown.print(styled((f"{q.dimension:>14}", "cyan"), f" {q.text}", weight, where, by))
    if isinstance(writer, QworldWriter) and writer.tree is not None:
        tree = writer.tree
        stats = tree.stats
        console.print(
            f"qworld tree: {len(tree.scenarios)} scenarios, {len(tree.perspectives)} perspectives, {len(tree.criteria)} criteria; "
            f"merged duplicates {stats.merged}; unparseable answers {stats.unparseable}"
        )
    count = len(checklist.questions)
    shown.print(f"wrote {count} question{'' if count == 1 else 's'} to {out} (its cost to {sidecar.name})")
    retried = f" ({screened.attempts} attempts: the screen asked again)" if screened.attempts > 1 else ""
    console.print(f"cost: {cost.summary()}{retried}")
    for problem in screened.problems:
        console.print(f"problem: {problem}", style="yellow")
    if screened.problems:
        console.print(f"{len(screened.problems)} problem(s) left after {screened.attempts} attempt(s): the checklist holds what passed; rerun or edit it", style="yellow")
    if all(q.verifier for q in checklist.questions):  # last: what a newcomer reads, and what to do next
        console.print(
            f"only code-checked questions passed the screen ({count}): no LM question judges the task's content; "
            "add some by hand (bineval checklist --example prints a checklist to start from) or use a stronger --lm",
            style="yellow", soft_wrap=True,
        )
    return ExitCode.INCOMPLETE if screened.problems else ExitCode.OK


class _PrintExampleChecklist(argparse.Action):
    """``--example``: print a small hand-written checklist (``data/example_checklist.json``) to edit, and exit 0."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object, option_string: str | None = None) -> None:
        from importlib.resources import files

        print(files("bineval_dspy.data").joinpath("example_checklist.json").read_text(encoding="utf-8"), end="")
        parser.exit(0)


def add_checklist_command(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``bineval checklist``."""
    checklist = sub.add_parser("checklist", parents=[common], help="generate a checklist for a task")
    checklist.add_argument(
        "--example", action=_PrintExampleChecklist,
        help="print a small checklist to edit by hand (two code-verified questions, three for the LM) and exit; judge it with bineval judge --checklist",
    )  # fmt: skip
    checklist.add_argument("--task", required=True, help="the task text, or @FILE")
    checklist.add_argument(
        "--method", "--writer", dest="method", default="bineval", metavar="NAME",
        help=f"bineval (two steps), tick (2-8 questions), qworld (expansion tree), a published template ({', '.join(CHECKLIST_METHODS[3:])}; docs/checklist_methods.md) or one from --writer-file",
    )
    checklist.add_argument("--writer-file", metavar="FILE", help="TOML or JSON of template writers ([[templates]]: name, steps with prompt and schema) to choose from")
    checklist.add_argument("--reference", help="template writers: a reference answer, or @FILE (rocketeval)")
    checklist.add_argument("--candidates", metavar="FILE", help="template writers: JSONL of sampled responses, field 'output' (rlcf-contrastive)")
    checklist.add_argument("--observations", metavar="FILE", help="template writers: JSONL of feedback notes, field 'text' (feedback)")
    checklist.add_argument("--definitions", metavar="FILE", help="template writers: a JSON object of dimension -> definition (checkeval)")
    checklist.add_argument("--dimensions", help="comma-separated dimensions (default: bineval chooses them; tick and qworld use one)")
    checklist.add_argument("--max-questions", type=count(1), default=None, help="most questions (bineval 24, tick 8, qworld 60 criteria)")
    for name, rounds in zip(QWORLD_FLAGS, ("scenarios (default 3)", "perspectives (default 4)", "criteria (default 0)")):
        checklist.add_argument(f"--{name}", type=count(0), default=None, metavar="N", help=f"qworld: horizontal expansion rounds for {rounds}")
    checklist.add_argument("-o", "--output", default="checklist.json", help="the checklist JSON to write (its cost beside it, in OUTPUT.usage.json)")
    add_overwrite_option(checklist, "the checklist")
    add_verifiers_option(checklist)
    checklist.set_defaults(func=cmd_checklist)
