"""The digest of code: what a cache key or a run's fingerprint records so that output made by other code (a fixed
bug, a changed rule, a new decoder) is never replayed as this code's.

One helper for every such digest (issue 58): the steering spec and its decoder (``enforce.steering.code_digest``),
the grammar compiler a server's steered request names (``enforce.grammar.code_digest``, an engine's
``steering_code``), and the verifiers (``verifiers.registry.code_digest``) each say *which* code, never *how* it is
read.
"""

from __future__ import annotations

import hashlib
import inspect
from pathlib import Path
from types import ModuleType


def source_files(*targets: Path | ModuleType | type | object) -> list[Path]:
    """The source files of ``targets``, sorted, each once: a file given by its path (a user's own module); a
    package's modules, its subpackages' included; a module's file; a class's or function's module's file."""
    found: set[Path] = set()
    for target in targets:
        if isinstance(target, Path):
            found.add(target)
        elif isinstance(target, ModuleType) and hasattr(target, "__path__"):  # a package: every module under it
            found |= {path for folder in target.__path__ for path in Path(folder).rglob("*.py")}
        else:
            found.add(Path(inspect.getsourcefile(target) or inspect.getfile(target)))  # type: ignore[arg-type]
    return sorted(found)


def _named(path: Path) -> str:
    """A source file's name from its top-level package down (``bineval_dspy/enforce/kinds/words.py``): the same
    wherever the library is installed."""
    top = path.parent
    while (top.parent / "__init__.py").is_file():
        top = top.parent
    return path.relative_to(top.parent if (top / "__init__.py").is_file() else path.parent).as_posix()


def source_digest(*targets: Path | ModuleType | type | object) -> str:
    """The first 16 hex digits of a sha256 over the source of ``targets`` (``source_files``): each file's name and
    bytes, so that a renamed or moved module changes the digest as an edited one does."""
    sources = hashlib.sha256()
    for path in source_files(*targets):
        sources.update(_named(path).encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return sources.hexdigest()[:16]
