"""One registry mechanism for verifiers, writers, templates and arm kinds (issue 34, item 4)."""

from __future__ import annotations

import pytest

from bineval_dspy.checklists.templates import TEMPLATES
from bineval_dspy.checklists.writers import WRITERS
from bineval_dspy.core.errors import InputError
from bineval_dspy.core.registry import Registry
from bineval_dspy.experiment.arms import ARMS
from bineval_dspy.verifiers.registry import VERIFIERS


def test_a_name_is_given_once_and_an_unknown_one_lists_the_known():
    colours: Registry[int] = Registry("colour")
    colours.add("red", 1)
    colours.add("red", 1)  # the same entry again: a module imported twice
    with pytest.raises(InputError, match="colour 'red': already registered with another entry"):
        colours.add("red", 2)
    assert colours.add("red", 2, replace=True) == 2 and colours["red"] == 2
    with pytest.raises(InputError, match=r"unknown colour 'blue' \(choose from red\)"):
        colours["blue"]
    assert colours.get("blue") is None and "blue" not in colours


def test_the_library_registries_are_registries():
    for registry, name in ((VERIFIERS, "change_case:english_lowercase"), (WRITERS, "qworld"), (TEMPLATES, "checkeval"), (ARMS, "gepa")):
        assert isinstance(registry, Registry) and name in registry
    with pytest.raises(InputError, match="unknown arm kind 'nope'"):
        ARMS["nope"]
