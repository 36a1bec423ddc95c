"""``python -m tests.tune.fake_worker tune CONFIG [--workers N]``: the bineval CLI with the test kind "fake".

The kind is registered when this module is imported, so workers spawned by ``--workers`` (which import the
main module again) have it too.
"""

from __future__ import annotations

import sys

from bineval_dspy.cli.main import main
from bineval_dspy.tune import register_kind
from tests.tune.fakes import fake_runner

register_kind("fake", fake_runner)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
