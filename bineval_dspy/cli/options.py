"""Options shared by the commands: range-checked counts, so a bad value is one line before any work; budgets."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from bineval_dspy.core.console import console
from bineval_dspy.core.errors import InputError

if TYPE_CHECKING:
    from bineval_dspy.core.schema import JudgeOptions
    from bineval_dspy.lm.budget import Budget, BudgetMeter
    from bineval_dspy.lm.runtime import LMOptions
    from bineval_dspy.runs.spec import RunSpec


def count(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


JUDGE_FLAGS = {"chain_of_thought": "--cot", "verifier_mode": "--mode"}  # the others are their field's name


def share(text: str) -> float:
    """An argparse type: a number from 0 to 1 (a score or a pass rate a gate holds a run to)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0 <= value <= 1:  # nan fails both comparisons, so it is refused too
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


def judge_flag(name: str) -> str:
    """The command-line spelling of a judge option (a ``JudgeFields`` field)."""
    return JUDGE_FLAGS.get(name) or "--" + name.replace("_", "-")


def add_judge_options(parser: argparse.ArgumentParser, names: Iterable[str] | None = None) -> None:
    """The judge options as flags, generated from ``JudgeFields`` (its types, defaults and help): the options of
    ``names``, else all of them. Each flag's dest is the field's name, so ``judge_options`` reads them back."""
    from typing import get_args

    from bineval_dspy.core.schema import JudgeFields

    for name in names or JudgeFields.model_fields:
        field = JudgeFields.model_fields[name]
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        help, flag = str(extra["help"]), judge_flag(name)
        if field.annotation is bool:
            parser.add_argument(flag, dest=name, action="store_true", help=help)
        elif field.annotation is int:
            least = next((m.ge for m in field.metadata if hasattr(m, "ge")), 0)
            parser.add_argument(flag, dest=name, type=count(least), default=field.default, metavar="N", help=help)
        else:  # a Literal
            parser.add_argument(flag, dest=name, choices=get_args(field.annotation), default=field.default, help=help)


def judge_options(args: argparse.Namespace) -> JudgeOptions:
    """The judge options the command's flags give (the others at their defaults), checked together."""
    from bineval_dspy.core.schema import JudgeFields, checked_options

    return checked_options(**{name: getattr(args, name) for name in JudgeFields.model_fields if hasattr(args, name)})


def add_verifiers_option(parser: argparse.ArgumentParser) -> None:
    """``--verifiers FILE.py``: verifiers of the user's own (``@bineval_dspy.verifier``), loaded before the command
    runs (``cli.main``), so its checklists and suite rows may name them; again for more files."""
    parser.add_argument(
        "--verifiers", dest="verifier_files", metavar="FILE.py", action="append", type=Path,
        help="a Python file of your own verifiers (@bineval_dspy.verifier); again for more files",
    )


def load_verifiers_option(args: argparse.Namespace) -> None:
    """Load the files ``--verifiers`` names (a bad one: one located line, exit 2)."""
    if getattr(args, "verifier_files", None):
        from bineval_dspy.verifiers.user import load_verifier_files

        load_verifier_files(args.verifier_files)


def add_dry_run_option(parser: argparse.ArgumentParser) -> None:
    """``--dry-run``: print the planned LM calls, prompt tokens and dollars, then exit 0 without calling the LM."""
    parser.add_argument(
        "--dry-run", action="store_true",
        help="print the planned LM calls, prompt tokens (the model's tokenizer where known, else estimated) and dollars, then exit 0 with no LM call",
    )


def add_overwrite_option(parser: argparse.ArgumentParser, what: str = "the output file") -> None:
    """``--overwrite`` on a command that writes one file: without it an existing file is never replaced."""
    parser.add_argument("--overwrite", action="store_true", help=f"replace {what} when it exists (default: refuse, exit 2)")


def refuse_replacing(out: Path, overwrite: bool) -> None:
    """Stop before any work when ``out`` exists and ``--overwrite`` was not given: a hand-written file is never
    lost to a command that was pointed at the wrong path."""
    if out.exists() and not overwrite:
        raise InputError(f"{out}: exists; use --overwrite to replace it, or a new output path")


class _PrintExample(argparse.Action):
    """``--example``: print the commented config of the command's model (imported only now) and exit 0."""

    def __init__(self, option_strings: list[str], dest: str, model: str = "", title: str = "", **kwargs: object) -> None:
        self.model, self.title = model, title
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object, option_string: str | None = None) -> None:
        import importlib

        from bineval_dspy.core.config_doc import commented_toml

        module, name = self.model.rsplit(".", 1)
        print(commented_toml(getattr(importlib.import_module(module), name), self.title), end="")
        parser.exit(0)


