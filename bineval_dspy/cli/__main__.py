"""``python -m bineval_dspy.cli``: the same as the ``bineval`` command."""

import sys

from bineval_dspy.cli.main import main

sys.exit(main())
