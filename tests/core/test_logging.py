"""Library modules log through ``logging`` (an application routes or silences them); a command shows the records on
its console as the lines the library used to print (issue 58, item 5)."""

from __future__ import annotations

import logging
import subprocess
import sys

from bineval_dspy import cli
from bineval_dspy.core.console import LIBRARY, ConsoleHandler, logs_shown


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)


NOTE = "import logging; logging.getLogger('bineval_dspy.runs.execute').info('resuming: 2 kept'); logging.getLogger('bineval_dspy.lm.runtime').warning('note: `threads` ignored')"


def test_an_application_routes_the_library_log():
    """No handler of ours without the CLI: an INFO note is not printed, a warning reaches Python's last resort, and
    an application's own handler gets both."""
    alone = run(f"import bineval_dspy; {NOTE}")
    assert alone.stdout == "" and alone.stderr == "note: `threads` ignored\n"
    routed = run(f"import logging, sys; logging.basicConfig(stream=sys.stdout, level=logging.INFO, format='%(name)s %(message)s'); {NOTE}")
    assert routed.stdout.splitlines() == ["bineval_dspy.runs.execute resuming: 2 kept", "bineval_dspy.lm.runtime note: `threads` ignored"]
    silenced = run(f"import logging; logging.getLogger('bineval_dspy').addHandler(logging.NullHandler()); {NOTE}")
    assert silenced.stderr == ""


def test_the_cli_shows_the_log_as_its_own_lines(capsys):
    logger = logging.getLogger(LIBRARY)
    kept = logger.handlers[:]
    logger.handlers = [h for h in kept if not isinstance(h, ConsoleHandler)]  # as in a fresh process
    try:
        assert not logs_shown()
        cli.main(["verifiers"])
        assert logs_shown()
        cli.main(["verifiers"])  # a second command in the process: still one handler
        assert sum(isinstance(h, ConsoleHandler) for h in logger.handlers) == 1
        capsys.readouterr()
        logging.getLogger("bineval_dspy.lm.batches.state").warning("`overwrite`: batch b1 is left at the provider")
        assert capsys.readouterr().err == "`overwrite`: batch b1 is left at the provider\n"  # the message alone, nothing added
    finally:
        logger.handlers = kept


def test_the_optimizer_iterations_stay_off_the_command_line(capsys):
    """Its per-iteration INFO lines were never on a command's terminal (the command prints its own summary); its
    warnings are."""
    cli.main(["verifiers"])
    capsys.readouterr()
    logging.getLogger("bineval_dspy.optimize").info("iteration 1: held-out 0.5")
    logging.getLogger("bineval_dspy.optimize").warning("note-taker failed on r1")
    assert capsys.readouterr().err == "note-taker failed on r1\n"
