"""``bineval verifiers [TEXT]``: the code verifiers a checklist question or a suite row may name, with their rules."""

from __future__ import annotations

import argparse

from bineval_dspy.cli.options import add_verifiers_option
from bineval_dspy.core.console import console, shown
from bineval_dspy.core.errors import ExitCode, InputError
from bineval_dspy.core.terminal import styled


def cmd_verifiers(args: argparse.Namespace) -> int:
    """List every verifier id whose id or rule holds TEXT, each with its rule sentence and kwargs (default or
    required); no match is bad input, so a typo never looks like an empty catalogue."""
    from bineval_dspy.verifiers.registry import catalog  # here: the parser loads no verifier (nltk) code

    found = catalog(args.text or "")
    if not found:
        raise InputError(f"no verifier id or rule holds {args.text!r}; run `bineval verifiers` for all of them")
    for info in found:
        kwargs = ", ".join(f"{name}={default}" for name, default in info.kwargs.items()) or "no kwargs"
        enforce = f"  enforced by {info.enforce}" if info.enforce else ""
        unenforced = f"  not enforceable: {info.unenforceable}" if info.unenforceable else ""
        shown.print(
            styled((info.instruction_id, "cyan"), f"  {info.rule}", (f"  [{kwargs}]", "dim"), (enforce, "green"), (unenforced, "yellow"))
        )
    enforced = sum(info.enforce is not None for info in found)
    console.print(
        f"{len(found)} verifier(s), {enforced} of them enforceable while decoding (generate --enforce: by a token mask, forced text "
        "or a counting automaton); a checklist question names one as \"verifier\": \"<id>\", a suite row in instruction_id_list"
    )
    return ExitCode.OK


def add_verifiers_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``bineval verifiers``; it takes no LM options (it calls no LM)."""
    parser = sub.add_parser("verifiers", help="list the code verifier ids with their rule and kwargs (no LM)")
    parser.add_argument("text", nargs="?", help="only ids or rules holding this text, any case (default: all)")
    add_verifiers_option(parser)
    parser.set_defaults(func=cmd_verifiers)
