"""The pytest plugin (entry point ``pytest11``): ``--bineval-lm``, ``--bineval-cache-dir``, ``--bineval-verifiers``
(or the ini setting ``bineval_verifiers``) and the ``bineval`` fixture, whose ``assert_passes`` judges an output in a test with the LM the command line names
and whose ``assert_no_regression`` gates a test on two runs as ``bineval compare --fail-on-regression`` does; a run that judged with
it ends with one summary line (outputs judged, passed, mean score, LM calls and cost).

It imports no DSPy until a test asks for the fixture, so installing bineval_dspy costs other test suites nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bineval_dspy.core.errors import BinevalError

if TYPE_CHECKING:
    import dspy

    from bineval_dspy.core.degenerate import Tally
    from bineval_dspy.core.schema import Scorecard
    from bineval_dspy.lm.usage import Cost
    from bineval_dspy.report.compare import RunComparison

_SESSION = pytest.StashKey["BinevalSession"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bineval", "bineval_dspy: judge outputs with binary questions")
    group.addoption("--bineval-lm", default=None, metavar="LM",
                    help="the LM of the bineval fixture: smollm2 (embedded default), gemma3-270m, a .gguf path or a LiteLLM string")
    group.addoption("--bineval-cache-dir", default=None, metavar="DIR",
                    help="on-disk LM call cache of the bineval fixture (default $BINEVAL_CACHE_DIR or ~/.cache/bineval_dspy)")
    group.addoption("--bineval-judge", default=None, metavar="PROGRAM",
                    help="a judge program (a run folder or program.json, e.g. bineval calibrate's probe judge) the fixture judges with")
    group.addoption("--bineval-verifiers", action="append", default=[], metavar="FILE.py",
                    help="a Python file of your own verifiers (@bineval_dspy.verifier) for the bineval fixture; again for more")
    parser.addini("bineval_verifiers", type="linelist", default=[],
                  help="Python files of your own verifiers for the bineval fixture, from the ini file's folder")


class BinevalSession:
    """The session's LM (made on first use) and what its judging added up to, for the summary line."""

    def __init__(self, spec: str | None, cache_dir: Path | None) -> None:
        self.spec, self.cache_dir = spec, cache_dir
        self._lm: dspy.LM | None = None
        self.judged = self.passed = 0
        self.judge: Path | None = None  # a judge program every assertion answers with (None: the default judge)
        self.scores: list[float] = []
        self.cost: Cost | None = None
        self.tally: Tally | None = None  # the LM verdicts, for the degenerate-judge rule

    @property
    def lm(self) -> dspy.LM:
        """The LM ``--bineval-lm`` names, made once per session, with the on-disk cache installed."""
        if self._lm is None:
            from bineval_dspy.core.cache_dir import default_cache_dir
            from bineval_dspy.lm import cache
            from bineval_dspy.lm.specs import DEFAULT_LM, make_lm

            cache.install(self.cache_dir or default_cache_dir())
            self._lm = make_lm(self.spec or DEFAULT_LM, source="--bineval-lm")
        return self._lm

    def record(self, card: Scorecard, passed: bool, cost: Cost) -> None:
        """Count one judged output."""
        from bineval_dspy.core.degenerate import Tally

        self.tally = self.tally or Tally()
        for verdict in card.verdicts:
            self.tally.add(verdict)
        self.judged += 1
        self.passed += passed
        self.scores += [card.overall] if card.overall is not None else []
        self.cost = cost if self.cost is None else self.cost + cost

    def summary(self) -> list[str]:
        """The summary line, and one more when the LM verdicts are degenerate (``core.degenerate``)."""
        from bineval_dspy.core.degenerate import degeneracy

        mean = f", mean score {sum(self.scores) / len(self.scores):.2f}" if self.scores else ""
        cost = f"; {self.cost.summary()}" if self.cost is not None else ""
        lines = [f"bineval: {self.judged} output(s) judged, {self.passed} passed{mean}{cost}"]
        degenerate = degeneracy(self.tally) if self.tally is not None else None
        return lines + ([f"bineval: {degenerate.message(lm='--bineval-lm')}"] if degenerate is not None else [])


