"""The ``bineval`` command line: the parser and the entry point; each command lives in its own module.

Building the parser imports no DSPy, LiteLLM or llama.cpp: each command imports what it needs when it runs, so
``bineval --version`` and ``--help`` answer at once (``tests/cli/test_startup.py``)."""

from __future__ import annotations

import argparse
import atexit
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bineval_dspy.cli.analyze import add_analyze_commands
from bineval_dspy.cli.calibrate import add_calibrate_command
from bineval_dspy.cli.checklist import add_checklist_command
from bineval_dspy.cli.compare import add_compare_command
from bineval_dspy.cli.data import add_data_command
from bineval_dspy.cli.defaults import DEFAULT_LM, DEFAULT_THREADS, DEFAULT_TIMEOUT
from bineval_dspy.cli.demo import add_demo_command
from bineval_dspy.cli.experiment import add_experiment_command
from bineval_dspy.cli.finetune import add_finetune_command
from bineval_dspy.cli.generate import add_generate_command
from bineval_dspy.cli.judge import add_judge_command
from bineval_dspy.cli.meta import add_meta_command
from bineval_dspy.cli.optimize import add_optimize_command
from bineval_dspy.cli.options import count, judge_flag, load_verifiers_option
from bineval_dspy.cli.report import add_report_command
from bineval_dspy.cli.show import add_show_command
from bineval_dspy.cli.suite import add_suite_command
from bineval_dspy.cli.tune import add_tune_command
from bineval_dspy.cli.verifiers import add_verifiers_command
from bineval_dspy.cli.verify import add_verify_command
from bineval_dspy.cli.view import add_view_command
from bineval_dspy.core import outputs
from bineval_dspy.core.console import console, show_logs, shown, truncated_replies
from bineval_dspy.core.errors import BudgetExhausted, ExitCode, InputError, RunError, redacted, spoken
from bineval_dspy.core.version import __version__

# -- parser --------------------------------------------------------------------------------
MAX_TIMEOUT_S = 86400.0


