"""The ``bineval`` command line: one module per command group, one console (``bineval_dspy.core.console``)."""

from bineval_dspy.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
