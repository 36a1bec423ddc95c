"""Shared fixtures: scripted LMs for our own logic, and DSPy settings isolated per test."""

from __future__ import annotations

import copy

import dspy
import pytest

from bineval_dspy.testing import ScriptedEngine, question_of, scripted_lm, verdict_json

__all__ = ["ScriptedEngine", "question_of", "scripted_lm", "verdict_json"]  # tests import them from here


@pytest.fixture(autouse=True)
def isolated_dspy():
    """Memory-only cache and default settings for every test, restored afterwards."""
    from dspy.dsp.utils.settings import DEFAULT_CONFIG

    original_cache = dspy.cache
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)
    yield
    dspy.configure(**copy.deepcopy(DEFAULT_CONFIG), inherit_config=False)
    dspy.cache = original_cache
