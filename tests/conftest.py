"""Shared fixtures: scripted LMs for our own logic, and DSPy settings isolated per test."""

from __future__ import annotations

import copy
import gc
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

# DSPy builds its default disk cache on first read of `dspy.cache` (the fixture below reads it): in a temporary
# folder, never in $HOME/.dspy_cache
os.environ.setdefault("DSPY_CACHEDIR", tempfile.mkdtemp(prefix="bineval-tests-dspy-cache-"))
# matplotlib's font cache (the tests read PNGs with it before the library draws any): not in $HOME either
os.environ.setdefault("MPLCONFIGDIR", tempfile.mkdtemp(prefix="bineval-tests-matplotlib-"))

import dspy
import numpy as np
import optuna  # noqa: F401  (its log handler keeps the sys.stderr of its first import: not one a test captures and closes)
import pytest
from dspy.lm15 import Usage

from bineval_dspy.core.console import show_logs
from bineval_dspy.core.embeddings import Embedder, use_embedder
from bineval_dspy.testing import Script, ScriptedEngine, prompt_fields, question_of, scripted_lm, verdict_json

__all__ = ["SHARED_DATA", "ScriptedEngine", "bag_of_words", "prompt_fields", "question_of", "route_cli_lm", "scripted_lm", "verdict_json"]  # tests import them from here

pytest_plugins = ["pytester"]  # tests/testing/test_pytest_plugin.py runs a project's suite that uses our plugin

# The project's shared data lies beside the checkout (CI lays it there too); BINEVAL_SHARED_DATA overrides.
SHARED_DATA = Path(os.environ.get("BINEVAL_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (``-n N``), each worker runs on its own share of the cores: two workers on two cores each
    get one, so the embedded model's threads (it uses every core it may run on) never fight another worker's. The
    library's log is shown on the console as a command shows it (``bineval`` installs the same handler), so a test
    that calls the library reads its notes on stderr (tests/core/test_logging.py checks the routing itself)."""
    show_logs()
    worker, count = os.environ.get("PYTEST_XDIST_WORKER", ""), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if worker.startswith("gw") and hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        if count <= len(cores):
            os.sched_setaffinity(0, cores[int(worker[2:]) % count :: count])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests on the session's Ray cluster run in one xdist worker (``--dist loadgroup``): one cluster, not one
    per worker. The long ones (the embedded model's, a server's, the Ray group) go first, so that two workers end
    together instead of one finishing a long test while the other idles."""

    def long(item: pytest.Item) -> bool:
        return any(item.get_closest_marker(name) for name in ("embedded", "server")) or "ray_cluster" in getattr(item, "fixturenames", ())

    for item in items:
        if "ray_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("ray"))
    items.sort(key=lambda item: not long(item))  # stable: each part keeps its order


def route_cli_lm(monkeypatch: pytest.MonkeyPatch, script: Script, *, model: str = "custom/scripted", usage: Usage | None = None) -> dspy.LM:
    """Make the CLI's LM set-up (``runtime.configure``) install a scripted LM (named ``model``); returns that LM."""
    from bineval_dspy.lm import runtime

    lm = scripted_lm(script, model=model, usage=usage)

    def configure(options=None, cache_dir=None) -> dspy.LM:
        dspy.configure(lm=lm)
        return lm

    monkeypatch.setattr(runtime, "configure", configure)
    return lm


def bag_of_words(texts: list[str]) -> np.ndarray:
    """A fake embedder: word counts over the batch's vocabulary, unit rows (texts sharing no word: cosine 0)."""
    vocab = sorted({w for t in texts for w in t.lower().split()} | {"_"})
    vectors = np.array([[t.lower().split().count(w) for w in vocab] for t in texts], dtype=float)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def words_embedder() -> Iterator[Embedder]:
    """Every component built in the test without its own embedder embeds with ``bag_of_words``, not MiniLM."""
    with use_embedder(bag_of_words) as embed:
        yield embed


@pytest.fixture
def own_verifiers() -> Iterator[None]:
    """The verifiers a test registers (files of its own, ``@verifier``, with their word predicates and rule kinds)
    are gone after it: other tests see only the built-in ones, and fingerprints without the test's files."""
    from bineval_dspy.enforce.kinds import words
    from bineval_dspy.enforce.rules import RULE_KINDS
    from bineval_dspy.verifiers.registry import USER_FILES, VERIFIERS
    from bineval_dspy.verifiers.user import SOURCES

    saved = [(live, dict(live)) for live in (VERIFIERS, USER_FILES, SOURCES, RULE_KINDS, words.WORD_PREDICATES, words._SOURCES)]
    yield
    for live, kept in saved:
        live.clear()
        live.update(kept)  # type: ignore[attr-defined]


class _EveryQuestionRelated:
    """A stand-in for ``checklists.relevance.Relevance`` that finds every question about the task (and questions
    duplicates only when their texts are equal): for tests of a checklist command's other logic, whose scripted
    writers word their questions with no regard to the task. The screen itself is tested with MiniLM in
    tests/checklists/test_relevance.py."""

    def __init__(self, task: str, embed: Embedder | None = None) -> None:
        self.task = task

    def problem(self, text: str) -> None:
        return None

    def duplicate(self, a: str, b: str) -> bool:
        return a == b


@pytest.fixture
def every_question_related(monkeypatch: pytest.MonkeyPatch) -> None:
    from bineval_dspy.checklists import relevance

    monkeypatch.setattr(relevance, "Relevance", _EveryQuestionRelated)


@pytest.fixture(autouse=True)
def isolated_dspy():
    """Memory-only cache and default settings for every test, restored afterwards."""
    from dspy.dsp.utils.settings import DEFAULT_CONFIG

    original_cache = dspy.cache
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)
    yield
    dspy.configure(**copy.deepcopy(DEFAULT_CONFIG), inherit_config=False)
    dspy.cache = original_cache


@pytest.fixture(autouse=True, scope="module")
def models_let_go() -> Iterator[None]:
    """The embedded engines and the float32 probe model a test module made are let go after it: the process caches
    them for a command's one run, and across a suite's modules they added up (each engine's weights and contexts, the
    probe model's 900 MB)."""
    yield
    specs, hidden = sys.modules.get("bineval_dspy.lm.specs"), sys.modules.get("bineval_dspy.lm.hidden")
    if specs is not None:
        specs._shared_engine.cache_clear()
    if hidden is not None:
        hidden._load.cache_clear()
        hidden._reader.cache_clear()
    gc.collect()  # an engine and its batcher refer to each other


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One local Ray cluster of two worker CPUs for the whole session (a second start in one process can hang
    waiting for its control store); skipped where Ray is not installed. Ray writes its auth token under ~/.ray at
    start, so HOME is a temporary folder then."""
    ray = pytest.importorskip("ray")
    from bineval_dspy.core.cluster import connect

    kept = os.environ.get("HOME")
    os.environ["HOME"] = str(tmp_path_factory.mktemp("ray-home"))
    try:
        connect("local", 2)
    finally:
        if kept is not None:
            os.environ["HOME"] = kept
    yield
    ray.shutdown()
