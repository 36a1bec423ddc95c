"""Agreement and Cohen's kappa against values computed by hand."""

from __future__ import annotations

import pytest

from bineval_dspy.meta.agreement import agreement, cohen_kappa


def test_kappa_by_hand():
    target = ["yes", "yes", "no", "no", "yes", "no"]
    reference = ["yes", "no", "no", "no", "yes", "yes"]
    # p_o = 4/6; p_e = (3/6 * 3/6) + (3/6 * 3/6) = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3
    assert cohen_kappa(target, reference) == pytest.approx(1 / 3)
    assert agreement(target, reference) == pytest.approx(4 / 6)


def test_kappa_edge_cases():
    assert cohen_kappa(["yes"] * 4, ["yes"] * 4) is None  # chance agreement 1: undefined
    assert cohen_kappa(["yes"] * 4, ["yes", "no", "yes", "no"]) == pytest.approx(0.0)
    assert cohen_kappa(["yes", "no"], ["no", "yes"]) == pytest.approx(-1.0)
    assert cohen_kappa([], []) is None and agreement([], []) is None
    assert agreement(["unanswered", "yes"], ["yes", "yes"]) == 0.5
    with pytest.raises(ValueError, match="yes/no"):
        cohen_kappa(["unanswered"], ["yes"])
    with pytest.raises(ValueError, match="target answers"):
        agreement(["yes"], [])