def _number(unit: str, inside: Callable[[float], bool], bounds: str) -> Callable[[str], float]:
    """An argparse type: a number (of ``unit``) for which ``inside`` holds, else one line saying ``bounds``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number{unit}, got {text!r}") from None
        if not inside(value):  # nan fails every comparison, so it is refused too
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {text}")
        return value

    return parse


# seconds at most a day: a larger one overflows the clocks it is added to and waits forever in all but name;
# temperatures from 0 to 2, what OpenAI-style APIs accept
_seconds = _number(" of seconds", lambda v: 0 < v <= MAX_TIMEOUT_S, f"a positive number of seconds up to {MAX_TIMEOUT_S:g} (a day)")
_temperature = _number("", lambda v: 0 <= v <= 2, "from 0 to 2")
_per_minute = _number(" per minute", lambda v: 0 < v < float("inf"), "a positive number per minute")


class _Servers(argparse.Action):
    """``--api-base``: the first server is ``api_base``; each one more is a replica (``replicas``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        if namespace.api_base is None:
            namespace.api_base = values
        else:
            namespace.replicas = [*(getattr(namespace, "replicas", None) or []), values]


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--lm", default=None, help=f"{DEFAULT_LM} (embedded default), gemma3-270m, a .gguf path, or a LiteLLM model string")
    common.add_argument("--threads", type=count(1), default=None, help=f"parallel LM calls for remote LMs (default {DEFAULT_THREADS})")
    common.add_argument("--cache-dir", type=Path, default=None, help="on-disk LM call cache (default $BINEVAL_CACHE_DIR, else ~/.cache/bineval_dspy; eval, experiment and tune: else the run's own folder)")
    common.add_argument(
        "--api-base", metavar="URL", action=_Servers,
        help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1; again for replicas of the same model (calls go to the least busy, a failed one is left out)",
    )
    common.add_argument("--api-key-env", metavar="NAME", help="the environment variable holding the server's API key")
    common.add_argument("--temperature", type=_temperature, metavar="T", help="sampling temperature (default 0: greedy)")
    common.add_argument(
        "--timeout", type=_seconds, metavar="SECONDS", help=f"per LM call, remote LMs only (default {DEFAULT_TIMEOUT:g})"
    )
    common.add_argument("--rpm", type=_per_minute, metavar="N", help="at most N requests a minute to the --api-base server (client-side)")
    common.add_argument("--tpm", type=_per_minute, metavar="N", help="at most N tokens a minute to the --api-base server (estimated before each request)")
    parser = argparse.ArgumentParser(prog="bineval", description="Evaluate LLM outputs with independent binary questions.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    add_demo_command(sub, common)
    add_checklist_command(sub, common)
    add_judge_command(sub, common)
    add_verify_command(sub, common)
    add_verifiers_command(sub)
    add_data_command(sub)
    add_suite_command(sub)
    add_optimize_command(sub, common)
    add_experiment_command(sub, common)
    add_finetune_command(sub, common)
    add_show_command(sub)
    add_report_command(sub)
    add_view_command(sub)
    add_compare_command(sub)
    add_generate_command(sub, common)
    add_meta_command(sub, common)
    add_calibrate_command(sub, common)
    add_analyze_commands(sub, common)
    add_tune_command(sub, common)
    for command in sub.choices.values():
        show_defaults(command)
    return parser


def show_defaults(parser: argparse.ArgumentParser) -> None:
    """Append "(default: X)" to each option's help whose default is a value the help does not already name, so
    ``--help`` never hides what a run does without the option."""
    for action in parser._actions:
        if action.help in (None, argparse.SUPPRESS) or action.default in (None, False, argparse.SUPPRESS):
            continue
        if "default" not in action.help:
            action.help += " (default: %(default)s)"


def _plots_cache(cache_dir: str | None) -> bool:
    """With ``--cache-dir``, matplotlib keeps its font cache there too, not under ``$HOME`` (an explicit
    ``$MPLCONFIGDIR`` wins); True when set here, to be unset when the command ends."""
    if not cache_dir or "MPLCONFIGDIR" in os.environ:
        return False
    os.environ["MPLCONFIGDIR"] = str(Path(cache_dir).resolve() / "matplotlib")
    return True


LIBRARY_NAMES = {"api_key": "--api-key-env", "spec": "--lm", "max_tokens": "--max-tokens", "replicas": "a second --api-base"}  # where no flag's dest is the name


def flags_of(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Every command's flags by the parameter they set (their dest), for saying a library message in flags."""
    names: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                names = {**flags_of(sub), **names}
        elif action.option_strings:
            names.setdefault(action.dest, max(action.option_strings, key=len))
    return names


def in_flags(names: dict[str, str]) -> Callable[[str], str]:
    """A library message as the CLI says it: each parameter named in backticks (``core.errors``) as its flag
    (`judge.chain_of_thought`: --cot), the others as they are."""

    def flag(name: str) -> str | None:
        if name.startswith("judge."):
            return judge_flag(name.removeprefix("judge."))
        return LIBRARY_NAMES.get(name) or names.get(name)

    return lambda text: spoken(text, flag)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit code is an ``ExitCode`` (0 ok, 1 incomplete, 2 bad input, 3 LM failure, 4 budget, 5 regression, 6 under a gate, 130)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    say = in_flags(flags_of(parser))
    console.speak = shown.speak = say
    show_logs()  # the library's notes and warnings, logged, on the console as the command's own lines
    _said.clear()
    if "bineval_dspy.lm.stopping" in sys.modules:  # an earlier command in this process was stopped by a Ctrl-C
        sys.modules["bineval_dspy.lm.stopping"].reset()
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _first_interrupt) if in_main_thread else None
    plots_cache = _plots_cache(getattr(args, "cache_dir", None))
    truncated = truncated_replies()
    try:
        load_verifiers_option(args)
        return int(args.func(args) or ExitCode.OK)
    except OSError as exc:  # a write the command did not foresee (a full disk, a read-only file): one located line
        where = f"{exc.filename}: " if exc.filename else ""
        print(redacted(f"error: {where}{exc.strerror or exc}"), file=sys.stderr)
        return ExitCode.INPUT
    except InputError as exc:
        print(f"error: {say(redacted(str(exc)))}", file=sys.stderr)  # plain print: one line, never wrapped
        return ExitCode.INPUT
    except RunError as exc:
        print(f"error: {say(redacted(str(exc)))}", file=sys.stderr)
        return ExitCode.LM_FAILURE
    except BudgetExhausted as exc:
        print(f"stopped: {say(redacted(str(exc)))}", file=sys.stderr)
        return ExitCode.BUDGET
    except KeyboardInterrupt:
        _say_interrupted()
        return ExitCode.INTERRUPTED
    finally:
        if cut := truncated_replies() - truncated:
            console.print(say(f"{cut} LM repl(ies) stopped at their token limit, cut short: raise `max_tokens` if the answers need more"), style="yellow")
        console.speak = shown.speak = None
        outputs.release_all()
        if signal.getsignal(signal.SIGINT) is _quit_now:
            # After a first Ctrl-C the process is on its way out: a second one quits at once while it joins worker
            # threads still in their LM calls, and is ignored once Python has begun to finalize (which would put
            # back the default handler, and the process would end by the signal, not with its exit code).
            atexit.register(signal.signal, signal.SIGINT, signal.SIG_IGN)
        elif previous is not None:
            signal.signal(signal.SIGINT, previous)
        if plots_cache:
            os.environ.pop("MPLCONFIGDIR", None)


_INTERRUPTED_LINE = "interrupted: finished rows are saved; rerun the same command to resume"
_said = threading.Event()  # the interrupted line is printed once, by whichever handler ends the run


def _say_interrupted() -> None:
    if not _said.is_set():
        _said.set()
        console.print(_INTERRUPTED_LINE, style="yellow")


def _first_interrupt(signum: int, frame: object) -> None:
    """The first Ctrl-C: the running loop of rows (``lm.stopping``) finishes the calls in flight and saves their
    rows, then stops; with none running, the command stops here. From now on a second one quits at once, wherever
    the first is still unwinding (a thread pool joining its workers, a generator closed by the garbage collector),
    so no traceback is ever printed."""
    signal.signal(signal.SIGINT, _quit_now)
    stopping = sys.modules.get("bineval_dspy.lm.stopping")  # not loaded yet: no loop of rows can be running
    finishing = stopping.request_stop() if stopping is not None else None
    if finishing is None:
        raise KeyboardInterrupt
    calls = "1 call" if finishing == 1 else f"{finishing} calls"
    console.print(f"finishing {calls} in flight; Ctrl-C again to stop now", style="yellow")


def _quit_now(signum: int, frame: object) -> None:
    """SIGINT after the first: leave at once with the interrupted code (finished rows are already on disk)."""
    _say_interrupted()
    sys.stderr.flush()
    os._exit(ExitCode.INTERRUPTED)


if __name__ == "__main__":
    sys.exit(main())
