"""The built-in rule kinds (``enforce.rules``), one module per family: word predicates, budgets over the reply,
sentence and line structure, forced text. Importing this package registers every module in it, so a decoder that
meets a rule by name finds its kind without importing the verifiers that declare it."""

from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
