"""The ``bineval`` command line: the parser and the entry point; each command lives in its own module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bineval_dspy.cli.generate import add_generate_command
from bineval_dspy.cli.judge import cmd_checklist, cmd_demo, cmd_judge
from bineval_dspy.cli.optimize import add_optimize_command
from bineval_dspy.cli.show import add_show_command
from bineval_dspy.cli.verify import add_verify_command
from bineval_dspy.core.console import console
from bineval_dspy.core.errors import InputError
from bineval_dspy.lm.runtime import DEFAULT_CACHE_DIR
from bineval_dspy.lm.specs import DEFAULT_LM


# -- parser --------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--lm", default=DEFAULT_LM, help="smollm2 (embedded default), gemma3-270m, a .gguf path, or a LiteLLM model string")
    common.add_argument("--threads", type=int, default=4, help="parallel LM calls for remote LMs")
    common.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help="on-disk LM call cache")
    parser = argparse.ArgumentParser(prog="bineval", description="Evaluate LLM outputs with independent binary questions.")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", parents=[common], help="judge three bundled summaries with the embedded LM")
    demo.add_argument("-o", "--output", default="demo-results.json")
    demo.add_argument("--max-questions", type=int, default=12)
    demo.add_argument("--probability", action="store_true", help="score with P(yes) from logprobs")
    demo.set_defaults(func=cmd_demo)

    checklist = sub.add_parser("checklist", parents=[common], help="generate a checklist for a task")
    checklist.add_argument("--task", required=True, help="the task text, or @FILE")
    checklist.add_argument("--dimensions", help="comma-separated dimensions (default: chosen from the task)")
    checklist.add_argument("--max-questions", type=int, default=24)
    checklist.add_argument("-o", "--output", default="checklist.json")
    checklist.set_defaults(func=cmd_checklist)

    judge = sub.add_parser("judge", parents=[common], help="judge rows of (input, output) against a checklist")
    judge.add_argument("--checklist", required=True)
    judge.add_argument("--data", required=True, help="JSONL rows with 'input' and 'output'; other fields pass through")
    judge.add_argument("-o", "--output", default="scorecards.jsonl")
    judge.add_argument("--cot", action="store_true", help="reason before answering")
    judge.add_argument("--samples", type=int, default=1, help="k-sample majority vote")
    judge.add_argument("--probability", action="store_true", help="score with P(yes) from logprobs")
    judge.set_defaults(func=cmd_judge)
    add_verify_command(sub, common)
    add_optimize_command(sub, common)
    add_show_command(sub)
    add_generate_command(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)  # plain print: one line, never wrapped
        return 2
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: finished rows are saved; rerun the same command to resume[/]")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
