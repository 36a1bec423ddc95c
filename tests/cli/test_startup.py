"""``bineval --version`` and ``--help`` load no DSPy, LiteLLM or llama.cpp (they answered in 2.6-3.6 s when the
parser imported every command's modules), and the defaults the parser shows are the library's own."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from bineval_dspy.cli import defaults

HEAVY = ("dspy", "litellm", "llama_cpp", "numpy", "scipy", "plotly", "optuna")
PROBE = """
import json, sys
from bineval_dspy.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(name for name in {heavy} if name in sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["judge", "--help"], ["show", "--help"]])
def test_the_parser_loads_no_lm_library(argv):
    probe = PROBE.format(heavy=HEAVY)
    run = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(run.stderr.strip().splitlines()[-1]) == []
    assert run.stdout  # the version or the help text


@pytest.mark.parametrize("name", sorted(defaults.SOURCES))
def test_each_default_the_parser_shows_is_the_library_constant(name):
    module, attribute = defaults.SOURCES[name]
    assert getattr(defaults, name) == getattr(importlib.import_module(module), attribute)


# What the commands import when they run, each first in a fresh process: an import cycle that an import order used
# to hide (programs.state -> generator -> checklists -> optimize -> programs.state) fails here, not in a user's run.
FIRST_IMPORTS = [
    "bineval_dspy.programs.state",
    "bineval_dspy.programs.generator",
    "bineval_dspy.checklists.writers",
    "bineval_dspy.judges.binary",
    "bineval_dspy.lm.runtime",
    "bineval_dspy.optimize.config",
    "bineval_dspy.experiment.runner",
    "bineval_dspy.meta.runner",
    "bineval_dspy.tune.study",
    "bineval_dspy.report.runs",
    "bineval_dspy.analysis.judged",
    "bineval_dspy.suites.grading",
]


@pytest.mark.parametrize("module", FIRST_IMPORTS)
def test_each_module_a_command_imports_loads_first_in_a_fresh_process(module):
    run = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