class Bineval:
    """What the ``bineval`` fixture gives a test: ``assert_passes`` with the session's LM, a relative checklist path
    read from the test file's folder."""

    def __init__(self, session: BinevalSession, folder: Path) -> None:
        self.session, self.folder = session, folder

    @property
    def lm(self) -> dspy.LM:
        return self.session.lm

    def assert_passes(self, output: str, *, lm: dspy.LM | None = None, **what: Any) -> Scorecard:
        """``bineval_dspy.testing.assertions.assert_passes`` (``min_score=`` included) with this session's LM
        unless ``lm`` is given; a suite row's code checks need none, so none is made for them."""
        __tracebackhide__ = True
        from bineval_dspy.lm.usage import measuring
        from bineval_dspy.testing.assertions import BinevalAssertionError, assert_passes

        checklist = what.get("checklist")
        if isinstance(checklist, str | Path) and not Path(checklist).is_absolute():
            what["checklist"] = self.folder / checklist
        if lm is None and what.get("row") is None:
            lm = self.lm
        if self.session.judge is not None:
            what.setdefault("judge", self.session.judge)
        missed: BinevalAssertionError | None = None
        with measuring() as measurement:
            try:
                card = assert_passes(output, lm=lm, **what)
            except BinevalAssertionError as failed:
                card, missed = failed.scorecard, failed
        self.session.record(card, missed is None, measurement.cost)
        if missed is not None:
            raise missed
        return card

    def assert_no_regression(self, base: str | Path, new: str | Path, *, most: int = 10, resamples: int = 1000, seed: int = 0) -> RunComparison:
        """Fail the test when NEW is worse than BASE beyond noise, or when items BASE scored have no score in NEW
        (``report.compare``, the comparison ``bineval compare --fail-on-regression`` gates on); relative paths are
        read from the test file's folder. The message holds each regressed column's paired interval and sign test
        and the verdicts that flipped yes>no, so a red test says which rows got worse."""
        __tracebackhide__ = True
        from bineval_dspy.report.compare import compare_paths

        comparison = compare_paths(self._path(base), self._path(new), resamples=resamples, seed=seed)
        problem = regression_message(comparison, most)
        if problem is not None:
            raise RegressionError(problem, comparison)
        return comparison

    def _path(self, path: str | Path) -> Path:
        return Path(path) if Path(path).is_absolute() else self.folder / path


class RegressionError(BinevalError, AssertionError):
    """NEW regressed from BASE (or could not be held against it); ``comparison`` holds every paired item."""

    def __init__(self, message: str, comparison: RunComparison) -> None:
        super().__init__(message)
        self.comparison = comparison


def regression_message(comparison: RunComparison, most: int = 10) -> str | None:
    """Why the gate fails (None: it passes): regressed columns with their interval, sign test and lost verdicts;
    else items BASE scored that NEW did not, or nothing scored in both (the gate does not pass what it did not compare)."""
    if comparison.regressed:
        lines = [f"NEW {comparison.new} is worse than BASE {comparison.base} beyond noise (NEW - BASE, 95% paired bootstrap):"]
        for column in comparison.regressed:
            p = "n/a" if column.sign_p is None else f"{column.sign_p:.3f}"
            lines.append(f"  {column.name}: {column.difference.text(signed=True)} over {len(column.scored)} item(s); "
                         f"improved {column.improved}, worsened {column.worsened}, sign test p {p}")
            lost = column.lost()
            lines += [f"    flipped yes>no: {flip.key}: {flip.question}" for flip in lost[:most]]
            lines += [f"    and {len(lost) - most} more flip(s)"] if len(lost) > most else []
        return "\n".join(lines)
    unscored = [item.key for column in comparison.columns for item in column.unscored_new]
    if unscored:
        more = f" and {len(unscored) - most} more" if len(unscored) > most else ""
        return f"no verdict on regression: {len(unscored)} item(s) scored in BASE have no score in NEW: {', '.join(unscored[:most])}{more}"
    if not comparison.scored:
        return f"no verdict on regression: no shared item of {comparison.base} and {comparison.new} has a score in both runs"
    return None


@pytest.fixture
def bineval(request: pytest.FixtureRequest) -> Bineval:
    """Judge outputs in tests: ``bineval.assert_passes(output, checklist="checklist.json", input=...)`` (a path from
    the test file's folder; ``min_score=0.8`` passes at that score) or ``bineval.assert_passes(output, row=suite_row)``;
    a failure lists the missed questions and why. ``bineval.assert_no_regression("base.jsonl", "new.jsonl")`` fails the
    test when the NEW run is worse than BASE beyond noise."""
    config = request.config
    if _SESSION not in config.stash:
        from bineval_dspy.verifiers.user import load_verifier_files

        base = config.inipath.parent if config.inipath else config.rootpath
        load_verifier_files([*config.getoption("--bineval-verifiers"), *(base / p for p in config.getini("bineval_verifiers"))])
        cache_dir = config.getoption("--bineval-cache-dir")
        config.stash[_SESSION] = BinevalSession(config.getoption("--bineval-lm"), Path(cache_dir) if cache_dir else None)
        judge = config.getoption("--bineval-judge")
        config.stash[_SESSION].judge = Path(judge) if judge else None
    return Bineval(config.stash[_SESSION], request.path.parent)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """One line after a run that judged outputs with the fixture."""
    session = config.stash.get(_SESSION, None)
    if session is not None and session.judged:
        for line in session.summary():
            terminalreporter.write_line(line)
