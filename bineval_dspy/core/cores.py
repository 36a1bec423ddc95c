"""How many cores this process may run on."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (``taskset``, a container's or a test worker's pinning)
    where the platform has one, else every core; never fewer than one."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1