def add_example_option(parser: argparse.ArgumentParser, model: str, title: str) -> None:
    """``--example`` on a command whose config is the pydantic model at dotted path ``model``: every key of the
    config with its default, written from the model itself (so it never drifts from what the loader accepts)."""
    parser.add_argument(
        "--example", action=_PrintExample, model=model, title=title,
        help="print a commented config (every key with its default, required keys marked) and exit",
    )


def _usd(text: str) -> float:
    """An argparse type: a positive amount of US dollars."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an amount of US dollars, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive amount of US dollars, got {text}")
    return value


def add_budget_options(parser: argparse.ArgumentParser, unit: str) -> None:
    """``--max-cost`` and ``--max-calls`` on a long-running command whose units of work are ``unit``."""
    parser.add_argument(
        "--max-cost", type=_usd, metavar="USD", help=f"stop before the next {unit} would pass this many US dollars (LMs with a known price only); exit 4"
    )
    parser.add_argument("--max-calls", type=count(1), metavar="N", help=f"stop before the next {unit} would pass N LM calls; exit 4")


def budget_of(args: argparse.Namespace) -> Budget:
    from bineval_dspy.lm.budget import Budget  # here, not at import: the parser loads no DSPy

    return Budget(max_cost=args.max_cost, max_calls=args.max_calls)


def budget_meter(args: argparse.Namespace, models: Iterable[str]) -> BudgetMeter:
    """The meter of the command line's budget for a run on ``models`` (``BudgetMeter.for_models``)."""
    from bineval_dspy.lm.budget import BudgetMeter

    return BudgetMeter.for_models(budget_of(args), models)


Config = TypeVar("Config", bound="RunSpec")


def command_line_lm(args: argparse.Namespace, config: Config) -> tuple[Config, LMOptions]:
    """A run config with ``--lm`` (when given) in place of its ``lm``, and the LM options the run is called with:
    the command line's, its ``--api-base`` in place of the config's ``[lm]`` servers; each replacement is said."""
    source = config.source
    current: str = getattr(config, "lm")  # noqa: B009  (a run config of any kind: each has an lm field)
    servers: tuple[str, ...] = getattr(config, "servers", ())
    if servers and args.api_base is not None:
        console.print(f"--api-base {args.api_base} replaces the servers of [lm] in {source}")
        servers = ()
    if args.lm is None or args.lm == current:
        return config, lm_options(args, spec=current, source=f"{source}: field 'lm' =", servers=servers)
    console.print(f"--lm {args.lm} replaces lm = {current!r} of {source}")
    return config.model_copy(update={"lm": args.lm}), lm_options(args, spec=args.lm, servers=servers)


def lm_options(args: argparse.Namespace, spec: str | None = None, source: str = "--lm", servers: Sequence[str] = ()) -> LMOptions:
    """The LM options of a parsed command line; ``spec`` (a config's LM, from ``source``) stands in for ``--lm``, and
    ``servers`` (the config's ``api_base`` and ``replicas`` for that LM) for ``--api-base``."""
    from bineval_dspy.lm.runtime import LMOptions, env_key
    from bineval_dspy.lm.specs import DEFAULT_LM

    api_key = env_key(args.api_key_env, "--api-key-env") if args.api_key_env else None
    if args.lm is not None and not args.lm.strip():
        raise InputError("--lm: empty; name a model (smollm2, gemma3-270m, a .gguf path or a LiteLLM string) or leave it out")
    api_base, replicas = args.api_base, tuple(getattr(args, "replicas", None) or ())
    if servers:
        api_base, replicas = servers[0], tuple(servers[1:])
    return LMOptions(
        spec=spec or args.lm or DEFAULT_LM,
        api_base=api_base,
        replicas=replicas,
        api_key=api_key,
        temperature=args.temperature,
        timeout=args.timeout,
        max_tokens=getattr(args, "lm_max_tokens", None),  # only ``judge`` has it; ``generate`` limits per response
        rpm=getattr(args, "rpm", None),
        tpm=getattr(args, "tpm", None),
        source=source,
    )


def add_ray_options(parser: argparse.ArgumentParser, doing: str, each: str) -> None:
    """``--ray ADDRESS`` and ``--ray-workers N``: the command's rows (or arms) ``doing`` on a Ray cluster."""
    parser.add_argument("--ray", metavar="ADDRESS", help=f"{doing} on a Ray cluster: 'local' starts one here, else its address (auto, ray://HOST:10001); needs the ray extra")
    parser.add_argument("--ray-workers", type=count(1), default=2, metavar="N", help=f"with --ray: workers at once, {each} (default 2)")
