"""Per benchmark (one module each), the kwargs a suite row could give each enforceable id (``MAKERS``) and the
token pieces its rules need in the property tests' small vocabulary to be satisfiable (``EXTRA_PIECES``)."""

from __future__ import annotations

import importlib
import pkgutil
import random
from collections.abc import Callable
from typing import Any

MAKERS: dict[str, Callable[[random.Random], dict[str, Any]]] = {}
EXTRA_PIECES: list[str] = []
for _module in pkgutil.iter_modules(__path__):
    _loaded = importlib.import_module(f"{__name__}.{_module.name}")
    MAKERS.update(_loaded.MAKERS)
    EXTRA_PIECES += _loaded.EXTRA_PIECES
