"""The exact sign test: of the paired items that changed, did more go one way than a fair coin would send?

It needs no assumption about how large the changes are, so it reads a regression gate's per-item differences beside
the bootstrap interval of their mean: an interval can lean on a few large changes, the sign test counts items.
"""

from __future__ import annotations

from math import comb


def sign_test(up: int, down: int) -> float | None:
    """The two-sided exact binomial p-value of ``up`` items improving and ``down`` worsening (ties left out); None
    when no item changed (there is nothing to test)."""
    if up < 0 or down < 0:
        raise ValueError("sign_test counts items: up and down must not be negative")
    changed = up + down
    if changed == 0:
        return None
    tail = sum(comb(changed, k) for k in range(min(up, down) + 1))
    return min(1.0, 2 * tail / 2**changed)  # exact in integers until the one division
