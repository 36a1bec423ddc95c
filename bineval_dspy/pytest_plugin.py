"""The pytest plugin (entry point ``pytest11``): ``--bineval-lm``, ``--bineval-cache-dir`` and the ``bineval``
fixture, whose ``assert_passes`` judges an output in a test with the LM the command line names.

It imports no DSPy until a test asks for the fixture, so installing bineval_dspy costs other test suites nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import dspy

    from bineval_dspy.core.schema import Scorecard


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bineval", "bineval_dspy: judge outputs with binary questions")
    group.addoption("--bineval-lm", default=None, metavar="LM",
                    help="the LM of the bineval fixture: smollm2 (embedded default), gemma3-270m, a .gguf path or a LiteLLM string")
    group.addoption("--bineval-cache-dir", default=None, metavar="DIR",
                    help="on-disk LM call cache of the bineval fixture (default $BINEVAL_CACHE_DIR or ~/.cache/bineval_dspy)")


class Bineval:
    """What the ``bineval`` fixture gives a test: ``assert_passes`` with the session's LM (made on first use)."""

    def __init__(self, spec: str | None, cache_dir: Path | None) -> None:
        self.spec, self.cache_dir = spec, cache_dir
        self._lm: dspy.LM | None = None

    @property
    def lm(self) -> dspy.LM:
        """The LM ``--bineval-lm`` names, made once per session, with the on-disk cache installed."""
        if self._lm is None:
            from bineval_dspy.lm import cache, runtime
            from bineval_dspy.lm.specs import DEFAULT_LM, make_lm

            cache.install(self.cache_dir or runtime.default_cache_dir())
            self._lm = make_lm(self.spec or DEFAULT_LM, source="--bineval-lm")
        return self._lm

    def assert_passes(self, output: str, *, lm: dspy.LM | None = None, **what: Any) -> Scorecard:
        """``bineval_dspy.testing.assertions.assert_passes`` with this session's LM unless ``lm`` is given; a
        suite row's code checks need none, so none is made for them."""
        from bineval_dspy.testing.assertions import assert_passes

        if lm is None and what.get("row") is None:
            lm = self.lm
        return assert_passes(output, lm=lm, **what)


@pytest.fixture(scope="session")
def bineval(pytestconfig: pytest.Config) -> Bineval:
    """Judge outputs in tests: ``bineval.assert_passes(output, checklist="checklist.json", input=...)`` or
    ``bineval.assert_passes(output, row=suite_row)``; a failure lists the missed questions and why."""
    cache_dir = pytestconfig.getoption("--bineval-cache-dir")
    return Bineval(pytestconfig.getoption("--bineval-lm"), Path(cache_dir) if cache_dir else None)
